"""The few array kernels the sparsifiers need, for numpy arrays and torch tensors alike.

A sparsifier is written once against these functions and runs on whatever it is given: numpy
arrays in the replay (fast on a CPU), torch tensors on the gradient's device in the capture hook
(CUDA included). Every function returns the same type as its input. Selections are exact and
deterministic across backends: the k largest magnitudes, ties broken towards the lowest index.
The library-neutral pieces come from zensim.sparse.xp (the schemes' backend); what is here is the
selection itself and its numpy fast paths.
"""

from __future__ import annotations

import math

import numpy as np

from zensim.sparse import xp as backend
from zensim.sparse.xp import Array
from zensim.sparsify.kernels import at_least as _at_least

_SAMPLE = 1 << 16  # at most this many elements sampled to guess the k-th magnitude before the exact selection
_EXPECTED = 64  # elements above the k-th the sample is sized to hold (the guess then errs low at > 4 sigma)


def is_torch(x: Array) -> bool:
    """Whether `x` is a torch tensor (anything not numpy: zensim.sparse.xp's other library)."""
    return not backend.is_numpy(x)


def magnitude(x: Array, out: np.ndarray | None = None) -> Array:
    """|x| as a new array, or into `out` (numpy: a reused buffer spares a large allocation and its
    page faults on every call)."""
    if is_torch(x):
        return x.abs()
    return np.abs(x, out=out[: len(x)] if out is not None else None)


def at_least(x: Array, threshold: float) -> Array:
    """Sorted int64 positions where |x| >= threshold (numpy: one compiled pass, no |x| array)."""
    if is_torch(x):
        return backend.flatnonzero(x.abs() >= threshold)
    return _at_least(x, threshold)


def as_index(indices: np.ndarray, like: Array) -> Array:
    """A numpy int64 index array as an index array of `like`'s library and device."""
    return backend.like(np.asarray(indices, np.int64), like)


def empty_index(like: Array) -> Array:
    """An empty int64 index array of `like`'s library (and device)."""
    return as_index(np.empty(0, np.int64), like)


def concat(parts: list[Array], like: Array) -> Array:
    """The concatenation of index arrays (already in order: no sort)."""
    return backend.namespace(like).concat(parts) if parts else empty_index(like)


def concat_sorted(parts: list[Array], like: Array) -> Array:
    """The sorted concatenation of disjoint index arrays."""
    return backend.namespace(like).sort(concat(parts, like))


def arange(start: int, stop: int, like: Array) -> Array:
    """int64 start .. stop - 1 of `like`'s library (and device)."""
    xp = backend.namespace(like)
    return xp.arange(start, stop, dtype=xp.int64, device=backend.device(like))


def kth_largest(mag: Array, k: int) -> float:
    """The k-th largest value of a 1-D array of magnitudes (1 <= k <= len)."""
    if is_torch(mag):
        if mag.device.type != "cpu":
            return float(mag.topk(k, sorted=False).values.min())
        mag = mag.numpy()  # torch's CPU top-k is several times slower than numpy's partition
    n = len(mag)
    return float(np.partition(mag, n - k)[n - k])


def topk_indices(mag: Array, k: int) -> Array:
    """Sorted positions of the k largest magnitudes; ties at the k-th value go to the lowest positions.

    On large numpy inputs a strided sample first guesses a value below the k-th, so that the exact
    selection runs on the few candidates above it; the answer is the same either way (the guess is
    checked, and a full partition is done when it is too high)."""
    n = len(mag)
    if k >= n:
        return arange(0, n, mag)
    if k <= 0:
        return empty_index(mag)
    candidates = None
    if not is_torch(mag) and n > 4 * _SAMPLE:
        candidates = _candidates(mag, k)
    if candidates is None:
        kth = kth_largest(mag, k)
        return _with_ties(mag, kth, k, None)
    return _topk_of_candidates(mag[candidates], k, candidates)


def topk_abs(x: Array, k: int) -> Array:
    """`topk_indices` of |x| (the same positions) without writing |x| for a large numpy `x`: the
    sampled guess is taken from |x| at the sample's positions and the candidates in one pass."""
    n = len(x)
    if is_torch(x) or n <= 4 * _SAMPLE or not 0 < k < n:
        return topk_indices(magnitude(x), k)
    candidates = _candidates(x, k, signed=True)
    if candidates is None:
        return topk_indices(magnitude(x), k)
    return _topk_of_candidates(np.abs(x[candidates]), k, candidates)


def _topk_of_candidates(sub: np.ndarray, k: int, candidates: np.ndarray) -> np.ndarray:
    """The top-k positions when they are all among `candidates` (sub: their magnitudes)."""
    kth = float(np.partition(sub, len(sub) - k)[len(sub) - k])
    return _with_ties(sub, kth, k, candidates)


def _candidates(mag: np.ndarray, k: int, signed: bool = False) -> np.ndarray | None:
    """Positions whose magnitude is at least a sampled guess of the k-th largest, if they are at
    least k (so that they contain the top k); None when the guess was too high. The sample holds
    about _EXPECTED elements above the k-th (at most _SAMPLE elements, at least 1 in 4): smaller
    for a larger k / n, which is where the partition of the sample would cost most. `signed`:
    `mag` holds signed values and their magnitudes are meant."""
    size = min(_SAMPLE, max(len(mag) // 4, 1), max(4096, _EXPECTED * len(mag) // k))
    stride = max(1, len(mag) // size)
    sample = np.abs(mag[::stride]) if signed else mag[::stride]
    want = min(len(sample), math.ceil(k / len(mag) * len(sample) * 1.25) + 16)
    guess = np.partition(sample, len(sample) - want)[len(sample) - want]
    candidates = _at_least(mag, guess)
    return candidates if len(candidates) >= k else None


def _with_ties(mag: Array, kth: float, k: int, positions: np.ndarray | None) -> Array:
    """Positions with magnitude > kth, plus the lowest-positioned ones equal to kth up to k in all."""
    above = backend.flatnonzero(mag > kth)
    if len(above) == k:  # no tie taken (the usual case): already sorted
        return positions[above] if positions is not None else above
    ties = backend.flatnonzero(mag == kth)[: k - len(above)]
    if positions is not None:
        above, ties = positions[above], positions[ties]
    return concat_sorted([above, ties], mag)
