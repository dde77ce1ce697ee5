"""SAFusion's buffers (eqs. 1-3, inter-worker alignment) and the tensor missing rate of sparsification-behind fusion."""

import numpy as np
import pytest

from zensim.train.fusion.missing import ErrorFeedbackMissing, bucket_topk, fusion_buckets, missing_rate
from zensim.train.fusion.safusion import adaptive, aligned, fixed_capacity, merge_long_tail, size_by_overlap


def affine_comm(alpha, beta, sizes):
    cum = np.concatenate([[0.0], np.cumsum(sizes)])
    return lambda lo, hi: alpha + beta * (cum[hi] - cum[lo])


def test_aligned_buffers_hold_ceil_L_over_M():
    assert aligned(6, 2) == (3, 6)          # the paper's Fig. 8: L = 6, M = 2, N_i = 3
    assert aligned(7, 3) == (3, 6, 7)
    assert aligned(4, 10) == (1, 2, 3, 4)


def test_fixed_capacity_differs_between_workers():
    a = fixed_capacity([3, 3, 3, 1], cap=6)
    b = fixed_capacity([1, 1, 1, 1], cap=6)
    assert a == (2, 4) and b == (4,)
    with pytest.raises(ValueError):
        fixed_capacity([1], 0)


@pytest.mark.parametrize("seed", range(8))
def test_eq1_each_buffer_is_the_smallest_that_covers_the_previous_communication(seed):
    rng = np.random.default_rng(seed)
    L = int(rng.integers(5, 60))
    fuse = rng.exponential(1e-3, L)
    sizes = rng.lognormal(8, 1.5, L)
    comm = affine_comm(rng.exponential(1e-3), rng.exponential(1e-3) / sizes.mean(), sizes)
    ends = size_by_overlap(fuse, comm)
    cum = np.concatenate([[0.0], np.cumsum(fuse)])
    starts = (0,) + ends[:-1]
    assert ends[-1] == L and all(b > a for a, b in zip(starts, ends))
    for i in range(1, len(ends) - 1):       # the last buffer may just be what was left
        lo, hi = starts[i], ends[i]
        need = comm(starts[i - 1], lo)
        assert cum[hi] - cum[lo] >= need
        assert hi - lo == 1 or cum[hi - 1] - cum[lo] < need
    # eq. 2: the first buffer beats layer-wise sending of its tensors, and one tensor fewer would not
    first = ends[0]
    if first > 1:
        layerwise = sum(comm(l, l + 1) for l in range(first))
        assert cum[first] + comm(0, first) < layerwise
        assert first == 2 or cum[first - 1] + comm(0, first - 1) >= sum(comm(l, l + 1) for l in range(first - 1))


def test_eq3_merges_the_long_tail():
    # buffers of one tensor each; fusion time 1 per tensor, communication 2 per buffer
    fuse = [1.0] * 6
    comm = lambda lo, hi: 2.0  # noqa: E731
    # F of buffers 2..6 = 5; cumulative comm 2, 4, 6 > 5 at M' = 3: buffers 3..6 become one
    assert merge_long_tail((1, 2, 3, 4, 5, 6), fuse, comm) == (1, 2, 6)
    # communication that hides under fusion is left alone
    assert merge_long_tail((1, 2, 3, 4, 5, 6), fuse, lambda lo, hi: 0.5) == (1, 2, 3, 4, 5, 6)
    assert adaptive(fuse, lambda lo, hi: 0.5)[-1] == 6


def test_missing_rate_of_the_papers_example():
    # SAFusion Fig. 2: G4, G3, G2, G1 of four elements, density 25%, two buffers of two tensors
    g4, g3 = np.array([0.9, 0.8, 0.1, 0.2]), np.array([0.3, 0.1, 0.2, 0.1])
    g2, g1 = np.array([0.6, 0.5, 0.1, 0.3]), np.array([0.2, 0.1, 0.3, 0.4])
    masks = bucket_topk([g4, g3, g2, g1], (2, 4), 0.25)
    assert [int(m.sum()) for m in masks] == [2, 0, 2, 0]      # G3 and G1 go missing
    assert missing_rate([g4, g3, g2, g1], 0.5, 0.25) == 0.5
    assert missing_rate([g4, g3, g2, g1], 0.0, 0.25) == 0.0   # layer-wise: every tensor keeps one


def test_missing_rate_grows_with_fusion_degree_on_skewed_tensors():
    rng = np.random.default_rng(0)
    grads = [rng.normal(0, scale, size) for scale, size in zip(np.logspace(-3, 0, 40), rng.integers(10, 2000, 40))]
    rates = [missing_rate(grads, d, 0.01) for d in np.linspace(0, 1, 11)]
    assert rates[0] == 0.0 and rates[-1] > 0.5
    counts = [len(fusion_buckets([g.size for g in grads], d)) for d in np.linspace(0, 1, 11)]
    assert counts[0] == 40 and counts[-1] == 1 and all(a >= b for a, b in zip(counts, counts[1:]))
    with pytest.raises(ValueError):
        fusion_buckets([1, 2], 1.5)


def test_error_feedback_brings_missed_tensors_back():
    big = np.zeros(100)
    big[:2] = 1.0
    grads = [big, np.full(100, 0.01)]
    ef = ErrorFeedbackMissing([100, 100], degree=1.0, density=0.01)   # two elements of 200 per iteration
    counts = np.array([ef.step(grads) for _ in range(150)])
    # the small tensor's residual reaches the big one's 1.0 at iteration 100 and is then selected
    assert (counts[:99] == [2, 0]).all()
    assert counts[99:, 1].sum() > 0 and (counts.sum(axis=1) == 2).all()


def test_fusion_degree_by_tensor_count():
    assert fusion_buckets([5, 1, 1, 1, 1], 0.0, "tensors") == (1, 2, 3, 4, 5)
    assert fusion_buckets([5, 1, 1, 1, 1], 1.0, "tensors") == (5,)
    assert fusion_buckets([5, 1, 1, 1, 1], 0.5, "tensors") == (2, 4, 5)      # M = 3 buffers of ceil(5/3) = 2
    assert fusion_buckets([5, 1, 1, 1, 1], 0.2, "bytes") == (1, 3, 5)        # cap 1.8 elements
    with pytest.raises(ValueError):
        fusion_buckets([1], 0.5, "layers")
