"""The iteration timeline: closed checks (free communication, free compute, one bucket at the end of
backward), agreement with the synchronization level, shared hosts."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.layout import dense_ring_log
from zensim.memo import Memo
from zensim.net.costs import Costs
from zensim.net.profile import ExchangeCost, WorkCost
from zensim.net.replay import replay
from zensim.net.topology import ClusterSpec
from zensim.sim.run import dense_baseline, simulate
from zensim.train.buckets import DDPBuckets, PerTensor, Single
from zensim.train.iteration import simulate_iteration
from zensim.train.layers import LayerProfile, ParamTime
from zensim.train.tuner import DenseTuner
from zensim.train.syncs import Part, SyncLogs
from zensim.trace.format import TensorSpec, TraceWriter

GBPS = 1e9 / 8
FREE_LINKS = 1e30  # bytes/s: communication takes no time
# Times in the closed checks are multiples of 2^-20 s and bandwidths powers of two (bytes/s), so every
# sum and every bytes / bandwidth the timeline computes is exact in float64: the checks are equalities.
TICK = 2.0**-20
LINK = 2.0**30  # bytes/s


def profile(times: bool = True) -> LayerProfile:
    """Three dense parameters and an embedding (ready last), with or without compute."""
    f = TICK if times else 0.0
    params = (ParamTime("fc2.weight", 4096, 3, 100 * f, 3000 * f), ParamTime("fc1.weight", 8192, 2, 200 * f, 2000 * f),
              ParamTime("fc0.weight", 4096, 1, 100 * f, 1000 * f), ParamTime("emb.weight", 2000, 0, 10 * f, 500 * f))
    return LayerProfile(params, forward_s=4000 * f, backward_tail_s=100 * f, optimizer_s=1000 * f, batch_size=8)


def costs(machines: int, gpus: int, bandwidth: float = LINK) -> Costs:
    return Costs(ClusterSpec(machines, gpus, bandwidth, nvlink_bandwidth=bandwidth * 8), WorkCost.zero())


def test_free_communication_gives_the_compute_time() -> None:
    prof = profile()
    # one GPU: nothing to synchronize at all
    alone = simulate_iteration(prof, "dense-allreduce", costs(1, 1), iterations=4)
    assert alone.iteration_s == prof.compute_s
    assert alone.iteration_times_s == [prof.compute_s] * 4
    assert alone.exposed_comm_s == 0.0
    # a cluster with links that take no time
    free = simulate_iteration(prof, "dense-allreduce", costs(4, 2, FREE_LINKS), iterations=4)
    assert free.iteration_s == prof.compute_s and free.iteration_times_s == [prof.compute_s] * 4
    assert free.samples_per_s == 8 * 8 / prof.compute_s


@pytest.mark.parametrize("bucketing", [PerTensor(), DDPBuckets(0.01), Single()])
def test_free_compute_gives_the_sum_of_the_buckets_synchronizations(bucketing) -> None:
    prof = profile(times=False)
    c = costs(4, 1)
    rec = simulate_iteration(prof, "dense-allreduce", c, bucketing=bucketing)
    buckets = bucketing.assign(prof.params)
    alone = [replay(dense_ring_log(4, 1, sum(prof.params[i].numel for i in b.members), "flat"), c).makespan
             for b in buckets]
    assert rec.iteration_s == sum(alone)
    # ring all-reduce, partitions of equal size: 2 (n-1)/n M / b per bucket
    assert rec.iteration_s == sum(2 * 3 / 4 * b.nbytes / LINK for b in buckets)
    assert [b["sync_ms"] * 1e-3 for b in rec.buckets] == pytest.approx(alone, rel=1e-12)  # ms and back


def test_one_bucket_at_the_end_of_backward_adds_its_synchronization_to_the_compute() -> None:
    prof = profile()
    c = costs(4, 2)
    rec = simulate_iteration(prof, "dense-allreduce", c, bucketing=Single(), iterations=2)
    logs = SyncLogs(c.cluster, "zen", "dense-allreduce", None)
    sync = replay(logs.steps(Part(False, (), prof.numel), 0)[0].log, c).makespan
    assert sync > 0
    # the bucket is complete when the last gradient is; the tail of backward runs beside its sync
    expected = prof.forward_s + max(prof.backward_s, float(prof.ready_s[-1]) + sync) + prof.optimizer_s
    assert rec.iteration_s == expected and rec.iteration_times_s == [expected] * 2
    no_tail = LayerProfile(prof.params, prof.forward_s, 0.0, prof.optimizer_s, batch_size=8)
    rec = simulate_iteration(no_tail, "dense-allreduce", c, bucketing=Single())
    assert rec.iteration_s == no_tail.compute_s + sync


def test_buckets_overlap_backward() -> None:
    prof = profile()
    c = costs(4, 2, LINK / 8)
    single = simulate_iteration(prof, "dense-allreduce", c, bucketing=Single())
    layerwise = simulate_iteration(prof, "dense-allreduce", c, bucketing=PerTensor())
    assert prof.compute_s < layerwise.iteration_s < single.iteration_s
    first = layerwise.buckets[0]
    assert first["start_ms"] == pytest.approx(first["ready_ms"]) and first["end_ms"] < prof.backward_s * 1e3


@pytest.fixture
def trace_path(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "t.zt"
    with TraceWriter(path, [TensorSpec("emb.weight", 2000)], workers=8, iterations=2, batch_size=8) as w:
        for it, worker in itertools.product(range(2), range(8)):
            w.write(it, worker, "emb.weight", np.sort(rng.choice(2000, 100 + 20 * worker, replace=False)))
    return path


@pytest.mark.parametrize("scheme", ["zen", "sparcml", "omnireduce"])
@pytest.mark.parametrize("machines,gpus", [(4, 2), (8, 1)])
def test_a_sparse_tensor_alone_takes_what_the_synchronization_level_says(trace_path, scheme, machines, gpus) -> None:
    c = costs(machines, gpus)
    only = LayerProfile((ParamTime("emb.weight", 2000, 0, 0.0, 0.0),), forward_s=0.0)
    for it in (0, 1):
        rec = simulate_iteration(only, scheme, c, trace=trace_path, first_iteration=it)
        sim = simulate(trace_path, scheme, c, iteration=it)[0]
        assert rec.iteration_s == pytest.approx(sim.time_s, rel=1e-12)
        assert rec.buckets[0]["sync"] == f"{scheme}(1)"


def test_sparse_and_dense_tensors_and_the_dense_baseline(trace_path) -> None:
    prof = profile()
    c = costs(4, 2)
    rec = simulate_iteration(prof, "zen", c, trace=trace_path, iterations=3)
    parts = [b["sync"] for b in rec.buckets]
    assert "zen(1)" in parts and any(p.startswith("dense-allreduce") for p in parts)
    assert rec.dense_iteration_s is not None and rec.speedup_vs_dense == pytest.approx(rec.dense_iteration_s / rec.iteration_s)
    dense = simulate_iteration(prof, "dense-allreduce", c, trace=trace_path, iterations=3)
    assert dense.iteration_s == pytest.approx(rec.dense_iteration_s, rel=1e-12) and dense.speedup_vs_dense == 1.0
    fused = simulate_iteration(prof, "zen", c, trace=trace_path, sparse_buckets="fused", bucketing=Single())
    assert [b["sync"] for b in fused.buckets] == ["zen(4, 3 dense)"]  # the dense members in the scheme's run


def test_logs_reused_at_another_bandwidth_give_the_same_iterations(trace_path) -> None:
    """A scheme's message logs do not depend on bandwidth or latency: reusing them is exact, and logs of
    another scheme, cluster shape or trace are refused."""
    from zensim.trace.format import Trace

    prof = profile()
    with Trace.open(trace_path) as t:
        logs = SyncLogs(costs(4, 2).cluster, "zen", "zen", t)
        for bandwidth in (LINK, LINK / 4):
            c = costs(4, 2, bandwidth)
            fresh = simulate_iteration(prof, "zen", c, trace=t, iterations=2)
            reused = simulate_iteration(prof, "zen", c, trace=t, iterations=2, logs=logs)
            assert reused.iteration_times_s == fresh.iteration_times_s and reused.events == fresh.events
        assert sorted(it for part, it in logs.cache if part.sparse) == [0, 1]  # made once for both bandwidths
        for scheme, c in (("sparcml", costs(4, 2)), ("zen", costs(2, 4))):
            with pytest.raises(ConfigError, match="not the same synchronization"):
                simulate_iteration(prof, scheme, c, trace=t, logs=logs)
    with pytest.raises(ConfigError, match="not the same synchronization"):
        simulate_iteration(prof, "zen", costs(4, 2), trace=None, logs=logs)


def test_errors(trace_path) -> None:
    prof = profile()
    with pytest.raises(ConfigError, match="unknown scheme"):
        simulate_iteration(prof, "nope", costs(2, 1))
    with pytest.raises(ConfigError, match="8 workers, the cluster asks for 16"):
        simulate_iteration(prof, "zen", costs(8, 2), trace=trace_path)
    other = LayerProfile((ParamTime("x", 10, 0, 0.0, 0.0),), forward_s=0.0)
    with pytest.raises(ConfigError, match="'emb.weight' is not a parameter"):
        simulate_iteration(other, "zen", costs(2, 1), trace=trace_path)
    with pytest.raises(ConfigError, match="--iteration 5"):
        simulate_iteration(prof, "zen", costs(2, 1), trace=trace_path, first_iteration=5)


@pytest.mark.parametrize("shared", [False, True])
def test_the_step_remainder_and_the_hooks_work_add_exactly_what_the_profile_prices(trace_path, shared) -> None:
    """One bucket (the whole model) synchronized by ZEN as zensim_hook does, ending after backward: the
    step's other time before the forward and the hook's work before and after the scheme's run add their
    seconds to the iteration, once each; the default hook (a dense all-reduce) gets the step's only, and a
    bucket dense_above all-reduces gets no hook work. Both paths: the compiled loop, and shared hosts with a
    processor for each of a rank's streams (the general path)."""
    prof = profile()
    numel = prof.numel  # 18384
    figures = dict(step_other_s=300 * TICK, hook_before_s=40 * TICK, hook_before_element_s=TICK / 1024,
                   hook_after_s=20 * TICK, hook_after_element_s=TICK / 4096)
    priced = replace(prof, **figures)
    # two processors a rank: the hook's work before the run shares none with the backward's tail beside it
    c = Costs(ClusterSpec(4, 2, LINK, nvlink_bandwidth=LINK * 8), WorkCost.zero(), host_cores=16)
    hook = dict(trace=trace_path, sparse_buckets="fused", bucketing=Single(), iterations=2, shared_host=shared,
                dense_baseline=False)
    before, after = priced.hook_work_s(numel)
    assert (before, after) == (40 * TICK + numel * TICK / 1024, 20 * TICK + numel * TICK / 4096)
    plain = simulate_iteration(prof, "zen", c, **hook)
    sync = plain.buckets[0]["end_ms"] - plain.buckets[0]["ready_ms"]
    assert sync * 1e-3 > prof.backward_tail_s  # the bucket's run decides the end of the iteration
    added = simulate_iteration(priced, "zen", c, **hook)
    expected = [t + 300 * TICK + before + after for t in plain.iteration_times_s]
    assert added.iteration_times_s == pytest.approx(expected, rel=0, abs=1e-15)
    dense = dict(bucketing=Single(), iterations=2, shared_host=shared, dense_baseline=False)
    default = [simulate_iteration(p, "dense-allreduce", c, **dense).iteration_times_s for p in (prof, priced)]
    assert default[1] == pytest.approx([t + 300 * TICK for t in default[0]], rel=0, abs=1e-15)
    always = [simulate_iteration(p, "zen", c, dense_above=0.0, **hook).iteration_times_s for p in (prof, priced)]
    assert always[1] == pytest.approx([t + 300 * TICK for t in always[0]], rel=0, abs=1e-15)


