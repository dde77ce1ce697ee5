"""Domains: the set of element ids a chunk may hold, and the map between ids and positions.

A wire format lays a chunk out over its domain's *positions* 0..size-1 (a bitmap bit, a dense
slot, a block), so both ends must agree on the domain; it is never sent.

- `RangeDomain(lo, hi)`: the ids lo..hi-1 (a contiguous partition or the whole tensor).
- `ExplicitDomain(elements)`: a sorted set of ids, e.g. a ZEN hash partition 𝕀_i; position p is
  `elements[p]`. `elements` may be int32 (to halve memory) or int64.

Both give `size`, `bound` (exclusive upper bound of the ids, which sets the index width on the
wire: int32 when `bound < 2**31`, else int64), `positions(ids)` and `ids(positions)`.

An explicit domain's `positions` is a gather through a `PositionTable` (id -> position, one entry
per id below `bound`) checked against `elements`, not a search: the n domains of a partition share
one table (`domains_from_owner`), a lone domain builds its own only when `bound` is at most
`TABLE_SPAN` times its size, else it searches (docs/sparse.md, Domains).
"""

from __future__ import annotations

import numpy as np

from zensim.sparse import xp as backend

INT32_LIMIT = 2**31
TABLE_SPAN = 4  # a lone explicit domain gets a position table when bound <= TABLE_SPAN * size


def index_dtype(bound: int) -> np.dtype:
    """Wire dtype of ids below `bound` (little-endian): int32 when bound < 2**31, else int64."""
    return np.dtype("<i4") if bound < INT32_LIMIT else np.dtype("<i8")


class RangeDomain:
    """The contiguous ids [lo, hi)."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo: int, hi: int) -> None:
        if not 0 <= lo <= hi:
            raise ValueError(f"bad range domain [{lo}, {hi})")
        self.lo, self.hi = int(lo), int(hi)

    @property
    def size(self) -> int:
        """Number of ids in the domain."""
        return self.hi - self.lo

    @property
    def bound(self) -> int:
        """Exclusive upper bound of the ids."""
        return self.hi

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Positions (int64) of `ids`, which must all lie in the domain (ValueError otherwise)."""
        ids = _int64(ids)
        xp = backend.namespace(ids)
        if ids.shape[0] and (int(xp.min(ids)) < self.lo or int(xp.max(ids)) >= self.hi):
            raise ValueError(f"ids outside [{self.lo}, {self.hi})")
        return ids - self.lo

    def ids(self, positions: np.ndarray) -> np.ndarray:
        """Ids (int64) at `positions`."""
        return _int64(positions) + self.lo

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RangeDomain) and (self.lo, self.hi) == (other.lo, other.hi)

    def __hash__(self) -> int:
        return hash((self.lo, self.hi))

    def __repr__(self) -> str:
        return f"RangeDomain({self.lo}, {self.hi})"


class PositionTable:
    """id -> position of the id in its domain, for disjoint sorted sets of ids below `bound` (the n
    domains of a partition, or one domain): an int32 array of `bound` entries (int64 from 2**31), 0
    for ids in none of them. Built on first use, on the host, and copied once to each device asked."""

    __slots__ = ("_parts", "bound", "_table")

    def __init__(self, parts: list[np.ndarray], bound: int) -> None:
        self._parts, self.bound = parts, int(bound)
        self._table: backend.OnDevices | None = None  # made on the first lookup

    def like(self, ref: np.ndarray) -> np.ndarray:
        """The table in the library and on the device of `ref`."""
        if self._table is None:
            table = np.zeros(self.bound, np.int32 if self.bound < INT32_LIMIT else np.int64)
            for part in self._parts:
                table[part] = np.arange(len(part), dtype=table.dtype)
            self._table = backend.OnDevices(table)
        return self._table.like(ref)


class ExplicitDomain:
    """A sorted set of ids given explicitly (a hash partition 𝕀_i); `bound` defaults to max + 1.
    `table`: a PositionTable over these elements and disjoint others below `bound` (the partition's
    domains share one); without it the domain makes its own when `bound <= TABLE_SPAN * size`."""

    __slots__ = ("elements", "_bound", "_on_devices", "table")

    def __init__(self, elements: np.ndarray, bound: int | None = None, table: PositionTable | None = None) -> None:
        elements = np.asarray(elements)
        if elements.dtype not in (np.int32, np.int64) or elements.ndim != 1:
            raise ValueError("ExplicitDomain elements must be a 1-d int32 or int64 array")
        if len(elements) and (elements[0] < 0 or np.any(elements[1:] <= elements[:-1])):
            raise ValueError("ExplicitDomain elements must be sorted, unique and non-negative")
        top = int(elements[-1]) + 1 if len(elements) else 0
        if bound is not None and bound < top:
            raise ValueError(f"ExplicitDomain bound {bound} below its largest element")
        self.elements = elements
        self._bound = top if bound is None else int(bound)
        self._on_devices = backend.OnDevices(elements)
        if table is None and 0 < self._bound <= TABLE_SPAN * len(elements):
            table = PositionTable([elements], self._bound)
        if table is not None and table.bound != self._bound:
            raise ValueError(f"ExplicitDomain bound {self._bound} differs from its position table's {table.bound}")
        self.table = table  # what positions() gathers through (None: it searches elements)

    def elements_like(self, ref: np.ndarray) -> np.ndarray:
        """`elements` in the library and on the device of `ref` (kept once made)."""
        return self._on_devices.like(ref)

    @property
    def size(self) -> int:
        """Number of ids in the domain."""
        return int(len(self.elements))

    @property
    def bound(self) -> int:
        """Exclusive upper bound of the ids (the tensor's numel for a hash partition)."""
        return self._bound

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Positions (int64) of `ids` in `elements`; ValueError if any id is not in the domain."""
        ids = ids if hasattr(ids, "shape") else np.asarray(ids)
        xp = backend.namespace(ids)
        if ids.shape[0] == 0:
            return xp.zeros(0, dtype=xp.int64, device=backend.device(ids))
        if self.size == 0 or int(xp.min(ids)) < 0 or int(xp.max(ids)) > int(self.elements[-1]):
            raise ValueError("ids outside the explicit domain")
        if self.table is None:
            pos, found = backend.locate(self.elements_like(ids), ids)
        else:
            pos, found = backend.lookup(self.table.like(ids), self.elements_like(ids), ids)
        if not bool(xp.all(found)):
            raise ValueError("ids outside the explicit domain")
        return xp.astype(pos, xp.int64, copy=False)

    def ids(self, positions: np.ndarray) -> np.ndarray:
        """Ids (int64) at `positions`."""
        positions = _int64(positions)
        xp = backend.namespace(positions)
        return xp.astype(self.elements_like(positions)[positions], xp.int64)

    def __repr__(self) -> str:
        return f"ExplicitDomain(<{self.size} ids>, bound={self._bound})"


Domain = RangeDomain | ExplicitDomain


def _int64(x: object) -> np.ndarray:
    """`x` (an array of any library, or a sequence) as an int64 array of its library."""
    if not hasattr(x, "shape"):
        return np.asarray(x, dtype=np.int64)
    xp = backend.namespace(x)
    return xp.astype(x, xp.int64, copy=False)
