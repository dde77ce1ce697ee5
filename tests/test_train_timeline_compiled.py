"""The iteration timeline's compiled path (one zensim.net.fastloop.Program for the whole run) and its
general path give the reference's times bit for bit (the model's oracle's: tests/oracle_fifo.py, oracle_maxmin.py):
every iteration, backward, bucket and optimizer time, every stage of every bucket's logs, every message,
the event count, the clock and the solves; with buckets queueing on the communication stream and in
flight together across GPUs, compressions on the compute stream, several iterations, both layouts,
fifo and maxmin (batched and exact)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from replay_support import CALIBRATED, oracle
from test_train_timeline import trace_path  # noqa: F401 (a fixture: 8 workers, emb.weight of 2000)
from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.profile import WorkCost
from zensim.net.replay import compiled
from zensim.net.topology import ClusterSpec
from zensim.train.buckets import DDPBuckets
from zensim.train.layers import LayerProfile, ParamTime
from zensim.train.syncs import SyncLogs, bucket_syncs, sparse_tensors
from zensim.train.timeline import Timeline
from zensim.trace.format import Trace

RUN_FIELDS = ("iteration_start", "backward_start", "backward_end", "optimizer_start", "iteration_end", "bucket_ready",
              "bucket_start", "bucket_end", "compression")
CLIENT_FIELDS = ("stage_start", "stage_end", "transfer_start", "transfer_end")
MODELS = {"fifo": None, "maxmin": {"exact_flows": 0}, "maxmin-exact": {"batch": 0}}  # maxmin: every component batched


def profile(compute: float) -> LayerProfile:
    """An embedding (ready first: its sparse synchronization ends at different times on different GPUs)
    and eight dense tensors; backward seconds `compute` x their size, so with a small `compute` the
    buckets queue on the stream and overlap the next ones' backward."""
    sizes = [30000, 20000, 40000, 5000, 5000, 60000, 10000, 25000]
    params = (ParamTime("emb.weight", 2000, len(sizes), 0.0, compute * 2000),)
    params += tuple(ParamTime(f"fc{i}.weight", n, len(sizes) - 1 - i, 0.0, compute * n) for i, n in enumerate(sizes))
    return LayerProfile(params, forward_s=compute * 1e5, backward_tail_s=compute * 1e3, optimizer_s=compute * 2e4,
                        batch_size=8)


def timeline(trace: Trace, scheme: str, machines: int, gpus: int, model: str, compute: float,
             compress: bool, dense_above: float | None = None, hook_run_s: float = 0.0,
             calibrated: dict | None = None) -> Timeline:
    """`scheme`'s timeline of `profile(compute)` on machines x gpus at 10 Gbit/s, 3 iterations cycling the
    trace's 2, DDP buckets of 0.1 MB; with `compress`, a compression on the compute stream per bucket;
    with `dense_above`, the buckets of zensim_hook (each one run of the scheme, dense members carried)
    all-reduced densely where their previous sum was denser, and `hook_run_s` before each scheme run;
    `calibrated`: more Costs fields (what a calibrated profile sets)."""
    prof = profile(compute)
    costs = Costs(ClusterSpec(machines, gpus, 10e9 / 8, nic_latency=1e-6), WorkCost.default(),  # the default work costs
                  **(calibrated or {}))
    chosen = sparse_tensors(prof, trace, scheme)
    hook = dense_above is not None
    syncs = bucket_syncs(prof, DDPBuckets(0.1).assign(prof.params, set() if hook else chosen), chosen, carry=hook)
    if compress:
        syncs = [replace(s, ready_s=s.ready_s + 3e-5, compress=((s.ready_s, 1e-5), (s.ready_s + 1e-5, 2e-5)))
                 for s in syncs]
    logs = SyncLogs(costs.cluster, "zen", scheme, trace)
    model_name, options = model.split("-")[0], MODELS[model]
    return Timeline(prof, syncs, logs, costs, model_name, 3, (0, 1), options, dense_above=dense_above,
                    hook_run_s=hook_run_s)


