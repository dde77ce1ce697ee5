"""Compiled selection kernels for numpy arrays (numba, GIL released so that the replay's worker
threads run them side by side).

`at_least(x, threshold)`: the sorted positions with |x| >= threshold in one pass over `x`, without
the |x| array that `np.flatnonzero(np.abs(x) >= threshold)` writes and reads again (two passes of
40 MB on a 10M-element float32 gradient). The comparison is made in x's dtype, as numpy compares a
float32 array with a Python float: the same positions either way.

numba is imported and the kernel loaded (from its on-disk cache) on the first call, not on import:
the capture hook in a user's training script imports the sparsifiers (and runs them on torch
tensors, which never reach this kernel), and importing numba takes about a second.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from zensim.jit import announce


def _at_least(x: np.ndarray, threshold, out: np.ndarray) -> int:  # type: ignore[no-untyped-def]  # pragma: no cover (compiled)
    count = 0
    for i in range(x.size):
        if abs(x[i]) >= threshold:
            out[count] = i
            count += 1
    return count


@functools.lru_cache(maxsize=1)
def _at_least_kernel() -> Callable:
    """`_at_least` compiled (numba imported and the kernel loaded or compiled on the first call, once a
    process; the first compile is announced)."""
    import numba

    kernel = numba.njit(cache=True, nogil=True)(_at_least)
    announce(kernel, "the threshold kernel (zensim.sparsify.kernels.at_least)", 2)
    return kernel


def at_least(x: np.ndarray, threshold: float) -> np.ndarray:
    """Sorted int64 positions of the 1-D float array `x` where |x| >= `threshold`."""
    if x.dtype not in (np.float32, np.float64):
        return np.flatnonzero(np.abs(x) >= threshold)
    out = np.empty(x.size, np.int64)  # only the pages written are ever touched
    count = _at_least_kernel()(x, x.dtype.type(threshold), out)
    return out[:count].copy()
