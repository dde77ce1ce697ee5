"""Shared helpers of the compiled-replay tests (tests/test_net_fast*.py): random logs with the hard
cases, the fabrics, and the check that a compiled loop gives the Python event loop's times bit for bit."""

from __future__ import annotations

import numpy as np

from schemes_support import make_chunks
from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.replay import LogReplay, compiled, replay
from zensim.net.topology import ClusterSpec
from zensim.run import Tables
from zensim.run.log import PHASES, MessageLog
from zensim.schemes import build_scheme
from zensim.sim.layout import place, prepare

B = 25e9 / 8
FIELDS = ("stage_start", "stage_end", "transfer_start", "transfer_end", "msg_start", "msg_end", "link_bytes",
          "machine_bytes")
SPECS = [ClusterSpec(6, 1, B), ClusterSpec(3, 4, B, nic_latency=2e-6, nvlink_latency=1e-6),
         ClusterSpec(8, 2, B, fabric="leafspine", machines_per_leaf=3, oversub=2.0, nic_latency=1e-6),
         ClusterSpec(8, 2, B, fabric="fattree", tiers=((2, 2.0), (4, 1.0)), nic_latency=5e-7),
         ClusterSpec(4, 3, B, nics="gpu", nic_latency=1e-6)]


SCHEMES = ["zen", "sparcml", "agsparse-ring", "dense-allreduce", "sparse-ps", "ring-incr-parallel-balanced"]
LAYOUTS = [(7, 1), (4, 3)]  # (machines, GPUs per machine): one GPU per machine, and ZEN's layout


def scheme_costs(name: str, machines: int, gpus: int) -> tuple[MessageLog, Costs]:
    """Scheme `name`'s log on 4000 random elements at 5% in ZEN's layout of `machines` x `gpus`, and
    the costs of that cluster (25 Gbit/s, 1 us NIC latency)."""
    numel = 4000
    chunks = make_chunks("random", machines * gpus, numel, 0.05, 3, False)
    prep = prepare(chunks, numel, machines, gpus, "zen")
    placed = place(prep, lambda n, size, part: build_scheme(name, n, size, tables=tables), tables := Tables())
    return placed.log, Costs(ClusterSpec(machines, gpus, B, nic_latency=1e-6))


def spec_id(spec: ClusterSpec) -> str:
    """A test id for a cluster spec."""
    return f"{spec.machines}x{spec.gpus_per_machine}-{spec.fabric}-{spec.nics}"


def general(log: MessageLog, costs: Costs, model: str, options: dict | None = None):
    """The Python event loop: LogReplay on Network with the model over Clock; its timing, clock, network."""
    net = Network(costs, model, options)
    client = LogReplay(net, log)
    client.start()
    net.run()
    return client.timing(), net.clock.now, net


def assert_same(log: MessageLog, costs: Costs, model: str, options: dict | None = None) -> Network:
    """The compiled loop applies, and its times equal the general path's exactly (every field, the
    event count, the clock); replay() takes it. Returns the compiled run's network."""
    net = Network(costs, model, options)
    client = LogReplay(net, log)
    assert compiled(net) is not None
    client.run_compiled()
    fast, fast_now = client.timing(), net.clock.now
    slow, slow_now, _ = general(log, costs, model, options)
    for field in FIELDS:
        assert np.array_equal(getattr(fast, field), getattr(slow, field), equal_nan=True), field
    assert (fast.events, fast_now, client.running) == (slow.events, slow_now, 0)
    assert np.array_equal(replay(log, costs, model, options=options).msg_end, slow.msg_end)
    return net


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
