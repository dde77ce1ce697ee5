"""The wire format base: the cheap size path, serialization, decoding, and what a receiver sees."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from zensim.errors import ValueRangeError
from zensim.sparse import xp as backend
from zensim.sparse.bits import bit_positions
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import Domain
from zensim.sparse.values import ValueCodec, value_codec


class Counted:
    """Stand-in chunk for `Format.size` when only the element count is known: dense, COO and
    bitmap sizes depend only on it."""

    __slots__ = ("nnz",)
    values = None

    def __init__(self, nnz: int) -> None:
        self.nnz = nnz

    @property
    def indices(self) -> np.ndarray:
        raise AssertionError("this format's size needs the ids; size it from a materialized chunk")


@dataclass(frozen=True)
class Encoded:
    """A chunk in a wire format over a domain; `nbytes` is exactly what `to_bytes()` returns."""

    fmt: "Format"
    nbytes: int
    chunk: SparseChunk
    domain: Domain

    @property
    def nnz(self) -> int:
        """Number of elements the payload carries."""
        return self.chunk.nnz

    def to_buffer(self) -> backend.Array:
        """The exact wire bytes (values written as 1.0 in indices-only mode) as a uint8 array of the
        chunk's library, on its device."""
        buf = self.fmt.serialize(self.chunk, self.domain)
        if buf.shape[0] != self.nbytes:
            raise AssertionError(f"{self.fmt.name}: serialized {buf.shape[0]} bytes, size path said {self.nbytes}")
        return buf

    def to_bytes(self) -> bytes:
        """The exact wire bytes, on the host."""
        return backend.host(self.to_buffer()).tobytes()


class Format:
    """Base of the wire formats: size path, serialization, decoding; value dtype is a parameter.

    `keeps_zeros`: whether an explicit 0.0 value survives the wire (formats that carry ids do;
    dense and blocks show a receiver only the non-zero positions)."""

    name = "?"
    keeps_zeros = True
    takes_block_size = False
    size_from_count = True  # size depends only on the element count (see bitset_size)
    size_from_domain = False  # size is the domain's alone (dense): known before any data is seen

    def __init__(self, value_dtype: str = "float32") -> None:
        self.value: ValueCodec = value_codec(value_dtype)

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        """Exact wire bytes of `chunk` over `domain` (values counted even when `chunk.values` is None)."""
        raise NotImplementedError

    def bitset_size(self, words: np.ndarray, nnz: int, domain: Domain, memo: dict) -> int:
        """Exact wire bytes of the `nnz` positions set in the bitset `words` over `domain`
        (indices-only runs at scale). By default from the count alone, as dense, COO and bitmap
        sizes depend on nothing else; a format whose size depends on which ids are present sets
        `size_from_count = False` (the ids are then materialized) or overrides this (`memo` is a
        dict kept with the bitset, for what it derives from it)."""
        if self.size_from_count:
            return self.size(Counted(nnz), domain)  # type: ignore[arg-type]
        return self.size(SparseChunk(domain.ids(bit_positions(words))), domain)

    def encode(self, chunk: SparseChunk, domain: Domain) -> Encoded:
        """The cheap path: exact size of the chunk as a receiver decodes it (`received`), no
        serialization."""
        chunk = self.received(chunk)[0]
        return Encoded(self, self.size(chunk, domain), chunk, domain)

    def received(self, chunk: SparseChunk) -> tuple[SparseChunk, int]:
        """`chunk` as a receiver decodes it, and how many of its non-zero values the wire dtype
        flushed to zero: values rounded to the wire dtype (a finite value beyond its range is a
        ValueRangeError), explicit zeros dropped where the format has no ids (`keeps_zeros` False:
        a receiver sees only non-zero positions). Indices-only chunks pass unchanged."""
        values = chunk.values
        if values is None:
            return chunk, 0
        values, flushed = self.rounded(values, lambda at: int(chunk.indices[at]))
        if not self.keeps_zeros:
            keep = values != 0
            if not bool(backend.namespace(keep).all(keep)):
                return SparseChunk(chunk.indices[keep], values[keep]), flushed
        return (chunk if values is chunk.values else SparseChunk(chunk.indices, values)), flushed

    def rounded(self, values: np.ndarray, element: Callable[[int], int]) -> tuple[np.ndarray, int]:
        """`values` rounded to the wire dtype (the same array for float32) and how many non-zeros it
        flushed to zero; a finite value beyond the dtype's range is a ValueRangeError naming its element
        (`element(i)` is the id of values[i])."""
        if self.value.name == "float32":
            return values, 0
        with np.errstate(over="ignore"):  # beyond the range: reported below, as a user error
            rounded = self.value.quantize(values)
        xp = backend.namespace(values)
        over = xp.isinf(rounded) & xp.isfinite(values)
        if bool(xp.any(over)):
            at = int(backend.flatnonzero(over)[0])
            raise ValueRangeError(f"value {float(values[at]):.6g} at element {element(at)} is beyond "
                                  f"{self.value.name}'s range (largest {self.value.max:.6g})")
        return rounded, int(xp.count_nonzero((rounded == 0) & (values != 0)))

    def serialize(self, chunk: SparseChunk, domain: Domain) -> backend.Array:
        """The wire bytes of `chunk` over `domain` as a uint8 array of the chunk's library (ValueError
        if an id lies outside it)."""
        raise NotImplementedError

    def from_bytes(self, buf: bytes, domain: Domain, n_values: int | None = None,
                   *, with_values: bool = True, like: backend.Array | None = None) -> Encoded:
        """Decode `buf` over `domain`; `n_values`, if given, is the expected nnz (checked);
        `with_values=False` returns an indices-only chunk. `buf`: bytes-like, or a uint8 array of any
        library (decoded there, on its device); `like`: an array whose library and device the
        decoded chunk takes (default: the buffer's)."""
        buf = backend.as_buffer(buf)
        ids, values = self._decode(buf, domain)
        if n_values is not None and ids.shape[0] != n_values:
            raise ValueError(f"{self.name}: decoded {ids.shape[0]} values, expected {n_values}")
        if like is not None:
            ids, values = backend.like(ids, like), backend.like(values, like)
        return Encoded(self, int(buf.shape[0]), SparseChunk(ids, values if with_values else None), domain)

    def _decode(self, buf: backend.Array, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        """(ids int64 sorted, values float32) from the wire bytes (a uint8 array), in its library."""
        raise NotImplementedError

    def _wire_values(self, chunk: SparseChunk) -> np.ndarray:
        """The values to write: the chunk's, or 1.0 per element in indices-only mode."""
        if chunk.values is not None:
            return chunk.values
        xp = backend.namespace(chunk.indices)
        return xp.ones(chunk.nnz, dtype=xp.float32, device=backend.device(chunk.indices))

    def _check_length(self, buf: backend.Array, expected: int) -> None:
        """ValueError unless the payload has exactly the expected length."""
        if buf.shape[0] != expected:
            raise ValueError(f"{self.name}: payload of {buf.shape[0]} bytes, expected {expected}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(value_dtype={self.value.name!r})"
