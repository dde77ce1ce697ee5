"""Plans: stage counts of each pattern for any n, and every transfer well-formed."""

from __future__ import annotations

import pytest

from zensim.schemes.plans import PATTERNS, Binomial, full


def _levels(n):
    return n.bit_length() - 1


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 8, 13, 16])
def test_stage_counts(n):
    """Ring n-1; Hierarchy log2 p (+ fold and unfold when n is not a power of two); P2P one."""
    extra = 0 if n & (n - 1) == 0 else 1
    assert len(PATTERNS["ring"].allreduce(n, False)) == n - 1
    assert len(PATTERNS["hierarchy"].allreduce(n, False)) == _levels(n) + 2 * extra
    assert len(PATTERNS["hierarchy"].reduce_scatter(n)) == _levels(n) + extra
    assert len(PATTERNS["p2p"].allgather(n)) == 1
    assert len(Binomial().allgather(n)) == (n - 1).bit_length()


@pytest.mark.parametrize("n", [2, 3, 5, 7, 12])
@pytest.mark.parametrize("pattern", ["ring", "hierarchy", "p2p"])
def test_reduce_scatter_then_allgather_reaches_everyone(n, pattern):
    """Symbolically: after step 1 each item is complete at exactly one rank; after step 2 at all."""
    p = PATTERNS[pattern]
    have = [[1 << r for _ in range(n)] for r in range(n)]  # have[rank][item] = mask of contributions
    for stage in p.reduce_scatter(n):
        msgs = [(t, have[t.src][t.item]) for t in stage]
        for t, mask in msgs:
            assert mask & t.origins == t.origins, "sender lacks what it sends"
            have[t.dst][t.item] |= t.origins
    complete = [[r for r in range(n) if have[r][j] == full(n)] for j in range(n)]
    assert all(len(c) == 1 for c in complete)
    for stage in p.allgather(n):
        for t in stage:
            assert have[t.src][t.item] == full(n)
        for t in stage:
            have[t.dst][t.item] = full(n)
    assert all(m == full(n) for row in have for m in row)
