"""COO: global ids, then values."""

from __future__ import annotations

import numpy as np

from zensim.sparse import xp as backend
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import Domain, index_dtype
from zensim.sparse.formats.base import Format


class COO(Format):
    """Global ids then values."""

    name = "coo"

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        return chunk.nnz * (index_dtype(domain.bound).itemsize + self.value.itemsize)

    def serialize(self, chunk: SparseChunk, domain: Domain) -> backend.Array:
        domain.positions(chunk.indices)  # validates membership
        xp = backend.namespace(chunk.indices)
        ids = xp.astype(chunk.indices, backend.int_dtype(xp, index_dtype(domain.bound).itemsize))
        return backend.concat_bytes([backend.as_bytes_of(ids), self.value.pack(self._wire_values(chunk))], chunk.indices)

    def _decode(self, buf: backend.Array, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        size = index_dtype(domain.bound).itemsize
        nnz, rest = divmod(buf.shape[0], size + self.value.itemsize)
        if rest:
            raise ValueError(f"coo: payload of {buf.shape[0]} bytes is not a whole number of elements")
        xp = backend.namespace(buf)
        ids = xp.astype(backend.view(buf[: nnz * size], backend.int_dtype(xp, size)), xp.int64)
        return ids, self.value.unpack(buf[nnz * size:], nnz)
