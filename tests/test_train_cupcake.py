"""Cupcake's optimal fusion (thesis Algorithm 5.1) and its DP twin against brute force, and the chain timeline."""

import numpy as np
import pytest

from zensim.train.fusion.chain import Affine, Chain, close_at
from zensim.train.fusion.cupcake import SearchLimit, brute_force, optimal_fusion, optimal_fusion_dp


def random_chain(rng, n):
    """A chain with random backward profile and random alpha/beta, spanning compute- to comm-bound."""
    backward = rng.exponential(1e-3, n) * rng.choice([0.01, 1.0, 10.0])
    sizes = rng.lognormal(10, 2, n)
    scale = sizes.mean()
    compress = Affine(rng.exponential(1e-3) * rng.choice([0.0, 1.0, 10.0]), rng.exponential(1e-3 / scale))
    comm = Affine(rng.exponential(1e-3) * rng.choice([0.0, 1.0, 10.0]),
                  rng.exponential(1e-3 / scale) * rng.choice([0.1, 1.0, 10.0]))
    return Chain(backward, sizes, compress, comm, forward=rng.exponential(1e-3))


@pytest.mark.parametrize("n", range(1, 13))
def test_optimal_fusion_equals_brute_force(n):
    rng = np.random.default_rng(1000 + n)
    for _ in range(12):
        chain = random_chain(rng, n)
        best = brute_force(chain)
        for found in (optimal_fusion(chain), optimal_fusion(chain, dominance=False, bootstrap=False),
                      optimal_fusion_dp(chain)):
            assert found.time == pytest.approx(best.time, rel=1e-12, abs=0)
            assert chain.time(found.ends) == found.time


def test_thesis_algorithm_and_dp_agree_on_larger_models():
    rng = np.random.default_rng(7)
    for n in (20, 40):
        for share in (0.3, 1.0, 3.0):  # communication / backward
            b = rng.exponential(3e-4, n)
            x = rng.lognormal(12, 1.5, n)
            chain = Chain(b, x, Affine(2.5e-4, 0.02 * b.sum() / x.sum()), Affine(5e-5, share * b.sum() / x.sum()))
            assert optimal_fusion(chain).time == pytest.approx(optimal_fusion_dp(chain).time, rel=1e-12)


def test_no_communication_fuses_everything_and_free_compression_goes_layerwise():
    rng = np.random.default_rng(3)
    b, x = rng.exponential(1e-3, 9), rng.lognormal(10, 1, 9)
    no_comm = Chain(b, x, Affine(1e-3, 1e-9), Affine(0.0, 0.0), forward=0.01)
    assert optimal_fusion(no_comm).ends == (9,)
    assert optimal_fusion(no_comm).time == pytest.approx(0.01 + b.sum() + 1e-3 + 1e-9 * x.sum())
    # free compression and per-message cost alpha_g = 0: layer-wise sending can never lose
    free = Chain(b, x, Affine(0.0, 0.0), Affine(0.0, 1e-9))
    assert optimal_fusion(free).time == pytest.approx(free.time(free.layerwise()))


def test_chain_timeline_closed_forms():
    chain = Chain([1.0, 2.0, 3.0], [10.0, 20.0, 30.0], Affine(0.5, 0.01), Affine(1.0, 0.1), forward=4.0)
    one = chain.spans((3,))
    # one group: backward 6, compress 0.5 + 0.6, communicate 1 + 6
    assert one.iteration == pytest.approx(4 + 6 + 1.1 + 7)
    lw = chain.spans((1, 2, 3))
    # compute stream: b0 1 | h 0.6 | b1 2 | h 0.7 | b2 3 | h 0.8
    assert lw.compressed.tolist() == pytest.approx([1.6, 4.3, 8.1])
    # comm: [1.6, 3.6], [4.3, 7.3], [8.1, 12.1]
    assert lw.comm_end.tolist() == pytest.approx([3.6, 7.3, 12.1])
    assert lw.waiting.tolist() == pytest.approx([1.6, 0.7, 0.8])
    with pytest.raises(ValueError):
        chain.spans((2, 2, 3))
    with pytest.raises(ValueError):
        chain.spans((1, 2))


def test_close_at_and_strawmen():
    assert close_at([1, 1, 1, 1], 0) == (1, 2, 3, 4)
    assert close_at([1, 1, 1, 1], 4) == (4,)
    assert close_at([3, 1, 1, 2, 5], 3) == (1, 4, 5)
    chain = Chain(np.ones(7), np.ones(7), Affine(0, 0), Affine(0, 0))
    assert chain.even(3) == (2, 5, 7)
    assert chain.even(100) == chain.layerwise()


def test_node_limit_stops_the_search():
    chain = random_chain(np.random.default_rng(5), 12)
    nodes = optimal_fusion(chain, dominance=False, bootstrap=False).nodes
    assert optimal_fusion(chain, dominance=False, bootstrap=False, node_limit=nodes).nodes == nodes
    with pytest.raises(SearchLimit):
        optimal_fusion(chain, dominance=False, bootstrap=False, node_limit=nodes - 1)
