"""Fusion strategies on the iteration timeline: per-tensor and per-bucket selection on a dense trace,
compression on the compute stream (closed checks), the strategies' buckets, errors."""

from __future__ import annotations

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.profile import WorkCost
from zensim.net.topology import ClusterSpec
from zensim.sparse.partition import even_boundaries
from zensim.sparsify import target_count
from zensim.trace.format import Trace
from zensim.train.buckets import PerTensor
from zensim.train.fusion.chain import Affine
from zensim.train.fusion.schedule import Groups, Strategy, run_strategy
from zensim.train.fusion.selection import Selection
from zensim.train.fusion.strategies import Compression
from zensim.train.iteration import simulate_iteration
from zensim.train.layers import LayerProfile, ParamTime
from zensim.train.syncs import DENSE

TRACE = "traces/digits-cnn-16w.zt"
GBPS = 1e9 / 8


def digits_profile(scale: float = 1.0) -> LayerProfile:
    """The digits CNN's parameters in gradient-ready order (reverse definition) with made-up times."""
    with Trace.open(TRACE) as t:
        params = tuple(ParamTime(x.name, x.numel, i, 1e-5 * scale, (2e-5 + x.numel * 1e-8) * scale)
                       for i, x in reversed(list(enumerate(t.tensors))))
    return LayerProfile(params, 1e-4 * scale, 3e-6 * scale, 2e-5 * scale, batch_size=16, workload="digits-cnn")


def stable_topk(values: np.ndarray, density: float) -> np.ndarray:
    """Positions of the k largest magnitudes, ties to the lowest position (the sparsifier's rule)."""
    k = target_count(density, len(values))
    return np.sort(np.argsort(-np.abs(values), kind="stable")[:k])


def gradients(t: Trace, names, it: int, w: int) -> list[np.ndarray]:
    return [t.dense(it, w, n) for n in names]


def ready_order(t: Trace) -> tuple[list[str], np.ndarray]:
    """The trace's tensors in gradient-ready order and their offsets in the concatenation."""
    names = [x.name for x in t.tensors][::-1]
    return names, np.concatenate([[0], np.cumsum([t.tensors[t.tensor_index(n)].numel for n in names])])


def expected_chunk(vector: np.ndarray, lo: int, hi: int, offsets: np.ndarray, unit: str, density: float) -> np.ndarray:
    """What a GPU holding vector[lo:hi] keeps: one top-k over it, or one per tensor's piece of it."""
    if unit == "bucket":
        return stable_topk(vector[lo:hi], density)
    cuts = np.unique(np.clip(offsets, lo, hi)) - lo
    return np.concatenate([stable_topk(vector[lo:hi][a:b], density) + a for a, b in zip(cuts[:-1], cuts[1:])])


@pytest.mark.parametrize("unit", ["bucket", "tensor"])
@pytest.mark.parametrize("layout", ["flat", "zen"])
def test_selection_is_the_sparsifier_on_what_each_gpu_holds(layout, unit):
    """Flat: each GPU's own gradient; ZEN's layout: GPU l of machine m holds shard l of m's summed gradient."""
    density, cluster = (0.01, ClusterSpec(16, 1, 25 * GBPS)) if layout == "flat" else (0.1, ClusterSpec(2, 8, 25 * GBPS))
    sel = Selection(unit, "topk", density)
    g = cluster.gpus_per_machine
    with Trace.open(TRACE) as t:
        names, offsets = ready_order(t)
        numel = int(offsets[-1])
        prep = sel.prepared(t, names, 3, cluster, layout, values=True)
        bounds = even_boundaries(numel, g)
        assert list(prep.sizes) == list(np.diff(bounds))
        missed = 0
        for m in range(cluster.machines):
            vector = sum(np.concatenate(gradients(t, names, 3, m * g + local)) for local in range(g))
            kept = []
            for local in range(g):
                lo, hi = int(bounds[local]), int(bounds[local + 1])
                want = expected_chunk(vector, lo, hi, offsets, unit, density)
                chunk = prep.groups[local][m] if layout == "zen" else prep.groups[0][m]
                assert np.array_equal(chunk.indices, want)
                assert np.allclose(chunk.values, vector[lo:hi][want], rtol=1e-6)
                kept.append(want + lo)
            kept = np.concatenate(kept)
            missed += sum(not np.any((kept >= lo) & (kept < hi)) for lo, hi in zip(offsets[:-1], offsets[1:]))
    m = sel.missing_of()
    assert (m.missing, m.tensors) == (missed, 8 * cluster.machines)
    if unit == "tensor":
        assert m.missing == 0  # every tensor keeps at least one element of its own
    elif layout == "flat":
        assert m.missing > 0   # one top-1% over the bucket leaves small tensors out


