"""The compiled maxmin replay (zensim.net.fastmaxmin) gives the general path's times bit for bit: every
stage, transfer and message time, the event count, the clock and the number of solves, in the fast
(batched) and the exact mode, on scheme logs in both layouts, on the logs built to defeat batching and
on random logs with ties, zero-byte and same-GPU messages, local work, latencies and every fabric;
and with several clients on one network started by a program (overlapping, staggered, chained)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from oracle_maxmin import _Segment
from replay_support import (B, CALIBRATED, FIELDS, LAYOUTS, SCHEMES, SPECS, WORK, assert_program_same, assert_same,
                            assert_second_client_same, general, long_job_log, moved, random_log, random_program,
                            scheme_costs, spec_id)
from test_net_maxmin import ADVERSARIAL
from zensim.layout import dense_ring_log
from zensim.net import fastmaxmin
from zensim.net.fastmaxmin import HEAD
from zensim.net.costs import Costs
from zensim.net.fastloop import Program
from zensim.net.network import Network
from zensim.net.replay import LogReplay, run_compiled
from zensim.net.profile import WorkCost
from zensim.net.topology import ClusterSpec
from zensim.run.log import Message, MessageLog

# the allowance alone (every component batched), the default (components of at most MaxMin.exact_flows
# flows exact), exact max-min
MODES = {"batched": {"exact_flows": 0}, "default": None, "exact": {"batch": 0}}


WARM = {}  # per test, the arrivals given rates without a solve (both loops alike): tested to happen


def same_solves(log, costs, options):
    """assert_same, and the compiled loop solved as often as the general path, and gave as many arrivals
    their rates without a solve (MaxMin._warm)."""
    net = assert_same(log, costs, "maxmin", options)
    model = general(log, costs, "maxmin", options)[2].model
    assert (net.model.solves, net.model.warm) == (model.solves, model.warm)
    return net.model.warm


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_logs_same_times(spec, seed, mode):
    rng = np.random.default_rng(seed)
    n = spec.machines * spec.gpus_per_machine
    work = WorkCost({"hash": 2e-9, "merge": 1e-9, "encode": 0.0, "decode": 0.0, "copy": 5e-10})
    same_solves(random_log(rng, n, 4, 40 * n), Costs(spec, work), MODES[mode])


@pytest.mark.parametrize("name", SCHEMES)
@pytest.mark.parametrize("machines,gpus", LAYOUTS)
def test_scheme_logs_same_times(name, machines, gpus):
    log, costs = scheme_costs(name, machines, gpus)
    for options in MODES.values():
        same_solves(log, costs, options)
        same_solves(log, replace(costs, **CALIBRATED["all"]), options)


@pytest.mark.parametrize("case", list(ADVERSARIAL))
def test_logs_built_to_defeat_batching_same_times(case):
    make_log, spec = ADVERSARIAL[case]
    for options in MODES.values():
        same_solves(make_log(), Costs(spec(), WorkCost.zero()), options)


def test_ties_across_segment_heads_same_times():
    """All-to-alls of equal flows (one component of 552, more than a segment head: ties in finish time
    cut by the heads), then of two sizes, on 24 machines and on 6 x 4."""
    n = 24
    pairs = [(r, d) for r in range(n) for d in range(n) if d != r]
    log = MessageLog(n, 2, [Message(0, r, d, 10**5, "coo") for r, d in pairs]
                     + [Message(1, r, d, (1000, 4096)[(r * d) % 2], "coo") for r, d in pairs])
    for machines, gpus in ((24, 1), (6, 4)):
        for options in MODES.values():
            same_solves(log, Costs(ClusterSpec(machines, gpus, B, nic_latency=1e-6), WorkCost.zero()), options)


def test_dense_ring_and_empty_logs():
    spec = ClusterSpec(5, 2, B)
    same_solves(dense_ring_log(5, 2, 10_000, "zen"), Costs(spec), None)
    same_solves(MessageLog(10, 3), Costs(spec), None)  # stages, no message
    same_solves(MessageLog(10, 0), Costs(spec), None)  # no stage


@pytest.mark.parametrize("size", [1, 10, 100, 5 * HEAD, 70 * HEAD])
def test_segments_take_the_stable_order(size):
    """A solve's flows leave in the order of a stable sort by finish time (ties: solve order), however
    the segment is cut into sorted heads, in both loops: the Python model's _Segment and the compiled
    loop's arena run (a few flows sorted at once, a head of them all, heads selected from more, their
    finish times' buckets taken whole)."""
    rng = np.random.default_rng(size)
    finish = rng.integers(0, 40, size).astype(float)  # many ties, across head boundaries
    flows = rng.permutation(size)
    stable = flows[np.argsort(finish, kind="stable")].tolist()
    segment = _Segment(finish, flows)
    assert [m for t in np.unique(finish) for m in segment.take(t)] == stable
    one = np.zeros(1, np.int64)
    seg = fastmaxmin.Segments(one, np.array([size]), one.copy(), one.copy(), np.ones(1, np.bool_), one - 1,
                              np.zeros(1, np.uint64), one - 1, finish, flows.astype(np.int64), np.arange(size),
                              np.empty(size, np.int64), np.empty((1, 2)))
    floats = np.zeros(size)
    flow = fastmaxmin.Flows(*[floats] * 3, np.zeros(size, np.int32), np.ones(size, np.bool_), *[floats] * 6)
    gone, count = np.empty(size, np.int64), 0
    for t in np.unique(finish):
        count = fastmaxmin._take(0, t, seg, flow, gone, count)
    assert gone[:count].tolist() == stable and fastmaxmin._next(0, seg, flow) == -1


