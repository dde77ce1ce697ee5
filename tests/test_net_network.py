"""The network API: send / schedule / compute / now / run, several clients on one clock and one set of links."""

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.network import Network
from zensim.net.profile import WorkCost
from zensim.net.replay import LogReplay, replay
from zensim.net.topology import ClusterSpec
from zensim.run.log import Message, MessageLog, Work

B = 1e9
MERGE_1US = WorkCost({"hash": 0.0, "merge": 1e-6, "encode": 0.0, "decode": 0.0, "copy": 0.0})


def costs(machines=4, gpus=1, **kw):
    return Costs(ClusterSpec(machines, gpus, B), WorkCost.zero(), **kw)


@pytest.mark.parametrize("model", MODELS)
def test_send_schedule_now_run(model):
    net = Network(costs(), model)
    seen = []
    net.schedule(0.5, lambda: seen.append(("timer", net.now)))
    m = net.send(0, 1, 1e6, lambda i: seen.append(("delivered", i, net.now)))
    net.run()
    assert seen == [("delivered", m, pytest.approx(1e-3)), ("timer", 0.5)]
    assert net.now == 0.5 and net.sent_at[m] == 0 and net.delivered_at[m] == pytest.approx(1e-3)
    net.run(until=2.0)
    assert net.now == 2.0
    with pytest.raises(ValueError, match="delay"):
        net.schedule(-1, print)


@pytest.mark.parametrize("model", MODELS)
def test_run_until_stops_in_between(model):
    net = Network(costs(), model)
    m = net.send(0, 1, 1e6)
    net.run(until=5e-4)
    assert net.now == 5e-4 and np.isnan(net.delivered_at[m])
    net.run()
    assert net.delivered_at[m] == pytest.approx(1e-3)


@pytest.mark.parametrize("model", MODELS)
def test_compute_on_shared_cores(model):
    """Three 1 s jobs on a host with 2 cores end at 1.5 s; on another host a job runs alone."""
    net = Network(costs(host_cores=2), model)
    ends = {}
    for job, host in enumerate((0, 0, 0, 1)):
        net.compute(host, 1.0, lambda j: ends.__setitem__(j, net.now), job)
    net.run()
    assert ends == {0: pytest.approx(1.5), 1: pytest.approx(1.5), 2: pytest.approx(1.5), 3: pytest.approx(1.0)}


@pytest.mark.parametrize("model", MODELS)
def test_compute_beside_other_processes(model):
    """With 2 always-runnable processes outside the simulation on a 2-core host, one 1 s job runs at
    2/3 speed (1.5 s) and three at 2/5 (2.5 s): the fair share of 2 cores among jobs + others."""
    for jobs, end in ((1, 1.5), (3, 2.5)):
        net = Network(costs(host_cores=2, host_others=2.0), model)
        ends = []
        for job in range(jobs):
            net.compute(0, 1.0, lambda: ends.append(net.now))
        net.run()
        assert ends == [pytest.approx(end)] * jobs
    with pytest.raises(ConfigError, match="host_others: must be a number of processes >= 0"):
        costs(host_cores=2, host_others=-1.0)


def test_bad_messages():
    net = Network(costs(), next(iter(MODELS)))
    with pytest.raises(ValueError, match="same length"):
        net.add_messages([0, 1], [1], [1, 2])
    with pytest.raises(ValueError, match=">= 0"):
        net.send(0, 1, -5)
    with pytest.raises(ValueError, match="GPU ids"):
        net.send(0, 4, 5)


