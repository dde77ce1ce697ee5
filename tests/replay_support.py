"""Shared helpers of the compiled-replay tests (tests/test_net_fast*.py): random logs with the hard
cases, the fabrics, random programs of several clients on one network, and the checks that a compiled
loop gives the Python event loop's times bit for bit. For a model whose one implementation is compiled
(fifo: zensim.net.fastfifo, maxmin: zensim.net.fastmaxmin), the reference is its frozen Python oracle
(tests/oracle_fifo.py, oracle_maxmin.py: ORACLES), and both the compiled loop and the general path's
adapter (the model's class in zensim.net.models on the Python event loop) are checked against it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

import oracle_fifo
import oracle_maxmin
from schemes_support import make_chunks
from zensim.layout import place, prepare
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.network import Network
from zensim.net.fastloop import RANK, Program
from zensim.net.profile import ExchangeCost, NicEfficiency, WorkCost
from zensim.net.replay import LogReplay, compiled, replay, run_compiled
from zensim.net.topology import ClusterSpec
from zensim.run import Tables
from zensim.run.log import PHASES, MessageLog
from zensim.schemes import build_scheme

B = 25e9 / 8
FIELDS = ("stage_start", "stage_end", "transfer_start", "transfer_end", "msg_start", "msg_end", "link_bytes",
          "machine_bytes")
SPECS = [ClusterSpec(6, 1, B), ClusterSpec(3, 4, B, nic_latency=2e-6, nvlink_latency=1e-6),
         ClusterSpec(8, 2, B, fabric="leafspine", machines_per_leaf=3, oversub=2.0, nic_latency=1e-6),
         ClusterSpec(8, 2, B, fabric="fattree", tiers=((2, 2.0), (4, 1.0)), nic_latency=5e-7),
         ClusterSpec(4, 3, B, nics="gpu", nic_latency=1e-6)]


SCHEMES = ["zen", "sparcml", "agsparse-ring", "dense-allreduce", "sparse-ps", "ring-incr-parallel-balanced"]
LAYOUTS = [(7, 1), (4, 3)]  # (machines, GPUs per machine): one GPU per machine, and ZEN's layout

WORK = WorkCost({"hash": 2e-9, "merge": 1e-9, "encode": 0.0, "decode": 0.0, "copy": 5e-10})
# what a calibrated profile (zensim-profile/1) sets beside links and work, one feature at a time and all
# together, at sizes that matter on the random logs (messages of up to 1 MB at 25 Gbit/s: ~300 us); no
# calibration writes a NIC efficiency table, but a profile may set one
CALIBRATED = {"exchange": {"exchange": ExchangeCost(3e-6, 1e-6, 1e-10)}, "rendezvous": {"rendezvous": True},
              "cores": {"host_cores": 1, "host_others": 0.5},
              "host-efficiency": {"host_efficiency": NicEfficiency(((1, 1.0), (4, 0.8), (16, 0.5)))},
              "nic-efficiency": {"nic_efficiency": NicEfficiency(((1, 0.95), (3, 0.7), (8, 0.5)))}}
CALIBRATED["all"] = {k: v for features in CALIBRATED.values() for k, v in features.items()}


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


# the models whose reference is a frozen oracle (registered by `oracle`, for the tests only), by name, and
# the counts (the model's attributes) of which the general path makes as many as the oracle (`counts`)
ORACLES = {"fifo": oracle_fifo.Fifo, "maxmin": oracle_maxmin.MaxMin}
COUNTS = {"fifo": (), "maxmin": ("solves", "warm")}


@contextmanager
def oracle(model: str) -> Iterator[None]:
    """Within the block, a network of `model` gets the model's oracle (ORACLES) where it has one: it is
    registered under the model's name in zensim.net.models.MODELS, the model put back after."""
    if model not in ORACLES:
        yield
        return
    MODELS[model], kept = ORACLES[model], MODELS[model]
    try:
        yield
    finally:
        MODELS[model] = kept


def oracle_network(costs: Costs, model: str, options: dict | None = None) -> Network:
    """A network of `model`, its sharing model the model's oracle where it has one (`oracle`)."""
    with oracle(model):
        return Network(costs, model, options)


def counts(net: Network, model: str) -> tuple:
    """The counts (COUNTS) of the network's sharing model, of a model with an oracle: maxmin's solves and
    warm starts."""
    return tuple(getattr(net.model, name) for name in COUNTS[model])


