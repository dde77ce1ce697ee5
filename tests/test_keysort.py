"""zensim.net.keysort: the in-place sorts give the stable order of their keys (ties to the lesser
position), whatever the size, the keys' order and the range within the array."""

import numpy as np
import pytest

from zensim.net import keysort
from zensim.net.keysort import RADIX, lead, radix, sort, spread


def stable(positions, key, base):
    """The positions in a stable sort's order of key[base + p]."""
    return sorted(positions, key=lambda p: (key[base + p], p))


@pytest.mark.parametrize("n", [0, 1, 2, 16, 17, 100, 5000])
@pytest.mark.parametrize("keys", ["distinct", "ties", "equal", "ascending", "descending"])
def test_sort_gives_the_stable_order(n, keys):
    """sort(x, lo, hi) orders x[lo:hi] as a stable sort would and touches nothing else: small ranges
    (insertion), large ones (quicksort, its pending ranges on a stack), keys all equal or already in
    (reverse) order, where a plain quicksort degrades (then heapsort)."""
    rng = np.random.default_rng(n)
    base = 3
    key = {"distinct": rng.uniform(size=n), "ties": rng.integers(0, max(n // 20, 1), n).astype(float),
           "equal": np.zeros(n), "ascending": np.arange(n, dtype=float),
           "descending": np.arange(n, 0, -1, dtype=float)}[keys]
    key = np.concatenate([np.full(base, -1.0), key])
    x = np.concatenate([[-7, -8], rng.permutation(n), [-9]]).astype(np.int64)
    sort(x, 2, 2 + n, key, base)
    assert x[2:2 + n].tolist() == stable(range(n), key, base)
    assert x[:2].tolist() == [-7, -8] and x[-1] == -9


def test_sort_without_keys_orders_positions():
    """With an empty key, positions compare as numbers (component ids: fastmaxmin._join)."""
    x = np.random.default_rng(1).permutation(1000).astype(np.int64)
    sort(x, 0, 1000, np.empty(0), 0)
    assert x.tolist() == list(range(1000))


@pytest.mark.parametrize("n", [0, 1, 255, 256, 5000])
@pytest.mark.parametrize("keys", ["distinct", "ties", "equal", "descending", "signed", "scales"])
def test_radix_gives_the_stable_order(n, keys):
    """radix(x, spare, n, key) orders x[:n] (positions into a longer key array) as a stable sort would,
    ties in their order in x (by their positions where x is ascending: then before's order, as sort):
    below RADIX items by sort, else by its passes over the keys' bits, passes where all keys share the
    digit skipped (equal keys: none taken); negative keys, -0.0 as 0.0 and infinity in the floats'
    order; keys over many orders of magnitude (every pass taken)."""
    rng = np.random.default_rng(n)
    size = 2 * n + 3
    key = {"distinct": rng.uniform(size=size), "ties": rng.integers(0, max(n // 20, 1), size).astype(float),
           "equal": np.full(size, 2.5), "descending": np.arange(size, 0, -1, dtype=float),
           "signed": rng.choice([-np.inf, -3.5, -0.0, 0.0, 1e-300, 2.0, np.inf], size),
           "scales": rng.uniform(size=size) * 10.0 ** rng.integers(-300, 300, size)}[keys]
    x = np.sort(rng.choice(size, n, replace=False)).astype(np.int64)
    if n >= RADIX:  # ties in x's order, which radix keeps, whatever it is
        x = rng.permutation(x)
    want = sorted(x.tolist(), key=lambda p: key[p] + 0.0)
    spare = np.full(n, -1, np.int64)
    radix(x, spare, n, key)
    assert x.tolist() == want


@pytest.mark.parametrize("n,k", [(0, 5), (10, 20), (3000, 1), (3000, 256), (3000, 2999), (20000, 300)])
@pytest.mark.parametrize("keys", ["distinct", "ties", "equal", "clustered"])
def test_spread_then_lead_take_the_stable_order_head_by_head(n, k, keys):
    """spread(x, n, key) sets x[:n] to the positions 0..n-1, their buckets in ascending order along x, each
    bucket's positions ascending (equal keys share one); lead then sorts the first m >= k (all where fewer
    are left; the buckets taken whole: all equal keys, one bucket) and touches no other, so heads taken
    one after another over what is left give the stable order of all of them."""
    rng = np.random.default_rng(n + k)
    key = {"distinct": rng.uniform(size=n), "ties": rng.integers(0, 30, n).astype(float),
           "equal": np.full(n, 0.5),
           "clustered": 1.0 + rng.uniform(size=n) * 10.0 ** rng.integers(-15, 0, n)}[keys]
    want = sorted(range(n), key=lambda p: key[p])
    x = np.full(n + 3, -1, np.int64)  # room past n: spread writes only x[:n]
    spare = np.full(n, -1, np.int64)
    lo, shift = spread(x, n, key)
    assert sorted(x[:n].tolist()) == list(range(n)) and x[n:].tolist() == [-1] * 3
    bucket = [keysort._bucket(key.view(np.uint64), p, lo, shift) for p in x[:n]]
    assert bucket == sorted(bucket)
    for b in set(bucket):
        run = [p for p, c in zip(x[:n].tolist(), bucket) if c == b]
        assert run == sorted(run)
    assert len({(key[p], c) for p, c in zip(x[:n].tolist(), bucket)}) == len(set(key.tolist()))
    taken = 0
    while taken < n:
        rest = x[taken:n].copy()
        m = lead(x[taken:n], spare, n - taken, k, key, lo, shift)
        assert min(k, n - taken) <= m <= n - taken
        assert x[taken + m:n].tolist() == rest[m:].tolist()
        assert keys != "equal" or m == n - taken
        taken += m
    assert x[:n].tolist() == want
