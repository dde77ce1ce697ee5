"""Seeded 64-bit hashing of element ids, vectorized over numpy arrays.

`hash64(ids, key)` is the MurmurHash3 64-bit finalizer (fmix64) applied to `id XOR key`: fmix64 is
a bijection with full avalanche, so different keys give different, practically independent
functions. `hash_key(seed, i)` derives the key of function i from a seed shared by all ranks
(i = 0 is h0, the partition map; 1..k are the rehash functions). `to_range(h, m)` maps a hash to
[0, m) by the multiply-shift "fastrange" (high 32 bits x m >> 32), which has no modulo bias
beyond 2**-32 and costs no division; m above 2**32 falls back to modulo. `low_to_range` does the
same with the low 32 bits, so one fmix64 yields two practically independent hashes (ZEN's h0 and
h1 share one, which saves a pass over the ids).

numpy arrays are hashed as uint64 in place. Other arrays (torch tensors on any device, which have
no uint64 arithmetic) are hashed as int64 with the same bits: XOR and wrapping multiplication are
the same on the two's-complement pattern, a logical right shift is an arithmetic one masked, and
the multiply-shift of `to_range` is split into 16-bit halves so that no product leaves int64. The
two give equal values on every id (tests/test_backends.py).
"""

from __future__ import annotations

import numpy as np

from zensim.sparse.xp import Array, namespace

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


def _signed(value: int) -> int:
    """The int64 with the bits of the uint64 `value`."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _shr(h: Array, s: int) -> Array:
    """Logical right shift of int64 `h` by 0 < s < 64 (the uint64 shift on the same bits)."""
    return (h >> s) & ((1 << (64 - s)) - 1)


def _fmix64_signed(h: Array) -> Array:
    """fmix64 on an int64 array holding uint64 bit patterns (wrapping arithmetic), a new array."""
    h = h ^ _shr(h, 33)
    h = h * _signed(int(_C1))
    h = h ^ _shr(h, 33)
    h = h * _signed(int(_C2))
    return h ^ _shr(h, 33)


def _mulhi32(a: Array, m: int) -> Array:
    """(a x m) >> 32 for int64 0 <= a < 2**32 and 0 < m <= 2**32, without leaving int64."""
    if m < 1 << 31:
        return (a * m) >> 32
    hi, lo = m >> 16, m & 0xFFFF
    return (a * hi + ((a * lo) >> 16)) >> 16


def hash64(ids: Array, key: int) -> Array:
    """fmix64(id XOR key) for non-negative int ids: uint64 for numpy arrays (a new array), the same
    bits as int64 for other arrays (torch tensors)."""
    if not isinstance(ids, np.ndarray) and hasattr(ids, "dtype"):
        xp = namespace(ids)
        return _fmix64_signed(xp.astype(ids, xp.int64) ^ _signed(key))
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
    if not isinstance(h, np.ndarray):
        if m > 2**32:
            return _signed_mod(h, m)
        return _mulhi32(_shr(h, 32), m)
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
    if not isinstance(h, np.ndarray):
        return _mulhi32(h & 0xFFFFFFFF, m)
    out = h & np.uint64(0xFFFFFFFF)
    out *= np.uint64(m)
    out >>= _S32
    return out.view(np.int64)


def _signed_mod(h: Array, m: int) -> Array:
    """The uint64 `h` (int64 bits) modulo m < 2**62: a negative pattern is 2**64 above its value,
    so (2**64 mod m) is added back to its floor remainder."""
    if m >= 1 << 62:
        raise ValueError(f"hash range {m} beyond 2**62")
    xp = namespace(h)
    rem = h % m  # floor modulo: in [0, m)
    return (rem + xp.astype(h < 0, xp.int64) * ((1 << 64) % m)) % m


def hash_to_range(ids: np.ndarray, key: int, m: int) -> np.ndarray:
    """to_range(hash64(ids, key), m): a seeded hash of ids into [0, m), int64."""
    return to_range(hash64(ids, key), m, inplace=True)
