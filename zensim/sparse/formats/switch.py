"""Switch: SparCML's sparse-to-dense switching representation. A chunk goes as COO while that is
smaller than dense over its domain, and as dense values from there ((I + V) x nnz >= V x |D|).
The receiver tells the two apart by the length (a COO payload is always shorter than the dense
one). Dense carries no ids, so explicit zeros never cross in either representation: a receiver
sees the same elements whichever was picked."""

from __future__ import annotations

import numpy as np

from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import Domain, index_dtype
from zensim.sparse.formats.base import Format
from zensim.sparse.formats.coo import COO
from zensim.sparse.formats.dense import Dense


class Switch(Format):
    """COO below the density where it stops being smaller than dense, dense above it."""

    name = "switch"
    keeps_zeros = False

    def __init__(self, value_dtype: str = "float32") -> None:
        super().__init__(value_dtype)
        self.coo, self.dense = COO(value_dtype), Dense(value_dtype)

    def is_dense(self, nnz: int, domain: Domain) -> bool:
        """Whether `nnz` elements over `domain` go dense."""
        return nnz * (index_dtype(domain.bound).itemsize + self.value.itemsize) >= domain.size * self.value.itemsize

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        return (self.dense if self.is_dense(chunk.nnz, domain) else self.coo).size(chunk, domain)

    def serialize(self, chunk: SparseChunk, domain: Domain) -> np.ndarray:
        return (self.dense if self.is_dense(chunk.nnz, domain) else self.coo).serialize(chunk, domain)

    def _decode(self, buf: np.ndarray, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        if buf.shape[0] == domain.size * self.value.itemsize:
            return self.dense._decode(buf, domain)
        return self.coo._decode(buf, domain)
