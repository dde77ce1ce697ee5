"""Bitmap over a domain's positions, and ZEN's hash bitmap (the bitmap over a hash partition)."""

from __future__ import annotations

import numpy as np

from zensim.sparse import xp as backend
from zensim.sparse.bits import bitmap_bytes
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import Domain, ExplicitDomain
from zensim.sparse.formats.base import Format


class Bitmap(Format):
    """One bit per domain position, then the values of the set bits in position order."""

    name = "bitmap"

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        return -(-domain.size // 8) + chunk.nnz * self.value.itemsize

    def serialize(self, chunk: SparseChunk, domain: Domain) -> backend.Array:
        bitmap = bitmap_bytes(domain.positions(chunk.indices), domain.size)
        return backend.concat_bytes([bitmap, self.value.pack(self._wire_values(chunk))], chunk.indices)

    def _decode(self, buf: backend.Array, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        nmap = -(-domain.size // 8)
        if buf.shape[0] < nmap:
            raise ValueError(f"{self.name}: payload of {buf.shape[0]} bytes shorter than its {nmap}-byte bitmap")
        pos = backend.flatnonzero(backend.unpackbits(buf[:nmap], domain.size))
        self._check_length(buf, nmap + pos.shape[0] * self.value.itemsize)
        return domain.ids(pos), self.value.unpack(buf[nmap:], pos.shape[0])


class HashBitmap(Bitmap):
    """ZEN Algorithm 2: the bitmap over a hash partition 𝕀_i (an ExplicitDomain)."""

    name = "hash_bitmap"

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        if not isinstance(domain, ExplicitDomain):
            raise ValueError("hash_bitmap needs an ExplicitDomain (a hash partition)")
        return super().size(chunk, domain)
