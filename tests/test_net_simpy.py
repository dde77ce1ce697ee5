"""SimPy processes on zensim's network (zensim.net.simpy_adapter): a straggler in a ring all-reduce
written as SimPy processes ends at its closed form, stage by stage; without a straggler, a log written
as processes, or started as a client on a SimPy environment, gives zensim's own replay bit for bit;
background traffic as a SimPy process takes its max-min fair share; docs/simulator.md's example runs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from replay_support import FIELDS, scheme_costs
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.profile import WorkCost
from zensim.net.replay import compiled, replay, work_seconds
from zensim.net.topology import ClusterSpec
from zensim.run.log import Message, MessageLog

simpy = pytest.importorskip("simpy", reason="SimPy is the optional extra zensim[simpy]")
from zensim.net.simpy_adapter import SimPyNetwork  # noqa: E402

B = 25e9 / 8
DOC = Path(__file__).resolve().parent.parent / "docs" / "simulator.md"


def ring(n: int, model: str, chunk: float, latency: float, straggler: int, delay: float) -> tuple[np.ndarray, Costs]:
    """A dense ring all-reduce as SimPy processes on n machines: 2(n-1) stages, in each rank r sends
    `chunk` bytes to r+1 and waits for that send and for r-1's; rank `straggler` first waits `delay`
    seconds. Every rank's stage end times (n, stages), and the costs it ran on."""
    env = simpy.Environment()
    costs = Costs(ClusterSpec(n, 1, B, nic_latency=latency), WorkCost.zero())
    sim = SimPyNetwork(env, costs, model)
    stages = 2 * (n - 1)
    ends = np.full((n, stages), np.nan)

    def rank(r: int):
        if r == straggler:
            yield env.timeout(delay)
        for s in range(stages):
            yield sim.send(r, (r + 1) % n, chunk, tag=s) & sim.receive(r, tag=s)
            ends[r, s] = env.now

    for r in range(n):
        env.process(rank(r))
    env.run()
    assert env.now == sim.network.now == np.nanmax(ends)
    return ends, costs


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("n,straggler", [(5, 0), (8, 3)])
def test_a_straggler_delays_the_ring_by_its_delay(model, n, straggler):
    """No link is ever shared (rank r alone sends on r's uplink and into r+1's downlink), so a stage
    takes T = alpha + c/B. Rank r's stage s ends at max(its stage s-1, r-1's stage s-1) + T (the
    straggler's "stage -1" ending at d): the delay d reaches rank straggler+j at its stage j-1, and every
    rank ends at 2(n-1) T + d, the dense ring time + d."""
    chunk, latency, delay = 1e6, 5e-6, 3e-3
    ends, _ = ring(n, model, chunk, latency, straggler, delay)
    T = latency + chunk / B
    s = np.arange(2 * (n - 1))
    late = (np.arange(n)[:, None] - straggler) % n <= s[None, :] + 1
    np.testing.assert_allclose(ends, (s + 1) * T + delay * late, rtol=1e-12, atol=0)
    assert ends.max() == pytest.approx(2 * (n - 1) * T + delay, rel=1e-12)


@pytest.mark.parametrize("model", MODELS)
def test_without_a_straggler_the_ring_is_zensims_replay(model):
    n, chunk = 6, 1e6
    ends, costs = ring(n, model, chunk, 2e-6, 0, 0.0)
    stages = 2 * (n - 1)
    log = MessageLog(n, stages, [Message(s, r, (r + 1) % n, int(chunk), "dense") for s in range(stages)
                                 for r in range(n)])
    assert np.array_equal(ends, replay(log, costs, model).stage_end)