def test_general_path_where_the_compiled_loop_does_not_apply():
    """Another model, or a network that has run, is left to the general path."""
    spec = ClusterSpec(4, 1, B)
    assert not fastmaxmin.applies(Network(Costs(spec), "fifo"))
    net = Network(Costs(spec), "maxmin")
    net.schedule(1.0, lambda: None)
    assert not fastmaxmin.applies(net)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
@pytest.mark.parametrize("seed", [0, 1])
def test_several_clients_same_times(spec, seed, mode):
    """Three random logs as clients of one network, their ranks started by a random program
    (staggered, overlapping, chained to one another's ranks): the same times and solves."""
    rng = np.random.default_rng(seed)
    n = spec.machines * spec.gpus_per_machine
    work = WorkCost({"hash": 2e-9, "merge": 1e-9, "encode": 0.0, "decode": 0.0, "copy": 5e-10})
    logs = [random_log(rng, n, 3, 20 * n) for _ in range(3)]
    fast, slow = assert_program_same(logs, Costs(spec, work), "maxmin", random_program(rng, logs), MODES[mode])
    assert fast.model.solves == slow.model.solves


@pytest.mark.parametrize("machines,gpus", LAYOUTS)
def test_scheme_logs_in_flight_together_same_times(machines, gpus):
    """Every scheme's log a client of one network, all started together, then again with each rank's
    next log waiting for its previous one (a stream per GPU, as the iteration's buckets): the same."""
    logs = [scheme_costs(name, machines, gpus)[0] for name in SCHEMES]
    costs = scheme_costs(SCHEMES[0], machines, gpus)[1]
    together, stream = Program(), Program()
    n = machines * gpus
    for c in range(len(logs)):
        for r in range(n):
            together.rank(c, r)
    last = [stream.timer(1e-6 * (r % 3)) for r in range(n)]  # staggered starts, ties
    for c in range(len(logs)):
        for r in range(n):
            x = stream.rank(c, r)
            stream.then(last[r], x)
            last[r] = x
    for program in (together, stream):
        for options in MODES.values():
            fast, slow = assert_program_same(logs, costs, "maxmin", program, options)
            assert fast.model.solves == slow.model.solves


def test_a_program_runs_its_clients_alone():
    """A message of no client on the network, a rank started twice, or a rank of no client: refused."""
    spec = ClusterSpec(4, 1, B)
    log = random_log(np.random.default_rng(3), 4, 2, 30)
    net = Network(Costs(spec), "maxmin")
    LogReplay(net, log)
    client = LogReplay(net, log)
    program = Program()
    for r in range(4):
        program.rank(0, r)
    with pytest.raises(ValueError, match="alone"):
        run_compiled(net, [client], program)
    net = Network(Costs(spec), "maxmin")
    program.rank(0, 1)
    with pytest.raises(ValueError, match="at most once"):
        run_compiled(net, [LogReplay(net, log)], program)
    program = Program()
    program.rank(0, 4)  # client 0 has ranks 0..3
    net = Network(Costs(spec), "maxmin")
    with pytest.raises(ValueError, match="only"):
        run_compiled(net, [LogReplay(net, log)], program)