def general(log: MessageLog, costs: Costs, model: str, options: dict | None = None, oracle: bool = True):
    """The Python event loop: LogReplay on Network with the model (its oracle where it has one, unless
    `oracle` is false) over Clock; its timing, clock, network."""
    net = oracle_network(costs, model, options) if oracle else Network(costs, model, options)
    client = LogReplay(net, log)
    client.start()
    net.run()
    return client.timing(), net.clock.now, net


def assert_general_same(log: MessageLog, costs: Costs, model: str, options: dict | None = None) -> Network:
    """The general path (the model on the Python event loop) gives the oracle's times exactly (every
    field, the event count, the clock) and makes as many of its counts (`counts`: maxmin's solves and warm
    starts) as it. Its network."""
    got, got_now, net = general(log, costs, model, options, oracle=False)
    ref, ref_now, ref_net = general(log, costs, model, options)
    for field in FIELDS:
        assert np.array_equal(getattr(got, field), getattr(ref, field), equal_nan=True), field
    assert (got.events, got_now) == (ref.events, ref_now)
    assert counts(net, model) == counts(ref_net, model)
    return net


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
    if model in ORACLES:
        assert_general_same(log, costs, model, options)
    return net


def assert_second_client_same(logs: list[MessageLog], costs: Costs, model: str, at: float | None,
                               options: dict | None = None) -> Network:
    """Two clients on one network on the general path, the second made `at` seconds in, while the first's
    messages are in flight (its messages declared then: the network's arrays and the model's state grow
    in flight), or with `at` None after the first was replayed compiled (the general path takes a
    network that has run): the model's adapter gives its oracle's times (every client's, every
    message's), events, clock and counts. Returns the adapter's network."""
    def run(net: Network) -> list[LogReplay]:
        clients = [LogReplay(net, logs[0])]
        if at is None:
            if net.model.name == model:  # the adapter's network: the first compiled
                clients[0].run_compiled()
            else:
                clients[0].start()
                net.run()
            clients.append(LogReplay(net, logs[1]))
            clients[1].start()
        else:
            clients[0].start()
            net.schedule(at, lambda: (clients.append(LogReplay(net, logs[1])), clients[1].start()))
        net.run()
        return clients

    net, ref_net = Network(costs, model, options), oracle_network(costs, model, options)
    got, ref = run(net), run(ref_net)
    for a, b in zip(got, ref, strict=True):
        for field in ("stage_start", "stage_end", "transfer_start", "transfer_end"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), field
    for field in ("sent_at", "delivered_at"):
        assert np.array_equal(getattr(net, field)[:net.count], getattr(ref_net, field)[:ref_net.count])
    assert (net.events, net.clock.now, counts(net, model)) == (ref_net.events, ref_net.clock.now,
                                                               counts(ref_net, model))
    assert np.isfinite(net.delivered_at[:net.count]).all()
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


def long_job_log(rng: np.random.Generator, stages: int) -> MessageLog:
    """Two ranks: rank 0's first pre work long (10M elements), rank 1's work short in every stage, two
    messages from rank 1 to itself. On one host of one processor each of rank 1's jobs re-arms the
    host's event and leaves the one for rank 0's projected end stale until then: the stale events pile
    up (about 2 x stages pending at once), far past one per rank."""
    r, s, phase = (x.ravel() for x in np.meshgrid(np.arange(2), np.arange(stages), np.arange(2), indexing="ij"))
    elements = rng.integers(1, 2000, r.size)
    elements[(r == 0) & (s == 0) & (phase == 0)] = 10**7
    return MessageLog.from_columns(2, stages, (np.array([1, 3]), np.array([1, 1]), np.array([1, 1]),
                                               np.array([1000, 0])), np.zeros(2, np.int64), ("coo",),
                                   (s, r, phase, elements), np.zeros(r.size, np.int64), ("merge",))


