"""Dense: every position of the domain carries a value (no ids).

With values, a dense payload can stay dense on both ends (`DenseEncoded`: the values of every
position, 0.0 where absent): `from_bytes` returns one (for float32 a view of the received bytes, no
copy) and `encode_dense` makes one from held dense values, so that a dense aggregation (a ring
all-reduce) adds arrays instead of merging sorted ids (zensim.schemes.pieces.DensePiece).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zensim.sparse import xp as backend
from zensim.sparse.domain import Domain
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.formats.base import Encoded, Format


@dataclass(frozen=True)
class DenseEncoded:
    """Dense values over a domain's positions (0.0 where absent), exactly as a receiver decodes them;
    the chunk of ids is made only if asked for."""

    fmt: "Dense"
    nbytes: int
    values: np.ndarray
    domain: Domain

    @property
    def chunk(self) -> SparseChunk:
        """The non-zero positions as a chunk of global ids."""
        return dense_to_chunk(self.values, self.domain)

    @property
    def nnz(self) -> int:
        """Number of non-zero positions."""
        return int(backend.namespace(self.values).count_nonzero(self.values))

    def to_bytes(self) -> bytes | memoryview:
        """The exact wire bytes (float32 on the host: a read-only view of the values, no copy)."""
        values = backend.host(self.values)
        if self.fmt.value.name == "float32":
            return memoryview(np.ascontiguousarray(values, "<f4")).cast("B").toreadonly()
        return self.fmt.value.pack(values)


def dense_to_chunk(values: backend.Array, domain: Domain) -> SparseChunk:
    """The non-zero positions of dense `values` over `domain` as a chunk of global ids (float32)."""
    xp = backend.namespace(values)
    pos = backend.flatnonzero(values)
    return SparseChunk(domain.ids(pos), xp.astype(values[pos], xp.float32))


class Dense(Format):
    """Every position of the domain carries a value."""

    name = "dense"
    keeps_zeros = False

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        return domain.size * self.value.itemsize

    def serialize(self, chunk: SparseChunk, domain: Domain) -> bytes:
        dense = np.zeros(domain.size, np.float32)
        dense[domain.positions(chunk.indices)] = self._wire_values(chunk)
        return self.value.pack(dense)

    def encode_dense(self, values: np.ndarray, domain: Domain) -> tuple[DenseEncoded, int]:
        """Held dense values (float32, one per position) as a receiver decodes them, and how many
        non-zeros the wire dtype flushed."""
        rounded, flushed = self.rounded(values, lambda at: int(domain.ids(np.array([at]))[0]))
        return DenseEncoded(self, domain.size * self.value.itemsize, rounded, domain), flushed

    def from_bytes(self, buf: bytes, domain: Domain, n_values: int | None = None,
                   *, with_values: bool = True, like: backend.Array | None = None) -> Encoded | DenseEncoded:
        """With values, a DenseEncoded (numpy float32: a read-only view of `buf`; else on `like`'s
        library and device); indices-only, an Encoded."""
        if not with_values:
            return super().from_bytes(buf, domain, n_values, with_values=False, like=like)
        self._check_length(memoryview(buf), domain.size * self.value.itemsize)
        if self.value.name == "float32":
            values = np.frombuffer(buf, "<f4", domain.size)
        else:
            values = self.value.unpack(buf, domain.size)
        if like is not None and not backend.is_numpy(like):
            values = backend.like(np.array(values), like)  # a writable copy for torch
        out = DenseEncoded(self, len(buf), values, domain)
        if n_values is not None and out.nnz != n_values:
            raise ValueError(f"{self.name}: decoded {out.nnz} values, expected {n_values}")
        return out

    def _decode(self, buf: memoryview, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        self._check_length(buf, domain.size * self.value.itemsize)
        dense = self.value.unpack(buf, domain.size)
        pos = np.flatnonzero(dense)
        return domain.ids(pos), dense[pos]