@pytest.mark.parametrize("shared", [False, True])
def test_the_hooks_run_outside_the_stages_adds_exactly_its_seconds_a_bucket(trace_path, shared) -> None:
    """`hook_run_s` (zensim_hook's work in the scheme's run outside its stages) runs once before the run of
    each bucket a scheme synchronizes: one bucket ending after backward adds exactly its seconds to every
    iteration, beside the profile's hook work; 0 (the default) changes nothing, bit for bit; a bucket
    `dense_above` all-reduces gets none. Both paths, as the test above."""
    prof = replace(profile(), hook_before_s=40 * TICK, hook_after_s=20 * TICK)
    c = Costs(ClusterSpec(4, 2, LINK, nvlink_bandwidth=LINK * 8), WorkCost.zero(), host_cores=16)
    hook = dict(trace=trace_path, sparse_buckets="fused", bucketing=Single(), iterations=2, shared_host=shared,
                dense_baseline=False)
    plain = simulate_iteration(prof, "zen", c, **hook)
    assert simulate_iteration(prof, "zen", c, hook_run_s=0.0, **hook).iteration_times_s == plain.iteration_times_s
    added = simulate_iteration(prof, "zen", c, hook_run_s=700 * TICK, **hook)
    assert added.iteration_times_s == pytest.approx([t + 700 * TICK for t in plain.iteration_times_s], rel=0, abs=1e-15)
    always = [simulate_iteration(prof, "zen", c, dense_above=0.0, hook_run_s=s, **hook).iteration_times_s
              for s in (0.0, 700 * TICK)]
    assert always[1] == always[0]


