"""COO: global ids, then values."""

from __future__ import annotations

import numpy as np

from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import Domain, index_dtype
from zensim.sparse.formats.base import Format


class COO(Format):
    """Global ids then values."""

    name = "coo"

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        return chunk.nnz * (index_dtype(domain.bound).itemsize + self.value.itemsize)

    def serialize(self, chunk: SparseChunk, domain: Domain) -> bytes:
        domain.positions(chunk.indices)  # validates membership
        ids = chunk.indices.astype(index_dtype(domain.bound)).tobytes()
        return ids + self.value.pack(self._wire_values(chunk))

    def _decode(self, buf: memoryview, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        idt = index_dtype(domain.bound)
        nnz, rest = divmod(len(buf), idt.itemsize + self.value.itemsize)
        if rest:
            raise ValueError(f"coo: payload of {len(buf)} bytes is not a whole number of elements")
        ids = np.frombuffer(buf, idt, nnz).astype(np.int64)
        return ids, self.value.unpack(buf[nnz * idt.itemsize:], nnz)
