"""The compiled fifo replay (zensim.net.fastfifo) gives the general path's times bit for bit: every
stage, transfer and message time, the event count and the clock, on scheme logs in both layouts and
on random logs with ties, zero-byte and same-GPU messages, local work, latencies and every fabric."""

from __future__ import annotations

import numpy as np
import pytest

from schemes_support import make_chunks
from zensim.net import fastfifo
from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.profile import NicEfficiency, WorkCost
from zensim.net.replay import LogReplay, replay
from zensim.net.topology import ClusterSpec
from zensim.run import Tables
from zensim.run.log import PHASES, MessageLog
from zensim.schemes import build_scheme
from zensim.sim.layout import dense_ring_log, place, prepare

B = 25e9 / 8
FIELDS = ("stage_start", "stage_end", "transfer_start", "transfer_end", "msg_start", "msg_end", "link_bytes",
          "machine_bytes")


def general(log: MessageLog, costs: Costs):
    """The Python event loop: LogReplay on Network with the Fifo model over Clock."""
    net = Network(costs, "fifo")
    client = LogReplay(net, log)
    client.start()
    net.run()
    return client.timing(), net.clock.now


def assert_same(log: MessageLog, costs: Costs) -> None:
    """replay() takes the compiled path and its times equal the general path's exactly."""
    net = Network(costs, "fifo")
    client = LogReplay(net, log)
    assert fastfifo.applies(net)
    client.run_compiled()
    fast, fast_now = client.timing(), net.clock.now
    slow, slow_now = general(log, costs)
    for field in FIELDS:
        assert np.array_equal(getattr(fast, field), getattr(slow, field), equal_nan=True), field
    assert (fast.events, fast_now, client.running) == (slow.events, slow_now, 0)
    assert np.array_equal(replay(log, costs, "fifo").msg_end, slow.msg_end)


def random_log(rng: np.random.Generator, n: int, stages: int, messages: int) -> MessageLog:
    """Messages between random ranks (same rank and zero bytes included), equal sizes often (ties),
    and random local work."""
    stage = rng.integers(0, stages, messages)
    src, dst = rng.integers(0, n, messages), rng.integers(0, n, messages)
    nbytes = rng.choice([0, 1000, 4096, 65536, int(rng.integers(1, 10**6))], messages)
    works = 3 * n
    kinds = ("merge", "copy", "hash")
    kind = rng.integers(0, len(kinds), works)
    return MessageLog.from_columns(
        n, stages, (stage, src, dst, nbytes), np.zeros(messages, np.int64), ("coo",),
        (rng.integers(0, stages, works), rng.integers(0, n, works), rng.integers(0, len(PHASES), works),
         rng.integers(0, 5000, works)), kind, kinds)


SPECS = [ClusterSpec(6, 1, B), ClusterSpec(3, 4, B, nic_latency=2e-6, nvlink_latency=1e-6),
         ClusterSpec(8, 2, B, fabric="leafspine", machines_per_leaf=3, oversub=2.0, nic_latency=1e-6),
         ClusterSpec(8, 2, B, fabric="fattree", tiers=((2, 2.0), (4, 1.0)), nic_latency=5e-7),
         ClusterSpec(4, 3, B, nics="gpu", nic_latency=1e-6)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.machines}x{s.gpus_per_machine}-{s.fabric}-{s.nics}")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_logs_same_times(spec, seed):
    rng = np.random.default_rng(seed)
    n = spec.machines * spec.gpus_per_machine
    work = WorkCost({"hash": 2e-9, "merge": 1e-9, "encode": 0.0, "decode": 0.0, "copy": 5e-10})
    assert_same(random_log(rng, n, 4, 40 * n), Costs(spec, work))


@pytest.mark.parametrize("name", ["zen", "sparcml", "agsparse-ring", "dense-allreduce", "sparse-ps",
                                  "ring-incr-parallel-balanced"])
@pytest.mark.parametrize("machines,gpus", [(7, 1), (4, 3)])
def test_scheme_logs_same_times(name, machines, gpus):
    numel = 4000
    chunks = make_chunks("random", machines * gpus, numel, 0.05, 3, False)
    prep = prepare(chunks, numel, machines, gpus, "zen")
    placed = place(prep, lambda n, size, part: build_scheme(name, n, size, tables=tables), tables := Tables())
    assert_same(placed.log, Costs(ClusterSpec(machines, gpus, B, nic_latency=1e-6)))


def test_dense_ring_and_empty_logs():
    spec = ClusterSpec(5, 2, B)
    assert_same(dense_ring_log(5, 2, 10_000, "zen"), Costs(spec))
    assert_same(MessageLog(10, 3), Costs(spec))  # stages, no message
    assert_same(MessageLog(10, 0), Costs(spec))  # no stage


def test_general_path_where_the_compiled_loop_does_not_apply():
    """Efficiency tables and shared host processors are left to the general path."""
    spec = ClusterSpec(4, 1, B)
    log = random_log(np.random.default_rng(3), 4, 2, 30)
    eff = NicEfficiency(((1, 1.0), (4, 0.5)))
    for costs in (Costs(spec, nic_efficiency=eff), Costs(spec, host_efficiency=eff), Costs(spec, host_cores=1)):
        assert not fastfifo.applies(Network(costs, "fifo"))
    assert not fastfifo.applies(Network(Costs(spec), "maxmin"))
    net = Network(Costs(spec), "fifo")
    LogReplay(net, log)
    with pytest.raises(ValueError, match="alone"):
        LogReplay(net, log).run_compiled()  # a second client on the network