def test_ranks_sharing_a_hosts_processors_slow_down_together() -> None:
    prof = profile()
    free = Costs(ClusterSpec(4, 1, FREE_LINKS), WorkCost.zero(), host_cores=2)
    alone = simulate_iteration(prof, "dense-allreduce", free, iterations=2)
    shared = simulate_iteration(prof, "dense-allreduce", free, iterations=2, shared_host=True)
    assert alone.iteration_s == pytest.approx(prof.compute_s, rel=1e-12)
    # 4 ranks' compute on 2 processors: each at half speed, all in step
    assert shared.iteration_s == pytest.approx(2 * prof.compute_s, rel=1e-12)
    assert [b["ready_ms"] for b in shared.buckets] == pytest.approx([2 * b["ready_ms"] for b in alone.buckets])


def test_fixed_work_costs_apply_to_every_piece_of_the_schemes_work_and_once_to_a_fused_collective(trace_path) -> None:
    """A dense bucket's all-reduce is one kernel per GPU and collective (NCCL's): with free links and
    compute and nothing per element, DDP's iteration is exactly the launches of its buckets' collectives,
    one each flat, three in ZEN's layout (reduce-scatter in the machine, all-reduce across, all-gather);
    `--dense-work profile` pays one per piece, the schemes' own work always does."""
    prof = profile()
    launch = WorkCost(dict(WorkCost.zero().per_element), {op: 1e-3 for op in WorkCost.zero().per_element})
    buckets = len(DDPBuckets().assign(prof.params))
    for machines, gpus, collectives in ((4, 1, 1), (4, 2, 3)):
        free = Costs(ClusterSpec(machines, gpus, FREE_LINKS, nvlink_bandwidth=FREE_LINKS), launch)
        rec = simulate_iteration(profile(times=False), "dense-allreduce", free)
        assert rec.iteration_s == pytest.approx(buckets * collectives * 1e-3, rel=1e-12)
        pieces = simulate_iteration(profile(times=False), "dense-allreduce", free, dense_work="profile")
        assert pieces.iteration_s > rec.iteration_s + 1e-3
    cluster = ClusterSpec(4, 2, 10 * GBPS, nvlink_bandwidth=100 * GBPS)
    plain = Costs(cluster, WorkCost.zero())
    fixed = Costs(cluster, launch)
    dense = [simulate_iteration(prof, "dense-allreduce", c) for c in (plain, fixed)]
    assert dense[0].iteration_s < dense[1].iteration_s <= dense[0].iteration_s + buckets * 3e-3 + 1e-12
    priced = simulate_iteration(prof, "dense-allreduce", fixed, dense_work="profile")
    assert priced.iteration_s > dense[1].iteration_s + 1e-3
    sparse = [simulate_iteration(prof, "zen", c, trace=trace_path, dense_baseline=False) for c in (plain, fixed)]
    assert sparse[1].iteration_s > sparse[0].iteration_s + 1e-3  # the scheme's own work pays them


