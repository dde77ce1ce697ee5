"""Partitioners: split a chunk into n parts, name each part's domain, keep statistics.

One interface for every partitioner (all ranks build it with the same arguments and seeds, so
they agree on every boundary and hash):

    p.n, p.numel
    p.prepare(iteration, chunks)  # before an iteration; only data-dependent thresholds use it
    p.split(chunk) -> list[SparseChunk]      # n parts, each sorted, part j inside p.domain(j)
    p.owner(indices) -> np.ndarray           # part id (int64) of each index
    p.domain(j) -> Domain, p.domains()
    p.stats -> PartitionStats                # cumulative over every split since construction

This module has the shared pieces and the range partitioners (contiguous, data-dependent
thresholds); the hash partitioners are in zensim.sparse.hashpart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zensim.errors import ConfigError
from zensim.sparse import xp as backend
from zensim.sparse.chunk import SparseChunk, union_indices
from zensim.sparse.domain import Domain, ExplicitDomain, PositionTable, RangeDomain


@dataclass
class PartitionStats:
    """What splitting did, summed over splits: elements in, hash collisions, serial writes, losses.

    `collided`: elements whose first parallel slot was taken (needed a rehash); `serial`: elements
    that failed all k rehashes and went to serial memory; `overflow`: those of them beyond the
    serial memory's r2 slots (kept in the overflow spill, never lost); `lost`: elements a lossy
    partitioner dropped.
    """

    elements: int = 0
    collided: int = 0
    serial: int = 0
    overflow: int = 0
    lost: int = 0

    def add(self, other: "PartitionStats") -> None:
        """Accumulate `other` into this record."""
        for name in ("elements", "collided", "serial", "overflow", "lost"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def rate(self, what: str) -> float:
        """Fraction of elements counted in field `what` (0 when nothing was split)."""
        return getattr(self, what) / self.elements if self.elements else 0.0

    def as_dict(self) -> dict[str, float]:
        """Counts and rates, for reports."""
        out: dict[str, float] = {k: getattr(self, k) for k in ("elements", "collided", "serial", "overflow", "lost")}
        out.update({f"{k}_rate": self.rate(k) for k in ("collided", "serial", "overflow", "lost")})
        return out


def check_partitions(numel: int, n: int) -> None:
    """ConfigError unless numel >= 0 and n >= 1."""
    if n < 1:
        raise ConfigError(f"partitions n = {n}: must be >= 1")
    if numel < 0:
        raise ConfigError(f"numel = {numel}: must be >= 0")


def group_by_part(chunk: SparseChunk, parts: np.ndarray, n: int) -> list[SparseChunk]:
    """Split `chunk` by part id (stable, so each part stays sorted; on the host a radix sort on ids < 2**16)."""
    order = backend.argsort(parts, below=n)
    counts = backend.host(backend.bincount(parts, n)).tolist()
    ids = backend.split(chunk.indices[order], counts)
    vals = backend.split(chunk.values[order], counts) if chunk.values is not None else [None] * n
    return [SparseChunk(i, v) for i, v in zip(ids, vals)]


def domains_from_owner(numel: int, n: int, owner, block: int = 1 << 22) -> list[ExplicitDomain]:
    """All n domains {id in [0, numel) : owner(id) = j}, sorted, int32 ids when numel < 2**31,
    sharing one PositionTable (numel entries, made on the first lookup).

    Computed once per call in blocks of `block` ids (bounded temporary memory); callers cache.
    """
    dtype = np.int32 if numel < 2**31 else np.int64
    pieces: list[list[np.ndarray]] = [[] for _ in range(n)]
    for lo in range(0, numel, block):
        ids = np.arange(lo, min(lo + block, numel), dtype=np.int64)
        for j, part in enumerate(group_by_part(SparseChunk(ids), owner(ids), n)):
            pieces[j].append(part.indices.astype(dtype))
    parts = [np.concatenate(p) if p else np.empty(0, dtype) for p in pieces]
    table = PositionTable(parts, numel)
    return [ExplicitDomain(p, bound=numel, table=table) for p in parts]


class Partitioner:
    """Base of all partitioners (see the module docstring for the interface). `hashes`: splitting
    hashes every element (counted as hash work); `lossy`: a split may drop elements."""

    hashes = False
    lossy = False

    @classmethod
    def for_scheme(cls, numel: int, n: int, seed: int = 0) -> "Partitioner":
        """The partitioner as a scheme's Parallelism uses it (`seed` shared by all ranks, for those
        that hash)."""
        return cls(numel, n)

    def __init__(self, numel: int, n: int) -> None:
        check_partitions(numel, n)
        self.numel, self.n = int(numel), int(n)
        self.stats = PartitionStats()

    def prepare(self, iteration: int, chunks: list[SparseChunk]) -> None:
        """Called before each iteration with every worker's chunk; data-independent ones ignore it."""

    def owner(self, indices: np.ndarray) -> np.ndarray:
        """Part id (int64) of each index."""
        raise NotImplementedError

    def split(self, chunk: SparseChunk) -> list[SparseChunk]:
        """The n parts of `chunk`, part j holding the indices owned by j (sorted)."""
        raise NotImplementedError

    def domain(self, part: int) -> Domain:
        """The ids part `part` may hold."""
        raise NotImplementedError

    def domains(self) -> list[Domain]:
        """All n domains."""
        return [self.domain(j) for j in range(self.n)]

    @property
    def key(self) -> tuple | None:
        """What the domains depend on, for sharing them between programs (None: data-dependent,
        never shared)."""
        return None


