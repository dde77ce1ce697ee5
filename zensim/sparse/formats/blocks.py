"""OmniReduce's tensor blocks: only blocks holding a non-zero are sent, as block id + values."""

from __future__ import annotations

import numpy as np

from zensim.errors import ConfigError
from zensim.sparse import xp as backend
from zensim.sparse.bits import bit_positions
from zensim.sparse.chunk import SparseChunk, run_starts
from zensim.sparse.domain import Domain, index_dtype
from zensim.sparse.formats.base import Format


class Blocks(Format):
    """OmniReduce tensor blocks: only blocks holding a non-zero are sent, as a block id + values."""

    name = "blocks"
    keeps_zeros = False
    takes_block_size = True
    size_from_count = False

    def __init__(self, value_dtype: str = "float32", block_size: int = 256) -> None:
        super().__init__(value_dtype)
        if block_size < 1:
            raise ConfigError(f"block size {block_size}: must be >= 1")
        self.block_size = int(block_size)

    def occupied(self, chunk: SparseChunk, domain: Domain) -> np.ndarray:
        """Sorted ids (int64) of the blocks holding at least one element of `chunk`."""
        blocks = domain.positions(chunk.indices) // self.block_size
        return blocks[run_starts(blocks)]

    def _carried_values(self, blocks: np.ndarray, domain: Domain) -> int:
        """Number of values the carried `blocks` hold (the domain's last block may be short)."""
        short = (-domain.size) % self.block_size
        count = blocks.shape[0]
        return count * self.block_size - (short if count and int(blocks[-1]) == self._nblocks(domain) - 1 else 0)

    def _nblocks(self, domain: Domain) -> int:
        """Number of blocks covering the domain."""
        return -(-domain.size // self.block_size)

    def size(self, chunk: SparseChunk, domain: Domain) -> int:
        return self._size(self.occupied(chunk, domain), domain)

    def bitset_size(self, words: np.ndarray, nnz: int, domain: Domain, memo: dict) -> int:
        """From the bitset's occupied blocks (one `any` per block of words when the block size is a
        multiple of 64), remembered per block size in `memo`."""
        key = ("blocks", self.block_size)
        if key not in memo:
            if self.block_size % 64 == 0:
                per = self.block_size // 64
                pad = (-len(words)) % per
                padded = np.concatenate([words, np.zeros(pad, np.uint64)]) if pad else words
                memo[key] = np.flatnonzero(padded.reshape(-1, per).any(axis=1))
            else:
                memo[key] = np.unique(bit_positions(words) // self.block_size)
        return self._size(memo[key], domain)

    def _size(self, blocks: np.ndarray, domain: Domain) -> int:
        """Bytes of the occupied `blocks`: their ids and every value they carry."""
        bid = index_dtype(self._nblocks(domain)).itemsize
        return blocks.shape[0] * bid + self._carried_values(blocks, domain) * self.value.itemsize

    def serialize(self, chunk: SparseChunk, domain: Domain) -> backend.Array:
        pos = domain.positions(chunk.indices)
        blocks = self.occupied(chunk, domain)
        xp, dev = backend.namespace(pos), backend.device(pos)
        slot = xp.searchsorted(blocks, pos // self.block_size) * self.block_size + pos % self.block_size
        flat = xp.zeros(blocks.shape[0] * self.block_size, dtype=xp.float32, device=dev)
        flat[slot] = self._wire_values(chunk)
        ids = xp.astype(blocks, backend.int_dtype(xp, index_dtype(self._nblocks(domain)).itemsize))
        values = self.value.pack(flat[: self._carried_values(blocks, domain)])
        return backend.concat_bytes([backend.as_bytes_of(ids), values], chunk.indices)

    def _decode(self, buf: backend.Array, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
        size = index_dtype(self._nblocks(domain)).itemsize
        per_block = size + self.block_size * self.value.itemsize
        nb = -(-buf.shape[0] // per_block)
        xp = backend.namespace(buf)
        blocks = xp.astype(backend.view(buf[: nb * size], backend.int_dtype(xp, size)), xp.int64)
        if bool(xp.any(blocks[1:] <= blocks[:-1])) or (nb and (int(blocks[0]) < 0
                                                              or int(blocks[-1]) >= self._nblocks(domain))):
            raise ValueError("blocks: block ids not sorted or outside the domain")
        count = self._carried_values(blocks, domain)
        self._check_length(buf, nb * size + count * self.value.itemsize)
        flat = self.value.unpack(buf[nb * size:], count)
        slots = backend.flatnonzero(flat)
        pos = blocks[slots // self.block_size] * self.block_size + slots % self.block_size
        return domain.ids(pos), flat[slots]

    def __repr__(self) -> str:
        return f"Blocks(value_dtype={self.value.name!r}, block_size={self.block_size})"