def test_the_dense_algorithm_is_chosen_per_bucket_by_size() -> None:
    """With free compute the iteration is the sum of the buckets' synchronizations; under `auto` each
    bucket takes the faster of the ring and recursive doubling alone, so the sum of the minima: small
    buckets doubling (fewer latencies), the large one the ring (fewer bytes); forced, one algorithm.
    (8 x 1: every rank ends each bucket at once, so buckets do not overlap and the sum is exact.)"""
    big = ParamTime("fc9.weight", 1 << 20, 4, 0.0, 0.0)
    prof = LayerProfile(profile(times=False).params + (big,), forward_s=0.0)
    c = Costs(ClusterSpec(8, 1, LINK, nic_latency=2.0**-12), WorkCost.zero())
    buckets = PerTensor().assign(prof.params)
    logs = SyncLogs(c.cluster, "flat", "dense-allreduce", None)
    alone = {name: [replay(logs.dense(b.nbytes // 4, name), c).makespan for b in buckets]
             for name in ("ring", "doubling")}
    auto = simulate_iteration(prof, "dense-allreduce", c, bucketing=PerTensor())
    assert auto.iteration_s == pytest.approx(sum(map(min, alone["ring"], alone["doubling"])), rel=1e-12)
    picked = ["dense-doubling" if d < r else "dense-allreduce" for r, d in zip(alone["ring"], alone["doubling"])]
    assert [b["sync"].split("(")[0] for b in auto.buckets] == picked
    assert set(picked) == {"dense-doubling", "dense-allreduce"}
    for name in ("ring", "doubling"):
        forced = simulate_iteration(prof, "dense-allreduce", c, bucketing=PerTensor(), dense_algorithm=name)
        assert forced.iteration_s == pytest.approx(sum(alone[name]), rel=1e-12)
        assert forced.iteration_s > auto.iteration_s
    with pytest.raises(ConfigError, match="--dense-algorithm tree"):
        simulate_iteration(prof, "dense-allreduce", c, dense_algorithm="tree")


def test_the_tuners_kept_times_follow_every_field_of_the_costs() -> None:
    """Candidates' times are kept by costs; costs that differ only in a field the key once
    left out (the exchange's own CPU) are timed afresh, not served the other costs' times."""
    plain = Costs(ClusterSpec(8, 1, LINK, nic_latency=2.0**-12), WorkCost.zero())
    priced = replace(plain, exchange=ExchangeCost(per_stage=1e-3, per_byte=1e-8))
    logs = SyncLogs(plain.cluster, "flat", "dense-allreduce", None)
    kept = Memo()  # one memo for both, as a run hands to its timelines
    first, second = DenseTuner(logs, plain, None, kept=kept), DenseTuner(logs, priced, None, kept=kept)
    first(4096), second(4096)
    for name in ("ring", "doubling"):
        assert second.times[4096][name] == replay(logs.dense(4096, name), priced, "fifo").makespan
        assert second.times[4096][name] > first.times[4096][name]


def test_the_kept_dense_baselines_follow_every_field_of_the_costs() -> None:
    """A memo of dense baselines shared by costs that differ only in the exchange's own CPU (a field
    the module cache's key once left out) gives each its own baseline, as without the memo."""
    plain = Costs(ClusterSpec(8, 1, LINK, nic_latency=2.0**-12), WorkCost.zero())
    priced = replace(plain, exchange=ExchangeCost(per_stage=1e-3, per_byte=1e-8))
    kept = Memo()
    shared = [dense_baseline(c, 4096, "fifo", "flat", memo=kept) for c in (plain, priced, plain)]
    assert shared == [dense_baseline(c, 4096, "fifo", "flat") for c in (plain, priced, plain)]
    assert shared[1] > shared[0] and len(kept) == 2


def test_a_sparse_schemes_dense_buckets_choose_as_dense_ddp_does(trace_path) -> None:
    """The choice depends on a dense part's size and the cluster only: the zen run's dense bucket and
    dense DDP's of the same size take the same algorithm, and forcing the ring restores the ring in both."""
    prof = profile()
    c = Costs(ClusterSpec(4, 2, LINK, nvlink_bandwidth=LINK * 8, nic_latency=2.0**-12), WorkCost.zero())
    zen = simulate_iteration(prof, "zen", c, trace=trace_path, bucketing=PerTensor())
    dense = simulate_iteration(prof, "dense-allreduce", c, bucketing=PerTensor())
    assert [b["sync"] for b in zen.buckets[:3]] == [b["sync"] for b in dense.buckets[:3]] == ["dense-doubling(1)"] * 3
    ring = simulate_iteration(prof, "zen", c, trace=trace_path, bucketing=PerTensor(), dense_algorithm="ring")
    assert [b["sync"] for b in ring.buckets[:3]] == ["dense-allreduce(1)"] * 3
    assert ring.dense_iteration_s > zen.dense_iteration_s and ring.iteration_s > zen.iteration_s
