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

    def to_buffer(self) -> backend.Array:
        """The exact wire bytes as a uint8 array of the values' library (float32: a view, no copy)."""
        return self.fmt.value.pack(self.values)

    def to_bytes(self) -> bytes:
        """The exact wire bytes, on the host."""
        return backend.host(self.to_buffer()).tobytes()


def dense_to_chunk(values: backend.Array, domain: Domain) -> SparseChunk:
    """The non-zero positions of dense `values` over `domain` as a chunk of global ids (float32)."""
    xp = backend.namespace(values)
    pos = backend.flatnonzero(values)
    return SparseChunk(domain.ids(pos), xp.astype(values[pos], xp.float32))


class Dense(Format):
    """Every position of the domain carries a value."""

    name = "dense"
    keeps_zeros = False
    size_from_domain = True

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        return domain.size * self.value.itemsize

    def serialize(self, chunk: SparseChunk, domain: Domain) -> backend.Array:
        xp = backend.namespace(chunk.indices)
        dense = xp.zeros(domain.size, dtype=xp.float32, device=backend.device(chunk.indices))
        dense[domain.positions(chunk.indices)] = self._wire_values(chunk)
        return self.value.pack(dense)

    def encode_dense(self, values: np.ndarray, domain: Domain) -> tuple[DenseEncoded, int]:
        """Held dense values (float32, one per position) as a receiver decodes them, and how many
        non-zeros the wire dtype flushed."""
        rounded, flushed = self.rounded(values, lambda at: int(domain.ids(np.array([at]))[0]))
        return DenseEncoded(self, domain.size * self.value.itemsize, rounded, domain), flushed

    def from_bytes(self, buf: bytes, domain: Domain, n_values: int | None = None,
                   *, with_values: bool = True, like: backend.Array | None = None) -> Encoded | DenseEncoded:
        """With values, a DenseEncoded (float32: a view of `buf`, no copy; then in `like`'s library
        and on its device when given); indices-only, an Encoded."""
        if not with_values:
            return super().from_bytes(buf, domain, n_values, with_values=False, like=like)
        buf = backend.as_buffer(buf)
        self._check_length(buf, domain.size * self.value.itemsize)
        if self.value.name == "float32":
            values = backend.view(buf, backend.namespace(buf).float32)
        else:
            values = self.value.unpack(buf, domain.size)
        if like is not None:
            values = backend.like(values, like)
        out = DenseEncoded(self, int(buf.shape[0]), values, domain)
        if n_values is not None and out.nnz != n_values:
            raise ValueError(f"{self.name}: decoded {out.nnz} values, expected {n_values}")
        return out

    def _decode(self, buf: backend.Array, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        self._check_length(buf, domain.size * self.value.itemsize)
        dense = self.value.unpack(buf, domain.size)
        pos = backend.flatnonzero(dense)
        return domain.ids(pos), dense[pos]
