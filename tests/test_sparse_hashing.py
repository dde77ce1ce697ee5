"""Seeded hashing: fmix64 matches a scalar reference, any int dtype, ranges in bounds."""

from __future__ import annotations

import numpy as np

from zensim.sparse.hashing import hash64, hash_key, low_to_range, to_range

M = (1 << 64) - 1


def _fmix64(x: int) -> int:
    """MurmurHash3's fmix64 on a Python int (reference)."""
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & M
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & M
    return x ^ (x >> 33)


def test_hash64_matches_reference_for_keys_above_and_below_2_63() -> None:
    ids = np.array([0, 1, 2, 12345, 2**31 - 1, 2**40 + 3], np.int64)
    keys = [hash_key(s, i) for s in range(4) for i in range(3)]
    assert any(k >= 2**63 for k in keys) and any(k < 2**63 for k in keys)
    for key in keys:
        expected = [_fmix64(int(i) ^ key) for i in ids]
        assert hash64(ids, key).tolist() == expected
        assert hash64(ids[:5].astype(np.int32), key).tolist() == expected[:5]


def test_ranges_stay_in_bounds_and_spread() -> None:
    h = hash64(np.arange(100_000, dtype=np.int64), hash_key(7, 0))
    for m in (1, 3, 16, 1000, 2**32, 2**33 + 1):
        r = to_range(h, m)
        assert r.min() >= 0 and r.max() < m
    counts = np.bincount(to_range(h, 10), minlength=10)
    assert counts.min() > 9_500 and counts.max() < 10_500
    low = low_to_range(h, 7)
    assert low.min() >= 0 and low.max() < 7
    assert np.mean(low == to_range(h, 7)) < 0.2  # the two halves are not the same function