def test_compression_on_the_compute_stream_adds_to_compute_when_links_are_free():
    prof = digits_profile()
    costs = Costs(ClusterSpec(16, 1, 1e30), WorkCost.zero())
    h = Affine(3e-4, 1e-9)
    comp = Compression(density=0.05, encode=h)
    per_tensor = sum(h(p.nbytes) for p in prof.params)
    for name, extra in (("layerwise", per_tensor), ("behind", h(sum(p.nbytes for p in prof.params)))):
        rec = run_strategy(name, prof, "agsparse-ring", costs, compression=comp, trace=TRACE, iterations=2,
                           layout="flat", dense_baseline=False)
        assert rec.compression_s == pytest.approx(extra, rel=1e-12)
        # free links: the iteration is compute plus the compression that delays backward, nothing else
        assert rec.iteration_s == pytest.approx(prof.compute_s + extra, rel=1e-12)
    # DDP's default buckets hold the whole small model: behind selects once, over one bucket
    assert len(rec.buckets) == 1 and rec.strategy["missing_rate"] > 0


def test_strategies_buckets_and_the_dense_baseline():
    prof = digits_profile(scale=10.0)
    costs = Costs.of(ClusterSpec.parse(16, 1, "25Gbps", "5us"))
    common = dict(trace=TRACE, iterations=2, layout="flat")
    dense = simulate_iteration(prof, DENSE, costs, iterations=2, layout="flat")
    recs = {s: run_strategy(s, prof, "agsparse-ring", costs, dense=dense, **common)
            for s in ("none", "layerwise", "behind", "safusion", "cupcake")}
    assert recs["none"].iteration_s == dense.iteration_s and recs["none"].strategy["name"] == "none"
    assert len(recs["layerwise"].buckets) == len(prof.params)
    assert recs["layerwise"].strategy["missing_rate"] == 0 and recs["safusion"].strategy["missing_rate"] == 0
    for s in ("safusion", "cupcake"):
        g = recs[s].strategy["fitted_g"]
        assert g["alpha_s"] > 0 and g["beta_s_per_byte"] > 0
    # the optimal fusion (one all-gather's startup instead of eight) is ahead of layer-wise selection
    assert recs["cupcake"].iteration_s < recs["layerwise"].iteration_s
    # the fusion degree of sparsification-behind fusion: 0 = a bucket per tensor, 1 = one bucket
    for degree, buckets in ((0.0, len(prof.params)), (1.0, 1)):
        rec = run_strategy("behind", prof, "agsparse-ring", costs, degree=degree, dense=dense, **common)
        assert len(rec.buckets) == buckets
    per_tensor = run_strategy("none", prof, "agsparse-ring", costs, degree=0.0, dense=dense, **common)
    assert per_tensor.strategy["groups"] == len(prof.params)
    assert per_tensor.speedup_vs_dense == pytest.approx(dense.iteration_s / per_tensor.iteration_s, rel=1e-12)


def test_groups_cover_the_profile_in_order():
    prof = digits_profile()
    n = len(prof.params)
    buckets = Groups("x", (3, 5, n)).assign(prof.params)
    assert [b.members for b in buckets] == [tuple(range(0, 3)), tuple(range(3, 5)), tuple(range(5, n))]
    assert sum(b.nbytes for b in buckets) == sum(p.nbytes for p in prof.params)
    assert [b.members for b in Groups("x", range(1, n + 1)).assign(prof.params)] == \
        [b.members for b in PerTensor().assign(prof.params)]
    with pytest.raises(ValueError):
        Groups("x", (3,)).assign(prof.params)


def test_errors():
    prof = digits_profile()
    costs = Costs.of(ClusterSpec.parse(16, 1, "25Gbps"))
    with pytest.raises(ConfigError, match="--strategy"):
        Strategy("fastest")
    with pytest.raises(ConfigError, match="only for the behind"):
        Strategy("cupcake", bucket_mb=4)
    with pytest.raises(ConfigError, match="--sparsifier"):
        Strategy("behind", sparsifier="exdyna")
    with pytest.raises(ConfigError, match="give one"):
        run_strategy("behind", prof, "agsparse-ring", costs, bucket_mb=1, degree=0.5, trace=TRACE)
    with pytest.raises(ConfigError, match="--fusion-degree"):
        run_strategy("behind", prof, "agsparse-ring", costs, degree=1.5, trace=TRACE)
    with pytest.raises(ConfigError, match="--bucketing"):
        simulate_iteration(prof, "agsparse-ring", costs, trace=TRACE, bucketing=PerTensor(), strategy=Strategy("behind"))