def assert_same(make) -> None:
    """A timeline made by `make()` runs compiled and on the general path with the times of the general
    path over the model's reference (its oracle, where it has one: replay_support.oracle)."""
    made = make()
    with oracle(made.model):
        slow = make().run(compiled=False)
    for run in (made.run(), make().run(compiled=False)):
        assert_runs_same(run, slow)


def assert_runs_same(fast, slow) -> None:
    """Two runs of a timeline have the same times, event count, clock and solves."""
    for field in RUN_FIELDS:
        assert np.array_equal(getattr(fast, field), getattr(slow, field)), field
    assert fast.clients.keys() == slow.clients.keys()
    for key, client in fast.clients.items():
        for field in CLIENT_FIELDS:
            assert np.array_equal(getattr(client, field), getattr(slow.clients[key], field)), (key, field)
    a, b = fast.network, slow.network
    assert a.count == b.count
    for field in ("sent_at", "delivered_at"):
        assert np.array_equal(getattr(a, field)[:a.count], getattr(b, field)[:b.count], equal_nan=True), field
    assert (fast.events, a.clock.now) == (slow.events, b.clock.now)
    assert getattr(a.model, "solves", None) == getattr(b.model, "solves", None)
    assert fast.makespan > 0 and np.isnan(a.delivered_at[:a.count]).sum() == 0


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("machines,gpus", [(4, 2), (6, 1)])
@pytest.mark.parametrize("scheme", ["zen", "dense-allreduce"])
def test_the_compiled_timeline_gives_the_general_paths_times(trace_path, model, machines, gpus, scheme) -> None:
    with Trace.open(trace_path) as trace:
        for compute, compress in ((1e-9, False), (1e-10, True), (1e-11, False)):
            assert_same(lambda: timeline(trace, scheme, machines, gpus, model, compute, compress))


def test_buckets_are_in_flight_together(trace_path) -> None:
    """The case the compiled path must get right: one GPU's next bucket starts while another GPU's is in
    flight (a bucket's starts differ across GPUs and overlap the others' spans)."""
    with Trace.open(trace_path) as trace:
        run = timeline(trace, "zen", 4, 2, "maxmin", 1e-11, False).run()
    start, end = (x.reshape(-1, x.shape[2]) for x in (run.bucket_start, run.bucket_end))  # syncs in stream order
    assert (start.max(axis=1) > start.min(axis=1)).any()
    assert (start[1:].min(axis=1) < end[:-1].max(axis=1)).any()  # one begins somewhere before the last ends elsewhere


@pytest.mark.parametrize("model", ["fifo", "maxmin"])
@pytest.mark.parametrize("machines,gpus", [(4, 2), (6, 1)])
@pytest.mark.parametrize("hook_run_s", [0.0, 3e-4])
def test_the_hooks_buckets_compiled_give_the_general_paths_times(trace_path, model, machines, gpus, hook_run_s) -> None:
    """zensim_hook's buckets: the embedding's bucket through the scheme with its dense neighbours
    carried, the dense buckets all-reduced (their sums are full: above 0.99); with and without the
    hook's run outside the stages."""
    with Trace.open(trace_path) as trace:
        run = timeline(trace, "zen", machines, gpus, model, 1e-10, False, 0.99, hook_run_s).run()
        assert 0 < run.densely.sum() < run.densely.size
        assert_same(lambda: timeline(trace, "zen", machines, gpus, model, 1e-10, False, 0.99, hook_run_s))


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("machines,gpus", [(4, 2), (6, 1)])
def test_calibrated_costs_compiled_give_the_general_paths_times(trace_path, model, machines, gpus) -> None:
    """What a calibrated profile sets beside links and work (exchange CPU, rendezvous, shared host
    processors, host efficiency: replay_support.CALIBRATED) runs compiled with the same times."""
    with Trace.open(trace_path) as trace:
        for compute, compress in ((1e-10, True), (1e-11, False)):
            make = lambda: timeline(trace, "zen", machines, gpus, model, compute, compress,  # noqa: E731
                                    calibrated=CALIBRATED["all"])
            made = make()
            assert compiled(Network(made.costs, made.model, made.model_options)) is not None
            assert_same(make)
