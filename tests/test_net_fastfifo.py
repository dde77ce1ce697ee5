"""The fifo model's one implementation (zensim.net.fastfifo), both as the compiled replay and as the general
path's adapter (zensim.net.models.fifo.Fifo on the Python event loop), gives the frozen Python model's
times bit for bit (tests/oracle_fifo.py, replay_support.assert_same): every stage, transfer and message
time, the event count and the clock, on scheme logs in both layouts and on random logs with ties,
zero-byte and same-GPU messages, local work, latencies and every fabric; and with several clients on one
network started by a program (overlapping, staggered, chained)."""

from __future__ import annotations

import heapq
from dataclasses import replace

import numpy as np
import pytest

from replay_support import (B, CALIBRATED, LAYOUTS, SCHEMES, SPECS, WORK, assert_program_same,
                            assert_second_client_same, general, long_job_log, moved, oracle_network, random_log,
                            random_program, scheme_costs, spec_id)
from replay_support import assert_same as assert_compiled_same
from zensim.layout import dense_ring_log
from zensim.net import fastfifo
from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.profile import NicEfficiency, WorkCost
from zensim.net.replay import LogReplay
from zensim.net.topology import ClusterSpec
from zensim.run.log import MessageLog


def assert_same(log: MessageLog, costs: Costs) -> None:
    """replay() takes the compiled fifo path, and its times and the adapter's equal the oracle's exactly."""
    assert fastfifo.applies(Network(costs, "fifo"))
    assert_compiled_same(log, costs, "fifo")


@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_logs_same_times(spec, seed):
    rng = np.random.default_rng(seed)
    n = spec.machines * spec.gpus_per_machine
    work = WorkCost({"hash": 2e-9, "merge": 1e-9, "encode": 0.0, "decode": 0.0, "copy": 5e-10})
    assert_same(random_log(rng, n, 4, 40 * n), Costs(spec, work))


@pytest.mark.parametrize("name", SCHEMES)
@pytest.mark.parametrize("machines,gpus", LAYOUTS)
def test_scheme_logs_same_times(name, machines, gpus):
    log, costs = scheme_costs(name, machines, gpus)
    assert_same(log, costs)
    assert_same(log, replace(costs, **CALIBRATED["all"]))


def test_dense_ring_and_empty_logs():
    spec = ClusterSpec(5, 2, B)
    assert_same(dense_ring_log(5, 2, 10_000, "zen"), Costs(spec))
    assert_same(MessageLog(10, 3), Costs(spec))  # stages, no message
    assert_same(MessageLog(10, 0), Costs(spec))  # no stage


def test_general_path_where_the_compiled_loop_does_not_apply():
    """Another model, or a network with a client of its own, is left to the general path."""
    spec = ClusterSpec(4, 1, B)
    log = random_log(np.random.default_rng(3), 4, 2, 30)
    assert not fastfifo.applies(Network(Costs(spec), "maxmin"))
    net = Network(Costs(spec), "fifo")
    LogReplay(net, log)
    with pytest.raises(ValueError, match="alone"):
        LogReplay(net, log).run_compiled()  # a second client on the network


@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_several_clients_same_times(spec, seed):
    """Three random logs as clients of one network, their ranks started by a random program
    (staggered, overlapping, chained to one another's ranks): the same times."""
    rng = np.random.default_rng(seed)
    n = spec.machines * spec.gpus_per_machine
    work = WorkCost({"hash": 2e-9, "merge": 1e-9, "encode": 0.0, "decode": 0.0, "copy": 5e-10})
    logs = [random_log(rng, n, 3, 20 * n) for _ in range(3)]
    assert_program_same(logs, Costs(spec, work), "fifo", random_program(rng, logs))


@pytest.mark.parametrize("features", list(CALIBRATED))
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
def test_calibrated_costs_same_times(spec, features):
    """What a calibrated profile sets beside links and work (replay_support.CALIBRATED), one feature at
    a time and all together, on a random log and on three clients started by a random program: the
    same times."""
    rng = np.random.default_rng(7)
    n = spec.machines * spec.gpus_per_machine
    costs = Costs(spec, WORK, **CALIBRATED[features])
    assert_same(random_log(rng, n, 4, 40 * n), costs)
    logs = [random_log(rng, n, 3, 20 * n) for _ in range(3)]
    assert_program_same(logs, costs, "fifo", random_program(rng, logs))


@pytest.mark.parametrize("features", list(CALIBRATED))
@pytest.mark.parametrize("spec", SPECS, ids=spec_id)
def test_calibrated_costs_are_exercised(spec, features):
    """Each calibrated case moves more than a quarter of the message ends of the random log above
    (replay_support.moved): the bit-identity tests above test what it changes."""
    assert moved(spec, "fifo", features) > 0.25


@pytest.mark.parametrize("seed", [0, 1])
def test_stale_shared_processor_events_pile_up_same_times(seed, monkeypatch):
    """One long job and many short ones on one processor (replay_support.long_job_log): the shared
    processors' stale events pile up past the compiled heap's first size (one event per message, rank
    and program node: it grows for them); the same times."""
    costs = Costs(ClusterSpec(1, 2, B), WORK, host_cores=1)
    log = long_job_log(np.random.default_rng(seed), 60)
    assert_same(log, costs)
    peak, push = [0], heapq.heappush

    def counted(heap: list, item: tuple) -> None:
        push(heap, item)
        peak[0] = max(peak[0], len(heap))

    monkeypatch.setattr(heapq, "heappush", counted)  # the general path's Clock: events pending at once
    general(log, costs, "fifo")
    first = 2 + log.n + log.n + 1  # messages, ranks, program nodes (one per rank) and one
    assert peak[0] > 10 * first


