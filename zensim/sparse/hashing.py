"""Seeded 64-bit hashing of element ids, vectorized over numpy arrays.

`hash64(ids, key)` is the MurmurHash3 64-bit finalizer (fmix64) applied to `id XOR key`: fmix64 is
a bijection with full avalanche, so different keys give different, practically independent
functions. `hash_key(seed, i)` derives the key of function i from a seed shared by all ranks
(i = 0 is h0, the partition map; 1..k are the rehash functions). `to_range(h, m)` maps a hash to
[0, m) by the multiply-shift "fastrange" (high 32 bits x m >> 32), which has no modulo bias
beyond 2**-32 and costs no division; m above 2**32 falls back to modulo. `low_to_range` does the
same with the low 32 bits, so one fmix64 yields two practically independent hashes (ZEN's h0 and
h1 share one, which saves a pass over the ids).
"""

from __future__ import annotations

import numpy as np

_C1 = np.uint64(0xFF51AFD7ED558CCD)
_C2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_S32 = np.uint64(32)
_GOLDEN = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


def _fmix64_inplace(h: np.ndarray) -> np.ndarray:
    """MurmurHash3 fmix64 on a uint64 array, in place (one temporary)."""
    t = np.empty_like(h)
    np.right_shift(h, _S33, out=t)
    h ^= t
    h *= _C1
    np.right_shift(h, _S33, out=t)
    h ^= t
    h *= _C2
    np.right_shift(h, _S33, out=t)
    h ^= t
    return h


def hash_key(seed: int, i: int) -> int:
    """Key of hash function `i` for a shared `seed` (fmix64 of seed and i, so keys look random)."""
    x = np.array([(seed * _GOLDEN + (i + 1) * 0xD1B54A32D192ED03) & _MASK], np.uint64)
    return int(_fmix64_inplace(x)[0])


def hash64(ids: np.ndarray, key: int) -> np.ndarray:
    """fmix64(id XOR key) for non-negative int ids, as uint64 (a new array)."""
    ids = np.asarray(ids)
    if ids.dtype == np.int64:  # one pass: XOR into a new array, reinterpret as uint64
        h = np.bitwise_xor(ids, np.int64(key - (1 << 64) if key >= 1 << 63 else key)).view(np.uint64)
    else:
        h = ids.astype(np.uint64)
        h ^= np.uint64(key)
    return _fmix64_inplace(h)


def to_range(h: np.ndarray, m: int, inplace: bool = False) -> np.ndarray:
    """Map uint64 hashes (their high 32 bits) to int64 values in [0, m); `inplace` reuses `h`."""
    if m <= 0:
        raise ValueError(f"hash range {m} must be positive")
    out = h if inplace else h.copy()
    if m <= 2**32:
        out >>= _S32
        out *= np.uint64(m)
        out >>= _S32
    else:
        out %= np.uint64(m)
    return out.view(np.int64)


def low_to_range(h: np.ndarray, m: int) -> np.ndarray:
    """Map the low 32 bits of uint64 hashes to int64 values in [0, m) (m <= 2**32), a new array."""
    if not 0 < m <= 2**32:
        raise ValueError(f"hash range {m} must be in [1, 2**32]")
    out = h & np.uint64(0xFFFFFFFF)
    out *= np.uint64(m)
    out >>= _S32
    return out.view(np.int64)


def hash_to_range(ids: np.ndarray, key: int, m: int) -> np.ndarray:
    """to_range(hash64(ids, key), m): a seeded hash of ids into [0, m), int64."""
    return to_range(hash64(ids, key), m, inplace=True)