class RangePartitioner(Partitioner):
    """Parts are contiguous ranges [b_j, b_{j+1}) given by boundaries b_0 = 0 <= ... <= b_n = numel."""

    def __init__(self, numel: int, n: int) -> None:
        super().__init__(numel, n)
        self.boundaries = even_boundaries(self.numel, self.n)

    @property
    def boundaries(self) -> np.ndarray:
        """The n + 1 boundaries (int64, on the host)."""
        return self._cuts.host

    @boundaries.setter
    def boundaries(self, value: np.ndarray) -> None:
        self._cuts = backend.OnDevices(value)  # copied to a device once, on the first chunk there

    def owner(self, indices: np.ndarray) -> np.ndarray:
        xp = backend.namespace(indices)
        return xp.astype(xp.searchsorted(self._cuts.like(indices), indices, side="right"), xp.int64) - 1

    def split(self, chunk: SparseChunk) -> list[SparseChunk]:
        xp = backend.namespace(chunk.indices)
        cuts = backend.host(xp.searchsorted(chunk.indices, self._cuts.like(chunk.indices))).tolist()
        self.stats.add(PartitionStats(elements=chunk.nnz))
        return [
            SparseChunk(chunk.indices[a:b], None if chunk.values is None else chunk.values[a:b])
            for a, b in zip(cuts[:-1], cuts[1:])
        ]

    def domain(self, part: int) -> RangeDomain:
        return RangeDomain(int(self.boundaries[part]), int(self.boundaries[part + 1]))


def even_boundaries(numel: int, n: int, align: int = 1) -> np.ndarray:
    """n+1 boundaries splitting [0, numel) evenly: the first numel % n parts get one more id; with
    `align` > 1 in whole blocks of `align` ids (the blocks split evenly, the last one may be short),
    so that no block straddles two parts."""
    if align > 1:
        return np.minimum(even_boundaries(-(-numel // align), n) * align, numel)
    q, r = divmod(numel, n)
    j = np.arange(n + 1, dtype=np.int64)
    return j * q + np.minimum(j, r)


class Contiguous(RangePartitioner):
    """Even split of [0, numel) into n ranges (Sparse PS, OmniReduce aggregators); with `align` > 1 in
    whole blocks of that many ids (OmniReduce's aggregators own whole blocks of 256)."""

    def __init__(self, numel: int, n: int, align: int = 1) -> None:
        super().__init__(numel, n)
        if align < 1:
            raise ConfigError(f"partition alignment {align}: must be >= 1")
        self.align = int(align)
        self.boundaries = even_boundaries(self.numel, self.n, self.align)

    @property
    def key(self) -> tuple:
        """What the domains depend on."""
        return ("contiguous", self.numel, self.n, self.align)


class Thresholds(RangePartitioner):
    """ZEN's data-dependent strawman: boundaries recomputed every `period` iterations so that each
    part gets an equal share of the aggregated non-zeros of that iteration, kept in between.

    Before the first `prepare` the split is even. At a recompute iteration the boundaries come from
    the union of all workers' chunks of that iteration (as if profiled), so they are ideal there
    and go stale as the distribution drifts: this is the imbalance swing ZEN reports.
    """

    def __init__(self, numel: int, n: int, period: int = 1000) -> None:
        super().__init__(numel, n)
        if period < 1:
            raise ConfigError(f"threshold period {period}: must be >= 1")
        self.period = int(period)
        self.recomputed_at: int | None = None

    def prepare(self, iteration: int, chunks: list[SparseChunk]) -> None:
        """Recompute the boundaries at the first call and whenever `period` iterations have passed."""
        if self.recomputed_at is not None and iteration - self.recomputed_at < self.period:
            return
        union = union_indices(chunks)
        self.recomputed_at = iteration
        if len(union) == 0:
            self.boundaries = even_boundaries(self.numel, self.n)
            return
        inner = union[(np.arange(1, self.n) * len(union)) // self.n]
        self.boundaries = np.concatenate([[0], inner, [self.numel]]).astype(np.int64)

