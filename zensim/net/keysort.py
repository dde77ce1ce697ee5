"""In-place sorts of positions by a key, compiled without allocation (numba, no reference counts): the
departure segments' heads (zensim.net.fastmaxmin: spread, lead) and a link re-solve's flow ceilings
(zensim.net.waterfill: radix); sort for short runs and component ids. Positions p, q compare by
key[base + p], ties to the lesser position, so every sort gives the one order a stable sort would."""

from __future__ import annotations

import numba
import numpy as np
from numba.core import cgutils, types
from numba.extending import intrinsic

_uncounted = numba.njit(cache=True, _nrt=False)
STACK = 3 * 64  # sort's pending ranges: three items each, one per halving of the size at most
DIGITS = 8  # radix's passes: 8 bits of a float64 key each
COUNTS = DIGITS * 256  # radix's digit counts, per pass
RADIX = 256  # radix sorts at least this many items (fewer: sort)


@_uncounted
def before(p, q, key, base):  # pragma: no cover (compiled)
    """Whether position p comes before position q: the lesser key[base + p], ties to the lesser position
    (a stable sort's order; a departure segment's: the earlier finish, then solve order). With `key`
    empty, p < q."""
    if len(key) == 0:
        return p < q
    fp, fq = key[base + p], key[base + q]
    return fp < fq or (fp == fq and p < q)


def _stack():
    """A 1-d int64 array of STACK items for sort's pending ranges, as Python (NUMBA_DISABLE_JIT=1)."""
    return np.empty(STACK, np.int64)


def _counts():
    """A 1-d int64 array of COUNTS items for radix's digit counts, as Python (NUMBA_DISABLE_JIT=1)."""
    return np.empty(COUNTS, np.int64)


def _alloca(items):
    """An intrinsic giving a 1-d int64 array of `items` items in the caller's stack frame (an alloca: no
    allocation, no reference counts): _stack and _counts compiled."""
    @intrinsic
    def alloca(typingctx):  # pragma: no cover (compiled)
        def codegen(context, builder, signature, args):
            item = context.get_value_type(types.int64)
            data = cgutils.alloca_once(builder, item, size=context.get_constant(types.intp, items))
            array = context.make_array(signature.return_type)(context, builder)
            context.populate_array(array, data=data, shape=[context.get_constant(types.intp, items)],
                                   strides=[context.get_constant(types.intp, 8)],
                                   itemsize=context.get_constant(types.intp, 8), meminfo=None)
            return array._getvalue()
        return types.Array(types.int64, 1, "C")(), codegen
    return alloca


if not numba.config.DISABLE_JIT:
    _stack = _alloca(STACK)  # noqa: F811 (the compiled arrays; the intrinsics do not run as Python)
    _counts = _alloca(COUNTS)  # noqa: F811


@_uncounted
def sort(x, lo, hi, key, base):  # pragma: no cover (compiled)
    """x[lo:hi] in before's order, in place: introsort (quicksort with the median of three, the smaller
    part pending on a stack while the larger is split, insertion below 17 items, heapsort for a range
    split more than twice the log of the size; the keys with their positions are distinct, so the order
    is the one any sort gives). The heapsort alone took a quarter of zen's 2048-rank replay: its
    indirect reads jump across the whole range. Not recursive: numba's cache does not load recursive
    functions safely."""
    depth = 0
    n = hi - lo
    while n > 1:
        depth += 2
        n >>= 1
    pending = _stack()  # (lo, hi, depth) per pending range: the smaller part, so at most 64 deep
    top = 0
    while True:
        while hi - lo > 16 and depth > 0:
            depth -= 1
            i, j = _partition(x, lo, hi - 1, key, base)
            if j + 1 - lo < hi - i:  # the smaller part waits, the larger is split on
                pending[top], pending[top + 1], pending[top + 2] = lo, j + 1, depth
                lo = i
            else:
                pending[top], pending[top + 1], pending[top + 2] = i, hi, depth
                hi = j + 1
            top += 3
        if hi - lo > 16:
            _heapsort(x, lo, hi, key, base)
        else:
            for i in range(lo + 1, hi):
                v = x[i]
                j = i
                while j > lo and before(v, x[j - 1], key, base):
                    x[j] = x[j - 1]
                    j -= 1
                x[j] = v
        if top == 0:
            return
        top -= 3
        lo, hi, depth = pending[top], pending[top + 1], pending[top + 2]


@_uncounted
def _heapsort(x, lo, hi, key, base):  # pragma: no cover (compiled)
    """x[lo:hi] in before's order by heapsort (sort's fallback: O(n log n) whatever the keys)."""
    n = hi - lo
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
def _partition(x, lo, hi, key, base):  # pragma: no cover (compiled)
    """Hoare's partition of x[lo:hi + 1] around the median of its first, middle and last positions
    (sort's step): returns (i, j), j < i, with x[lo:j + 1] none after the pivot and
    x[i:hi + 1] none before it."""
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
    return i, j


