"""The maxmin model's own properties: fair shares, freed capacity, both solvers, batching, options."""

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.models import maxmin as mm
from zensim.net.profile import NicEfficiency, WorkCost
from zensim.net.replay import replay
from zensim.net.topology import ClusterSpec
from zensim.run.log import Message, MessageLog

B = 25e9 / 8
NAME = mm.MaxMin.name


def cluster(n, gpus=1, **kw):
    return ClusterSpec(n, gpus, B, **kw)


def run(log, spec, batch=1 / 64, **costs):
    return replay(log, Costs(spec, WorkCost.zero(), **costs), NAME, options={"batch": batch})


def test_two_flows_share_a_link_equally():
    """Two 1 MB messages into one downlink: both at b/2, both end at 2 MB / b."""
    log = MessageLog(3, 1, [Message(0, 0, 2, 10**6, "coo"), Message(0, 1, 2, 10**6, "coo")])
    assert run(log, cluster(3)).msg_end == pytest.approx([2e6 / B, 2e6 / B], rel=1e-12)


def test_short_flow_frees_bandwidth():
    """Flows of 1 MB and 3 MB into one link: both at b/2 until 2 MB have passed, then the long one at b."""
    log = MessageLog(3, 1, [Message(0, 0, 2, 10**6, "coo"), Message(0, 1, 2, 3 * 10**6, "coo")])
    t = run(log, cluster(3), batch=0)
    assert t.msg_end == pytest.approx([2e6 / B, 4e6 / B], rel=1e-12)


def test_waterfill_bottlenecks():
    # A on link 0, B on links 0 and 1, C on link 1; capacities 1 and 2: A = B = 1/2, C = 3/2
    cap = np.array([1.0, 2.0, np.inf])
    rates = mm.waterfill(np.array([[0, 2], [0, 1], [1, 2]]), cap)
    assert rates == pytest.approx([0.5, 0.5, 1.5])


@pytest.mark.parametrize("batch", [0, 1 / 8])
def test_python_and_numpy_solvers_agree(monkeypatch, batch):
    """Small components are solved in plain Python, large ones with numpy: same rates, same times."""
    rng = np.random.default_rng(7)
    n = 6
    msgs = [Message(s, r, d, int(rng.integers(1, 10**5)), "coo")
            for s in range(2) for r in range(n) for d in rng.choice(n, 3, replace=False) if d != r]
    log = MessageLog(n, 2, msgs)
    topo = cluster(3, gpus=2, fabric="leafspine", oversub=2.0, machines_per_leaf=2)
    python = run(log, topo, batch)
    monkeypatch.setattr(mm, "_SMALL", 0)
    numpy = run(log, topo, batch)
    assert python.msg_end == pytest.approx(numpy.msg_end, rel=1e-12)


def test_batching_close_to_exact():
    rng = np.random.default_rng(1)
    n = 12
    msgs = [Message(0, r, d, int(rng.integers(1, 10**5)), "coo") for r in range(n) for d in range(n) if d != r]
    log = MessageLog(n, 1, msgs)
    exact = run(log, cluster(n), batch=0).makespan
    batched = run(log, cluster(n), batch=0.1).makespan
    assert batched == pytest.approx(exact, rel=0.05)
    loads = np.zeros(2 * n)
    for m in msgs:
        loads[m.src] += m.nbytes
        loads[n + m.dst] += m.nbytes
    assert exact >= loads.max() / B * (1 - 1e-12)  # no link beats its capacity


@pytest.mark.parametrize("batch", [-0.1, 1.5, float("nan"), "x"])
def test_bad_batch_is_a_config_error(batch):
    log = MessageLog(2, 1, [Message(0, 0, 1, 100, "coo")])
    with pytest.raises(ConfigError, match="--maxmin-batch"):
        run(log, cluster(2), batch=batch)


def test_host_efficiency_follows_the_active_flows_over_time():
    """A short and a long flow on disjoint NICs run at h(2) together; once the short one ends, the long
    one runs alone at h(1) = 1 for its remaining bytes."""
    host = NicEfficiency(((1, 1.0), (2, 0.5)))
    log = MessageLog(4, 1, [Message(0, 0, 1, 10**6, "coo"), Message(0, 2, 3, 3 * 10**6, "coo")])
    t = run(log, cluster(4), host_efficiency=host)
    short = 10**6 / (B * 0.5)  # both at half rate until the short one is done
    assert t.msg_end == pytest.approx([short, short + (3 * 10**6 - 10**6) / B], rel=1e-9)
