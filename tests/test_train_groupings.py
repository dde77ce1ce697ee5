"""Fusion strategies' groups as bucketings of the iteration timeline (zensim.train.timeline)."""

import pytest

from zensim.net.costs import Costs
from zensim.net.topology import ClusterSpec
from zensim.train.fusion.groupings import Groups, strategy_bucketing
from zensim.train.fusion.strategies import Compression
from zensim.train.iteration import simulate_iteration
from zensim.train.layers import load_layers

PROFILE = "traces/layers/gpt-topk-b8.v100.layers.json"
TRACE = "traces/gpt-topk-16w.zt"


def test_groups_cover_the_profile_in_order():
    prof = load_layers(PROFILE)
    n = len(prof.params)
    buckets = Groups("x", (3, 10, n)).assign(prof.params)
    assert [b.members for b in buckets] == [tuple(range(0, 3)), tuple(range(3, 10)), tuple(range(10, n))]
    assert sum(b.nbytes for b in buckets) == sum(p.nbytes for p in prof.params)
    with pytest.raises(ValueError):
        Groups("x", (3,)).assign(prof.params)


def test_strategies_on_the_iteration_timeline():
    prof = load_layers(PROFILE)
    cluster = ClusterSpec.parse(16, 1, "25Gbps", "5us")
    times = {}
    for s in ("layerwise", "cupcake"):
        bucketing = strategy_bucketing(s, prof, cluster, Compression())
        rec = simulate_iteration(prof, "agsparse-ring", Costs.of(cluster), trace=TRACE, bucketing=bucketing,
                                 sparse_buckets="fused", dense_baseline=False)
        times[s] = rec.iteration_s
    assert len(strategy_bucketing("layerwise", prof, cluster, Compression()).ends) == len(prof.params)
    # on this small model the optimal fusion is one group: one all-gather instead of 28
    assert times["cupcake"] < times["layerwise"]
