"""Dense: every position of the domain carries a value (no ids)."""

from __future__ import annotations

import numpy as np

from zensim.sparse.domain import Domain
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.formats.base import Format


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

    def _decode(self, buf: memoryview, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        self._check_length(buf, domain.size * self.value.itemsize)
        dense = self.value.unpack(buf, domain.size)
        pos = np.flatnonzero(dense)
        return domain.ids(pos), dense[pos]
