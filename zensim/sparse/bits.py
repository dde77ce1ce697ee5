"""Bitsets of positions: uint64 words for set algebra, and the LSB-first byte bitmap of the wire and trace formats.

Bit p is bit p % 64 of word p // 64; stored little-endian, the words are the byte bitmap with bit p
at bit p % 8 of byte p // 8 (numpy's `packbits(..., bitorder="little")`).
"""

from __future__ import annotations

import numpy as np

from zensim.sparse import xp as backend
from zensim.sparse.chunk import run_starts

_ONE = np.uint64(1)


def pack_positions(positions: np.ndarray, size: int) -> np.ndarray:
    """A bitset of `size` bits with the sorted unique `positions` set (one OR-reduce per word)."""
    words = np.zeros((size + 63) // 64, np.uint64)
    if len(positions):
        w = positions >> 6
        bits = np.left_shift(_ONE, (positions & 63).astype(np.uint64))
        starts = np.flatnonzero(run_starts(w))
        words[w[starts]] = np.bitwise_or.reduceat(bits, starts)
    return words


def bit_positions(words: np.ndarray) -> np.ndarray:
    """Sorted positions (int64) of the set bits of a little-endian uint64 bitset."""
    nz = np.flatnonzero(words)
    if len(nz) == 0:
        return np.empty(0, np.int64)
    bits = np.unpackbits(words[nz].view(np.uint8), bitorder="little").reshape(len(nz), 64)
    row, col = np.nonzero(bits)
    return nz[row] * 64 + col


def bitmap_bytes(positions: np.ndarray, size: int) -> np.ndarray:
    """The ceil(size / 8)-byte LSB-first bitmap of the sorted unique `positions` in [0, size), a
    uint8 array of the positions' library (numpy: packed by words, one OR-reduce per word)."""
    if not isinstance(positions, np.ndarray):
        xp = backend.namespace(positions)
        mask = xp.zeros(size, dtype=xp.bool, device=backend.device(positions))
        mask[positions] = True
        return backend.packbits(mask)
    words = pack_positions(np.asarray(positions, np.int64), size).astype("<u8", copy=False)
    return words.view(np.uint8)[: (size + 7) // 8]
