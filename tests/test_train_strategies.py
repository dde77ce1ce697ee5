"""Fusion strategies on one chain timeline: closed cases, Cupcake never behind the fixed groupings, DDP buckets."""

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.net.topology import ClusterSpec
from zensim.train.fusion.chain import Affine
from zensim.train.fusion.shapes import MODELS, estimate
from zensim.train.fusion.base import ddp_buckets
from zensim.train.fusion.conformance import check_strategy
from zensim.train.fusion.registry import STRATEGIES
from zensim.train.fusion.strategies import Compression, Workload, dense_allreduce, plan


def workload(seed=0, n=40):
    rng = np.random.default_rng(seed)
    return Workload("w", rng.lognormal(14, 2, n), rng.exponential(2e-3, n), 0.05, 32)


def test_one_gpu_iteration_is_compute_plus_compression():
    w = workload()
    c = ClusterSpec(1, 1, 25e9 / 8, nic_latency=5e-6, nvlink_latency=2e-6)
    comp = Compression(encode=Affine(1e-4, 0.0), decode_beta=0.0)
    assert plan("none", w, c, comp).iteration == pytest.approx(w.forward + w.backward.sum())
    lw = plan("layerwise", w, c, comp)
    assert lw.iteration == pytest.approx(w.forward + w.backward.sum() + 1e-4 * len(w.sizes))
    assert plan("cupcake", w, c, comp).iteration == pytest.approx(w.forward + w.backward.sum() + 1e-4)


@pytest.mark.parametrize("seed", range(3))
def test_cupcake_is_never_behind_other_groupings_of_its_chain(seed):
    w, c, comp = workload(seed), ClusterSpec(16, 8, 25e9 / 8, nic_latency=5e-6, nvlink_latency=2e-6), Compression()
    best = plan("cupcake", w, c, comp)
    for s in ("layerwise", "behind"):
        assert best.iteration <= plan(s, w, c, comp).iteration + 1e-15
    for s in STRATEGIES:
        p = plan(s, w, c, comp)
        assert p.samples_per_s == pytest.approx(32 * 128 / p.iteration)
    with pytest.raises(ConfigError, match="--strategy fastest: unknown fusion strategy"):
        plan("fastest", w, c, comp)


def test_ddp_buckets_and_allreduce_cost():
    MB = 1 << 20
    assert ddp_buckets([0.5 * MB, 0.6 * MB, 10 * MB, 20 * MB, 1 * MB]) == (2, 4, 5)
    ar = dense_allreduce(ClusterSpec(16, 8, 25e9 / 8, nvlink_bandwidth=300e9))
    assert ar(1e9) == pytest.approx(2 * 15 / 16 * 1e9 / (25e9 / 8) + 2 * 7 / 8 * 1e9 / 300e9)


def test_shape_estimates():
    bert = MODELS["bert-base"]()
    assert sum(t.numel for t in bert) == pytest.approx(108.9e6, rel=0.01)   # BERT-base without pooler/type emb.
    e = estimate(bert, tokens=4096, flops=1e12, efficiency=1.0)
    assert e.backward.sum() == pytest.approx(2 * e.forward)
    assert e.names[0] == "ln_f.b" and e.names[-1] == "wte"


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_registered_strategy_passes_the_checks(name):
    """The fusion registry's conformance check, over every registered strategy."""
    check_strategy(name)


def test_a_strategy_registered_by_its_line_is_planned(monkeypatch):
    """A strategy defined in its own module and given its registry line is planned by name (and
    reaches the iteration timeline's Strategy): fixed halves of the tensors, compressed per group."""
    from zensim.train.fusion import registry
    from zensim.train.fusion.base import FusionStrategy
    from zensim.train.fusion.schedule import Strategy

    def halves(f):
        chain = f.chain()
        return chain, tuple(sorted({max(1, chain.n // 2), chain.n}))

    monkeypatch.setitem(registry.STRATEGIES, "halves", FusionStrategy("halves", "two groups", halves, "bucket"))
    check_strategy("halves")
    w = workload()
    assert plan("halves", w, ClusterSpec(4, 2, 25e9 / 8), Compression()).ends == (20, 40)
    assert Strategy("halves").selection.unit == "bucket"