def test_int32_ids_and_their_limits():
    """Ranks, stages, routes and message ids are int32 (bytes int64); what would overflow them is refused
    with one line: ranks x stages of a log, a rank that does not fit, the network's 2**31st message."""
    log = MessageLog(4, 2, [Message(1, 0, 3, 2**40, "coo")], [Work(1, 3, "post", "merge", 2**40)])
    assert [c.dtype for c in (log.stage, log.src, log.dst, log.w_stage, log.w_rank, log.w_phase)] == \
        [np.int32] * 5 + [np.int8]
    assert log.nbytes.tolist() == log.w_elements.tolist() == [2**40]
    with pytest.raises(ValueError, match=r"^message log: 65536 ranks x 32768 stages reach 2\*\*31"):
        MessageLog(2**16, 2**15)
    with pytest.raises(ValueError, match="does not fit int32"):
        MessageLog.from_columns(4, 2, (np.zeros(1), np.array([2**31]), np.zeros(1), np.ones(1)), np.zeros(1),
                                ["coo"], (np.zeros(0),) * 4, np.zeros(0), [])
    net = Network(costs(), "fifo")
    net.add_messages([0], [1], [10])
    assert net.routes.dtype == np.int32
    net.count = 2**31 - 1  # as if that many were declared: the next one is refused before anything grows
    with pytest.raises(ValueError, match=r"^network: 2147483648 messages reach 2\*\*31"):
        net.add_messages([0], [1], [10])


@pytest.mark.parametrize("model", MODELS)
def test_two_logs_share_one_network(model):
    """Two copies of a one-message log on the same link: alone 1 ms, together 2 ms (makespan of both);
    the second started 5 ms later through a timer does not meet the first and takes 1 ms again."""
    log = MessageLog(2, 1, [Message(0, 0, 1, 10**6, "coo")])
    alone = replay(log, costs(2), model).makespan
    assert alone == pytest.approx(1e-3)
    net = Network(costs(2), model)
    done = []
    a, b = (LogReplay(net, log, on_done=lambda i=i: done.append((i, net.now))) for i in range(2))
    a.start()
    b.start()
    net.run()
    assert max(a.timing().makespan, b.timing().makespan) == pytest.approx(2e-3)
    assert [i for i, _ in done] in ([0, 1], [1, 0]) and done[-1][1] == pytest.approx(2e-3)
    net = Network(costs(2), model)
    a, b = LogReplay(net, log), LogReplay(net, log)
    a.start()
    net.schedule(5e-3, b.start)
    net.run()
    assert a.timing().makespan == pytest.approx(1e-3)
    assert b.timing().stage_start[0, 0] == 5e-3 and b.timing().makespan == pytest.approx(6e-3)
    assert b.timing().msg_start.tolist() == [5e-3]


@pytest.mark.parametrize("model", MODELS)
def test_clients_share_host_cores(model):
    """Two logs whose ranks 0 and 1 each do 1 s of pre work on one 1-core host: 2 s in all; apart, 1 s."""
    log = MessageLog(2, 1, [], [Work(0, 0, "pre", "merge", 10**6)])
    net = Network(Costs(ClusterSpec(1, 2, B), MERGE_1US, host_cores=1), model)
    clients = [LogReplay(net, log, gpu_of_rank=np.array([g, 1 - g])) for g in (0, 1)]
    for c in clients:
        c.start()
    net.run()
    assert [c.timing().makespan for c in clients] == [pytest.approx(2.0)] * 2


@pytest.mark.parametrize("model", MODELS)
def test_one_group_or_many_at_one_instant(model):
    """Sends of one instant share the network the same way whether issued as one group per sender or one
    by one (maxmin solves once per instant either way): an all-to-all of equal messages, rotated order."""
    n, size = 5, 1e5
    src = np.repeat(np.arange(n), n - 1)
    dst = (src + np.tile(np.arange(1, n), n)) % n
    ends = []
    for grouped in (True, False):
        net = Network(costs(n), model)
        ids = net.add_messages(src, dst, np.full(len(src), size))
        if grouped:
            for r in range(n):
                net.start(ids[src == r])
        else:
            for m in ids.tolist():
                net.start([m])
        net.run()
        ends.append(net.now)
    assert ends == [pytest.approx((n - 1) * size / B, rel=1e-9)] * 2
