"""Bitsets: word bitsets invert, and the byte bitmap is numpy's LSB-first packbits of the positions."""

import numpy as np
import pytest

from zensim.sparse.bits import bit_positions, bitmap_bytes, pack_positions


@pytest.mark.parametrize("size", [1, 7, 8, 63, 64, 65, 1000, 4099])
def test_bitsets_match_a_boolean_reference(size: int) -> None:
    rng = np.random.default_rng(size)
    for count in (0, 1, size // 3, size):
        pos = np.sort(rng.choice(size, count, replace=False)).astype(np.int64)
        flags = np.zeros(size, np.bool_)
        flags[pos] = True
        assert bitmap_bytes(pos, size).tobytes() == np.packbits(flags, bitorder="little").tobytes()
        words = pack_positions(pos, size)
        assert len(words) == -(-size // 64) and int(np.bitwise_count(words).sum()) == count
        assert bit_positions(words).tolist() == pos.tolist()