@pytest.mark.parametrize("features", list(CALIBRATED))
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
def test_calibrated_costs_same_times(spec, mode, features):
    """What a calibrated profile sets beside links and work (replay_support.CALIBRATED), one feature at
    a time and all together, on a random log and on three clients started by a random program: the
    same times and solves."""
    rng = np.random.default_rng(7)
    n = spec.machines * spec.gpus_per_machine
    costs = Costs(spec, WORK, **CALIBRATED[features])
    same_solves(random_log(rng, n, 4, 40 * n), costs, MODES[mode])
    logs = [random_log(rng, n, 3, 20 * n) for _ in range(3)]
    fast, slow = assert_program_same(logs, costs, "maxmin", random_program(rng, logs), MODES[mode])
    assert fast.model.solves == slow.model.solves


@pytest.mark.parametrize("features", list(CALIBRATED))
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
def test_calibrated_costs_are_exercised(spec, features):
    """Each calibrated case moves more than a quarter of the message ends of the random log above
    (replay_support.moved): the bit-identity tests above test what it changes."""
    assert moved(spec, "maxmin", features) > 0.25


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("seed", [0, 1])
def test_stale_shared_processor_events_pile_up_same_times(seed, mode):
    """One long job and many short ones on one processor (replay_support.long_job_log): the shared
    processors' stale events pile up far past one per rank; the same times."""
    costs = Costs(ClusterSpec(1, 2, B), WORK, host_cores=1)
    same_solves(long_job_log(np.random.default_rng(seed), 60), costs, MODES[mode])


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("spec", SPECS[:3], ids=spec_id)
def test_general_path_grows_its_state_in_flight_same_times(spec, mode):
    """A second client made 30 us in, while the first's flows are in flight (2000 more messages: the
    network's arrays and the model's state grow, components and segments alive): the general path (the
    compiled steps from the Python event loop) gives the oracle's times, events, clock and solves."""
    rng = np.random.default_rng(5)
    n = spec.machines * spec.gpus_per_machine
    logs = [random_log(rng, n, 4, 40 * n), random_log(rng, n, 3, 2000)]
    net = assert_second_client_same(logs, Costs(spec, WORK), "maxmin", 3e-5, MODES[mode])
    assert len(net.model.mm.flow.left) > 1024 > len(logs[0])  # grown from the first reserve (1024 flows)
    assert net.model.solves > 0 and np.isfinite(net.delivered_at[:net.count]).all()


def test_general_path_after_a_compiled_run_same_times():
    """A log replayed compiled, then a second client on the same network (the general path, which takes
    a network that has run): the oracle's times for the second and the solves of both together."""
    spec = SPECS[1]
    rng = np.random.default_rng(11)
    n = spec.machines * spec.gpus_per_machine
    logs = [random_log(rng, n, 3, 30 * n), random_log(rng, n, 3, 30 * n)]
    assert_second_client_same(logs, Costs(spec, WORK), "maxmin", None)


@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
@pytest.mark.parametrize("seed", [0, 1])
def test_link_re_solves_same_times_on_both_paths(spec, seed):
    """With every link that runs out re-solved alone (local_flows 0, exact_flows 0: fastmaxmin._patch;
    the oracle does not read them), the compiled loop and the general path (the same steps on the Python
    clock) give the same times bit for bit, the same event count, clock, solves, link re-solves and joins
    that waited for a solve (fastmaxmin._hold); and both happen."""
    rng = np.random.default_rng(seed)
    n = spec.machines * spec.gpus_per_machine
    msgs = [Message(0, r, d, int(rng.integers(1, 10**6)), "coo") for r in range(n) for d in range(n) if d != r]
    msgs += [Message(1, r, (r + 1 + int(rng.integers(n - 1))) % n, int(rng.integers(0, 10**6)), "coo") for r in range(n)]
    log = MessageLog(n, 2, [m for m in msgs if m.src != m.dst])
    costs, options = Costs(spec, WorkCost.zero()), {"local_flows": 0, "exact_flows": 0}
    net = Network(costs, "maxmin", options)
    client = LogReplay(net, log)
    client.run_compiled()
    fast, fast_now = client.timing(), net.clock.now
    slow, slow_now, slow_net = general(log, costs, "maxmin", options, oracle=False)
    for field in FIELDS:
        assert np.array_equal(getattr(fast, field), getattr(slow, field), equal_nan=True), field
    assert (fast.events, fast_now) == (slow.events, slow_now)
    model, other = net.model, slow_net.model
    counts = ("solves", "warm", "local", "waits")
    assert [getattr(model, c) for c in counts] == [getattr(other, c) for c in counts]
    assert model.local > 0 and model.waits > 0