@_uncounted
def _bits(bits, p):  # pragma: no cover (compiled)
    """Float64 key p's bits (`bits`: the keys viewed as uint64) in the floats' order: the sign bit set for a
    non-negative key (-0.0 as 0.0), every bit flipped for a negative one."""
    b, sign = bits[p], np.uint64(1) << np.uint64(63)
    if b & sign:
        return sign if b == sign else ~b
    return b | sign


@_uncounted
def radix(x, spare, n, key):  # pragma: no cover (compiled)
    """x[:n] ordered by their float64 keys key[x[i]] (not NaN), ties in their order in x: before's order
    (base 0) where x[:n] is ascending. A stable LSD radix sort of the keys' bits, 8 a pass, a pass
    skipped where every key has the same digit (spare: n items of scratch): O(n) where sort's compares,
    one unpredictable branch each, cost n log n (a link re-solve's ceilings: zensim.net.waterfill).
    Fewer than RADIX items: sort."""
    if n < RADIX:
        sort(x, 0, n, key, 0)
        return
    bits = key.view(np.uint64)
    counts = _counts()
    for i in range(COUNTS):
        counts[i] = 0
    for i in range(n):
        b = _bits(bits, x[i])
        for d in range(DIGITS):
            counts[d * 256 + np.int64((b >> np.uint64(8 * d)) & np.uint64(255))] += 1
    flipped = False
    for d in range(DIGITS):
        at = d * 256
        whole = False
        total = 0
        for v in range(at, at + 256):
            whole = whole or counts[v] == n
            total, counts[v] = total + counts[v], total
        if whole:
            continue
        shift = np.uint64(8 * d)
        src, dst = (spare, x) if flipped else (x, spare)
        for i in range(n):
            p = src[i]
            v = at + np.int64((_bits(bits, p) >> shift) & np.uint64(255))
            dst[counts[v]] = p
            counts[v] += 1
        flipped = not flipped
    if flipped:
        for i in range(n):
            x[i] = spare[i]


@_uncounted
def _bucket(bits, p, lo, shift):  # pragma: no cover (compiled)
    """Key p's bucket in spread's cut: its order-preserving bits above the least, shifted."""
    return np.int64((_bits(bits, p) - lo) >> shift)


@_uncounted
def spread(x, n, key):  # pragma: no cover (compiled)
    """x[:n] set to the positions 0..n-1 in buckets of their keys key[:n]: the keys' order-preserving bits
    cut into at most COUNTS buckets between the least and the greatest, about one per 64 keys (at least 16),
    the buckets in order, each one's positions ascending (a pass for the bounds, one to count, one to
    place). Returns the cut (lo, shift) that lead takes."""
    bits = key.view(np.uint64)
    lo, hi = ~np.uint64(0), np.uint64(0)
    for p in range(n):
        b = _bits(bits, p)
        lo, hi = min(lo, b), max(hi, b)
    if n == 0:  # nothing to cut: (0, 0)
        return hi, hi
    most = 16
    while most < COUNTS and 64 * most < n:
        most *= 2
    shift = np.uint64(0)
    while (hi - lo) >> shift >= np.uint64(most):
        shift += np.uint64(1)
    counts = _counts()
    for v in range(most):
        counts[v] = 0
    for p in range(n):
        counts[_bucket(bits, p, lo, shift)] += 1
    total = 0
    for v in range(most):
        total, counts[v] = total + counts[v], total
    for p in range(n):
        v = _bucket(bits, p, lo, shift)
        x[counts[v]] = p
        counts[v] += 1
    return lo, shift


@_uncounted
def lead(x, spare, n, k, key, lo, shift):  # pragma: no cover (compiled)
    """x[:n] in spread's buckets (cut by lo, shift), each in ascending order: its buckets up to the
    one of x[k - 1] (all of x where n <= k) sorted in place by radix, the rest left as they are; returns
    how many that is, m >= k. O(m): only the positions taken are read, so that taking a spread run's heads
    one after another costs one spread and the sorts (a departure segment's heads: zensim.net.fastmaxmin).
    Radix passes run in address order, where a quickselect's partitions jump and branch on every compare."""
    if n <= k:
        radix(x, spare, n, key)
        return n
    bits = key.view(np.uint64)
    cut, m = _bucket(bits, x[k - 1], lo, shift), k
    while m < n and _bucket(bits, x[m], lo, shift) == cut:
        m += 1
    radix(x, spare, m, key)
    return m