def as_processes(env, sim: SimPyNetwork, log: MessageLog, costs: Costs) -> np.ndarray:
    """`log` as one SimPy process per rank with zensim.net.replay's semantics: per stage its pre work,
    its sends in rotated order, the wait for them and for the stage's messages to it, its post work.
    Its stage end times (n, stages), filled as the environment runs."""
    n, stages = log.n, log.num_stages
    pre, post = work_seconds(log, costs)
    cols = log.arrays()
    src, dst, stage, nbytes = cols["src"], cols["dst"], cols["stage"], cols["nbytes"]
    sends: dict[tuple[int, int], list[int]] = {}
    receives: dict[tuple[int, int], list[int]] = {}
    for i in np.lexsort(((dst - src) % n, stage, src)).tolist():
        sends.setdefault((int(src[i]), int(stage[i])), []).append(i)
        receives.setdefault((int(dst[i]), int(stage[i])), []).append(i)
    host = np.arange(n) // costs.cluster.gpus_per_machine
    ends = np.full((n, stages), np.nan)

    def rank(r: int):
        for s in range(stages):
            if pre[r, s] > 0:
                yield sim.compute(host[r], pre[r, s])
            events = [sim.send(r, int(dst[i]), float(nbytes[i]), tag=i) for i in sends.get((r, s), [])]
            yield env.all_of(events + [sim.receive(r, i) for i in receives.get((r, s), [])])
            if post[r, s] > 0:
                yield sim.compute(host[r], post[r, s])
            ends[r, s] = env.now

    for r in range(n):
        env.process(rank(r))
    return ends


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", ["dense-allreduce", "zen", "sparcml"])
def test_a_log_as_processes_or_as_a_client_is_zensims_replay(model, name):
    """ZEN's layout (4 x 3, 1 us latency) with the default local work: the log written as SimPy processes
    gives replay()'s stage ends bit for bit, and started as a client on a SimPy environment (`replay`)
    every field of its Timing; the compiled loops are never taken there."""
    log, costs = scheme_costs(name, 4, 3)
    want = replay(log, costs, model)
    env = simpy.Environment()
    ends = as_processes(env, SimPyNetwork(env, costs, model), log, costs)
    env.run()
    assert np.array_equal(ends, want.stage_end)
    env = simpy.Environment()
    sim = SimPyNetwork(env, costs, model)
    assert compiled(sim.network) is None
    done = sim.replay(log)
    env.run()
    for field in FIELDS:
        assert np.array_equal(getattr(done.value, field), getattr(want, field)), field
    assert env.now == want.makespan


@pytest.mark.parametrize("options,rel", [({"batch": 0}, 1e-12), ({}, 5e-3)])
def test_background_traffic_takes_its_fair_share(options, rel):
    """GPU 0 sends F bytes to GPU 1 at 0; a background SimPy process, from t0 on, sends K messages of b
    bytes one after another from GPU 2 to GPU 1: the two share GPU 1's downlink, B/2 each, so the
    background's k-th message arrives at t0 + 2kb/B and the large one at (F + Kb)/B (the link never
    idles). Exact max-min to round-off; the default batch within its stated 0.5%."""
    F, b, K, t0 = 8e6, 5e5, 6, 1e-3
    env = simpy.Environment()
    sim = SimPyNetwork(env, Costs(ClusterSpec(3, 1, B), WorkCost.zero()), "maxmin", options)
    arrived: list[float] = []

    def background():
        yield env.timeout(t0)
        for _ in range(K):
            yield sim.send(2, 1, b)
            arrived.append(env.now)

    large = sim.send(0, 1, F)
    env.process(background())
    env.run()
    assert F > B * t0 + K * b  # the large message outlasts the background
    np.testing.assert_allclose(arrived, t0 + 2 * b * np.arange(1, K + 1) / B, rtol=rel)
    assert sim.network.delivered_at[large.value] == pytest.approx((F + K * b) / B, rel=rel)


def test_compute_shares_the_hosts_processors():
    """Two pieces of 1 ms on one host with one processor: both end at 2 ms (processor sharing)."""
    env = simpy.Environment()
    sim = SimPyNetwork(env, Costs(ClusterSpec(2, 1, B), WorkCost.zero(), host_cores=1))
    ends: list[float] = []

    def work():
        yield sim.compute(0, 1e-3)
        ends.append(env.now)

    env.process(work())
    env.process(work())
    env.run()
    assert ends == pytest.approx([2e-3, 2e-3], rel=1e-12)


def test_a_pending_tag_cannot_be_used_twice():
    env = simpy.Environment()
    sim = SimPyNetwork(env, Costs(ClusterSpec(2, 1, B), WorkCost.zero()))
    sim.receive(1, "x")
    with pytest.raises(ValueError, match="tag 'x' to GPU 1 already received and not yet paired"):
        sim.receive(1, "x")
    sim.send(0, 1, 10, tag="y")
    with pytest.raises(ValueError, match="tag 'y' to GPU 1 already sent"):
        sim.send(0, 1, 10, tag="y")
    assert sim.network.count == 1  # the refused send sent nothing
    first = sim.send(0, 1, 10, tag="x")
    env.run()
    assert first.value == 1 and sim.receive(1, "y").value == 0  # paired: the arrival, before or after


def test_the_docs_example_runs(capsys):
    """docs/simulator.md's SimPy example, as written: the straggler's ring ends at the dense ring + d."""
    block = re.search(r"### SimPy processes.*?```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "docs/simulator.md", "exec"), namespace)
    assert namespace["env"].now == pytest.approx(namespace["dense"] + namespace["delay"], rel=1e-12)
    assert "ring with a straggler" in capsys.readouterr().out