def program_general(net: Network, logs: list[MessageLog], program: Program) -> tuple[list[LogReplay], list, list]:
    """The reference for a program of several clients: its nodes as callbacks of the Python event loop
    (a timer is `Network.schedule`, a rank node `LogReplay.start_rank`, done at `on_rank_done`; a node
    done starts each successor whose predecessors are all done, in link order). The clients, and per
    node when it began and when it was done."""
    count = len(program.kind)
    join, began, ended = list(program.join), [np.nan] * count, [np.nan] * count
    node = {(c, r): x for x, (kind, c, r) in enumerate(zip(program.kind, program.client, program.index))
            if kind == RANK}

    def done(x: int) -> None:
        ended[x] = net.now
        for y in program.links[x]:
            join[y] -= 1
            if join[y] == 0:
                start(y)

    def start(x: int) -> None:
        began[x] = net.now
        if program.kind[x] == RANK:
            clients[program.client[x]].start_rank(program.index[x])
        elif program.seconds[x] > 0:
            net.schedule(program.seconds[x], done, x)
        else:
            done(x)

    clients = [LogReplay(net, log, on_rank_done=lambda r, c=c: done(node[(c, r)])) for c, log in enumerate(logs)]
    for x in [x for x in range(count) if program.join[x] == 0]:
        start(x)
    net.run()
    return clients, began, ended


def random_program(rng: np.random.Generator, logs: list[MessageLog]) -> Program:
    """Every rank of every log a node, started at 0, after a timer (of a few equal lengths: ties, and
    0), or after ranks of earlier logs (the same rank, another one, or two: a join) and a timer: logs
    overlapping, staggered and in chains."""
    program = Program()
    nodes: list[int] = []  # the ranks of the earlier logs (a log's ranks wait for one another's messages)
    delays = [0.0, 1e-6, 2e-6, 5e-5]
    for c, log in enumerate(logs):
        earlier = len(nodes)
        for r in range(log.n):
            rule = int(rng.integers(0, 4)) if c else int(rng.integers(0, 2))
            x = program.rank(c, r)
            if rule == 1:
                t = program.timer(delays[int(rng.integers(0, len(delays)))])
                program.then(t, x)
            elif rule >= 2:
                before = [nodes[int(rng.integers(0, earlier))] for _ in range(rule - 1)]
                for b in before:
                    t = program.timer(delays[int(rng.integers(0, len(delays)))])
                    program.then(b, t)
                    program.then(t, x)
            nodes.append(x)
    return program


def assert_program_same(logs: list[MessageLog], costs: Costs, model: str, program: Program,
                        options: dict | None = None) -> tuple[Network, Network]:
    """The compiled loop runs `program` over clients of `logs` on one network with the reference's
    times exactly: every client's stage and transfer times, every message time, the event count, the
    clock, and when each node began and was done. Returns the compiled run's network and the reference's."""
    net = Network(costs, model, options)
    clients = [LogReplay(net, log) for log in logs]
    assert compiled(net) is not None
    began, ended = run_compiled(net, clients, program)
    ref_net = oracle_network(costs, model, options)
    ref, ref_began, ref_ended = program_general(ref_net, logs, program)
    runs = [(net, clients, began, ended)]
    if model in ORACLES:  # the general path too (the model's adapter on the Python event loop)
        adapter_net = Network(costs, model, options)
        runs.append((adapter_net, *program_general(adapter_net, logs, program)))
    for got_net, got, got_began, got_ended in runs:
        for fast, slow in zip(got, ref):
            for field in ("stage_start", "stage_end", "transfer_start", "transfer_end"):
                assert np.array_equal(getattr(fast, field), getattr(slow, field)), field
            assert fast.running == slow.running
        for field in ("sent_at", "delivered_at"):
            assert np.array_equal(getattr(got_net, field)[:got_net.count], getattr(ref_net, field)[:ref_net.count],
                                  equal_nan=True)
        assert np.array_equal(got_began, ref_began, equal_nan=True) and np.array_equal(got_ended, ref_ended,
                                                                                        equal_nan=True)
        assert (got_net.events, got_net.clock.now) == (ref_net.events, ref_net.clock.now)
        assert np.isfinite(got_ended).all()  # every node ran
    if model in ORACLES:
        assert counts(runs[1][0], model) == counts(ref_net, model)
    return net, ref_net


def moved(spec: ClusterSpec, model: str, features: str) -> float:
    """The share of the message ends of the calibrated tests' random log on `spec` (seed 7) that the
    CALIBRATED case `features` moves, against the same costs without it."""
    rng = np.random.default_rng(7)
    log = random_log(rng, spec.machines * spec.gpus_per_machine, 4, 40 * spec.machines * spec.gpus_per_machine)
    plain = replay(log, Costs(spec, WORK), model).msg_end
    return np.count_nonzero(replay(log, Costs(spec, WORK, **CALIBRATED[features]), model).msg_end != plain) / len(plain)
