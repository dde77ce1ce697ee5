"""The timeline synchronizes a bucket as zensim_hook does: a bucket mixing a sparse embedding and a small
dense layer is one run of the scheme carrying the dense layer (the hook's very run on gloo ranks sends
the same bytes per rank), and `dense_above` all-reduces it densely exactly where the hook would (the
density of its previous sum, the figure the hook measures)."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.profile import WorkCost
from zensim.net.topology import ClusterSpec
from zensim.train.buckets import Single
from zensim.train.iteration import simulate_iteration
from zensim.train.layers import LayerProfile, ParamTime
from zensim.trace.format import Trace, TensorSpec, TraceWriter

EMB, FC, WORKERS = 2000, 96, 4
ROWS = (40, 700, 150)  # indices per worker in trace iterations 0, 1, 2: a sparse, a dense and a middle sum


def make_trace(path) -> None:
    """An embedding's indices: few, many, then some per worker in the three iterations."""
    rng = np.random.default_rng(1)
    with TraceWriter(path, [TensorSpec("emb.weight", EMB)], workers=WORKERS, iterations=len(ROWS), batch_size=4) as w:
        for it, rows in enumerate(ROWS):
            for worker in range(WORKERS):
                w.write(it, worker, "emb.weight", np.sort(rng.choice(EMB, rows + 10 * worker, replace=False)))


def profile() -> LayerProfile:
    """The embedding's gradient ready first, then a small dense layer's (ready order): one bucket with
    Single bucketing, laid out as DDP's rebuilt bucket (the embedding's elements first)."""
    params = (ParamTime("emb.weight", EMB, 1, 1e-4, 3e-4), ParamTime("fc.weight", FC, 0, 1e-4, 2e-4))
    return LayerProfile(params, forward_s=1e-3, backward_tail_s=1e-4, optimizer_s=1e-4, batch_size=4)


def costs(world: int) -> Costs:
    return Costs(ClusterSpec(world, 1, 1e9, nic_latency=1e-5), WorkCost.zero())


def hook_rank(rank: int, world: int, tmp: str) -> None:
    """Rank `rank` of the hook: per trace iteration the bucket as DDP lays it out (members in ready
    order: the embedding's rows, then the dense layer, every element non-zero), synchronized by
    zensim_hook("zen"); the bytes this rank sent and the density of the sum, per iteration."""
    from zensim.ddp import zensim_hook

    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=world)
    try:
        hook = zensim_hook("zen")
        sent, density = [], []
        with Trace.open(f"{tmp}/t.zt") as trace:
            for it in range(trace.iterations):
                buffer = torch.zeros(EMB + FC)
                rows = torch.from_numpy(trace.indices(it, rank, "emb.weight").astype(np.int64))
                buffer[rows] = 1.0 + rank
                buffer[EMB:] = 0.5
                before = hook.stats.sent
                density.append(hook.synchronize(buffer, []) / buffer.numel())
                sent.append(hook.stats.sent - before)
        torch.save({"sent": sent, "density": density}, f"{tmp}/rank{rank}.pt")
    finally:
        gc.collect()
        dist.destroy_process_group()


@pytest.fixture(scope="module", params=[2, 3])
def hooked(request, tmp_path_factory):
    world = request.param
    tmp = tmp_path_factory.mktemp(f"hook{world}")
    make_trace(tmp / "t.zt")
    mp.spawn(hook_rank, args=(world, str(tmp)), nprocs=world, join=True)
    return world, tmp / "t.zt", [torch.load(tmp / f"rank{r}.pt") for r in range(world)]


def test_a_mixed_bucket_sends_what_the_hooks_scheme_run_sends(hooked) -> None:
    world, path, ranks = hooked
    rec = simulate_iteration(profile(), "zen", costs(world), trace=path, sparse_buckets="fused", bucketing=Single(),
                             iterations=len(ROWS), layout="flat", dense_baseline=False)
    assert [b["sync"] for b in rec.buckets] == ["zen(2, 1 dense)"]
    for it in range(len(ROWS)):
        steps = [key for key in rec.run.clients if key[:2] == (it, 0)]
        assert len(steps) == 1  # one step: the scheme's run, the dense layer inside it
        log = rec.run.clients[steps[0]].log
        assert log.bytes_sent().tolist() == [ranks[r]["sent"][it] for r in range(world)], it


def test_dense_above_switches_a_bucket_where_the_hook_would(hooked) -> None:
    world, path, ranks = hooked
    density = ranks[0]["density"]
    assert all(r["density"] == density for r in ranks)  # the same figure on every rank
    assert density[0] < density[2] < density[1]
    for d in (0.0, (density[0] + density[2]) / 2, (density[2] + density[1]) / 2, 1.0):
        rec = simulate_iteration(profile(), "zen", costs(world), trace=path, sparse_buckets="fused", bucketing=Single(),
                                 iterations=len(ROWS), layout="flat", dense_baseline=False, dense_above=d,
                                 dense_algorithm="ring")
        # iteration i replays trace iteration i; the hook decides it by the sum before (cycling)
        want = [density[(i - 1) % len(ROWS)] > d for i in range(len(ROWS))]
        assert rec.run.densely[:, 0].tolist() == want, d
        for i, dense in enumerate(want):
            (log,) = [c.log for key, c in rec.run.clients.items() if key[:2] == (i, 0)]
            assert (log.bytes_sent().tolist() == [ranks[r]["sent"][i] for r in range(world)]) != dense
            if dense:  # the whole bucket's dense all-reduce: 2 (n-1)/n of its fp32 bytes per rank (ring)
                assert log.bytes_sent().sum() == 2 * (world - 1) * (EMB + FC) * 4


def test_dense_above_errors(tmp_path) -> None:
    make_trace(tmp_path / "t.zt")
    for bad, match in (({"dense_above": 1.5}, "must be in"), ({"dense_above": 0.5, "sparse_buckets": "own"}, "fused"),
                       ({"hook_run_s": -1e-3, "sparse_buckets": "fused"}, "--hook-run-s -0.001: must be seconds >= 0"),
                       ({"hook_run_s": float("nan"), "sparse_buckets": "fused"}, "--hook-run-s nan: must be"),
                       ({"hook_run_s": 1e-3, "sparse_buckets": "own"}, "--hook-run-s: only with --sparse-buckets fused")):
        with pytest.raises(ConfigError, match=match):
            simulate_iteration(profile(), "zen", costs(2), trace=tmp_path / "t.zt", **bad)
