"""In-place sorts of positions by a key, compiled without allocation (numba, no reference counts): the
departure segments' heads (zensim.net.fastmaxmin) and a link re-solve's flow ceilings
(zensim.net.waterfill). Positions p, q compare by key[base + p], ties to the lesser position, so every
sort gives the one order a stable sort would."""

from __future__ import annotations

import numba

_uncounted = numba.njit(cache=True, _nrt=False)


@_uncounted
def before(p, q, key, base):  # pragma: no cover (compiled)
    """Whether position p comes before position q: the lesser key[base + p], ties to the lesser position
    (a stable sort's order; a departure segment's: the earlier finish, then solve order). With `key`
    empty, p < q."""
    if len(key) == 0:
        return p < q
    fp, fq = key[base + p], key[base + q]
    return fp < fq or (fp == fq and p < q)


@_uncounted
def sort(x, lo, hi, key, base):  # pragma: no cover (compiled)
    """x[lo:hi] in before's order, in place (insertion for a few, else heapsort: the keys are distinct,
    so the order is the one any sort gives)."""
    n = hi - lo
    if n <= 16:
        for i in range(lo + 1, hi):
            v = x[i]
            j = i
            while j > lo and before(v, x[j - 1], key, base):
                x[j] = x[j - 1]
                j -= 1
            x[j] = v
        return
    for start in range(n // 2 - 1, -1, -1):
        sift(x, lo, start, n, key, base)
    for end in range(n - 1, 0, -1):
        x[lo], x[lo + end] = x[lo + end], x[lo]
        sift(x, lo, 0, end, key, base)


@_uncounted
def sift(x, lo, i, n, key, base):  # pragma: no cover (compiled)
    """Heapsort's sift-down of x[lo + i] in the max-heap x[lo:lo + n] (before's order)."""
    v = x[lo + i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and before(x[lo + child], x[lo + child + 1], key, base):
            child += 1
        if not before(v, x[lo + child], key, base):
            break
        x[lo + i] = x[lo + child]
        i = child
    x[lo + i] = v


@_uncounted
def select(x, n, k, key, base):  # pragma: no cover (compiled)
    """Reorder x[:n] so that x[:k] are its k first in before's order (quickselect, median of three)."""
    lo, hi, kth = 0, n - 1, k - 1
    while hi > lo:
        mid = (lo + hi) // 2
        if before(x[mid], x[lo], key, base):
            x[mid], x[lo] = x[lo], x[mid]
        if before(x[hi], x[lo], key, base):
            x[hi], x[lo] = x[lo], x[hi]
        if before(x[hi], x[mid], key, base):
            x[hi], x[mid] = x[mid], x[hi]
        pivot = x[mid]
        i, j = lo, hi
        while i <= j:
            while before(x[i], pivot, key, base):
                i += 1
            while before(pivot, x[j], key, base):
                j -= 1
            if i <= j:
                x[i], x[j] = x[j], x[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            break