@pytest.mark.parametrize("latency", [0.0, 1e-5])
@pytest.mark.parametrize("features", ["none", "nic-efficiency", "host-efficiency", "all"])
@pytest.mark.parametrize("spec", SPECS[:3], ids=spec_id)
def test_general_path_grows_its_state_in_flight_same_times(spec, features, latency):
    """A second client made 30 us in, while the first's messages are in flight (2000 more messages: the
    network's arrays and the adapter's state grow past the first reserve, with the messages in flight,
    their first links' ends and each NIC link's end times moved; with a NIC latency, hops that arrive
    after the growth): the oracle's times, events and clock."""
    spec = replace(spec, nic_latency=latency)
    rng = np.random.default_rng(5)
    n = spec.machines * spec.gpus_per_machine
    logs = [random_log(rng, n, 4, 40 * n), random_log(rng, n, 3, 2000)]
    costs = Costs(spec, WORK, **CALIBRATED.get(features, {}))
    if "host_efficiency" in CALIBRATED.get(features, {}):  # one that does not level off at the thousands in flight
        costs = replace(costs, host_efficiency=NicEfficiency(((1, 1.0), (64, 0.8), (4096, 0.5))))
    net = assert_second_client_same(logs, costs, "fifo", 3e-5)
    assert len(net.model.mm.free) == net.num_links and len(net.model.mm.wire.routes) > 1024 > len(logs[0])


@pytest.mark.parametrize("features", ["none", "host-efficiency", "nic-efficiency", "all"])
@pytest.mark.parametrize("spec", SPECS[:3], ids=spec_id)
def test_general_path_messages_declared_a_few_at_a_time(spec, features):
    """Messages declared a few at a time between injects (as a SimPy process sends them), 1200 of them in
    600 rounds 2 us apart (the room grows past 1024 in flight): the oracle's message times, events and
    clock. The adapter writes their routes into its state in place and keeps the state (the same object)
    until the room grows, but where a NIC efficiency table's runs of end times lack room for their hops on
    NIC links (fastfifo.declared): then only those are laid out anew, with room to spare, so rarely, and no
    run ever overflows."""
    rng = np.random.default_rng(9)
    n = spec.machines * spec.gpus_per_machine
    sizes = rng.integers(1, 4, 600)
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    src, dst = rng.integers(0, n, bounds[-1]), rng.integers(0, n, bounds[-1])
    dst = np.where(rng.random(bounds[-1]) < 0.1, src, dst)  # same-GPU messages: no link at all
    nbytes = rng.choice([0.0, 1e3, 3e5, 1e6], bounds[-1])
    costs = Costs(spec, WORK, **CALIBRATED.get(features, {}))

    def run(net: Network) -> list:
        seen = []

        def declare(i: int) -> None:
            ids = net.add_messages(src[bounds[i]:bounds[i + 1]], dst[bounds[i]:bounds[i + 1]],
                                   nbytes[bounds[i]:bounds[i + 1]])
            net.start(ids)
            seen.append(getattr(net.model, "mm", None))
            if i + 1 < len(sizes):
                net.schedule(2e-6, declare, i + 1)

        net.schedule(0.0, declare, 0)
        net.run()
        return seen

    net, ref_net = Network(costs, "fifo"), oracle_network(costs, "fifo")
    seen = run(net)
    run(ref_net)
    for field in ("sent_at", "delivered_at"):
        assert np.array_equal(getattr(net, field)[:net.count], getattr(ref_net, field)[:ref_net.count])
    assert np.isfinite(net.delivered_at[:net.count]).all()
    assert (net.events, net.clock.now) == (ref_net.events, ref_net.clock.now)
    kept = laid = 0
    for was, mm in zip(seen, seen[1:]):
        if len(mm.wire.routes) != len(was.wire.routes):  # the room grew (Fifo.reserve)
            continue
        if mm is was:
            kept += 1
        else:  # the NIC runs laid out anew, the rest kept
            assert mm.wire.host.ends is not was.wire.host.ends and mm.wire.routes is was.wire.routes
            assert mm.free is was.free and mm.wire.host.first_end is was.wire.host.first_end
            laid += 1
        assert (mm.wire.host.pushed <= mm.wire.host.stop).all()
    assert len({len(mm.wire.routes) for mm in seen}) == 2
    if "nic_efficiency" in CALIBRATED.get(features, {}):
        assert 0 < 8 * laid < kept
    else:
        assert laid == 0


def test_general_path_after_a_compiled_run_same_times():
    """A log replayed compiled, then a second client on the same network (the general path, which takes
    a network that has run): the oracle's times for both."""
    spec = SPECS[1]
    rng = np.random.default_rng(11)
    n = spec.machines * spec.gpus_per_machine
    logs = [random_log(rng, n, 3, 30 * n), random_log(rng, n, 3, 30 * n)]
    assert_second_client_same(logs, Costs(spec, WORK, **CALIBRATED["all"]), "fifo", None)
