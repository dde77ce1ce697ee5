"""Gemini's checkpoint traffic on the iteration timeline: a client of the same network as the buckets."""

import numpy as np
import pytest

from zensim.net.costs import Costs
from zensim.net.topology import ClusterSpec
from zensim.train.background import Checkpoint, Wire
from zensim.train.buckets import DDPBuckets
from zensim.train.fusion.shapes import shape_profile
from zensim.train.gemini import CheckpointTraffic, interleaved_plan, iteration_spans, measure, nic_busy
from zensim.train.iteration import simulate_iteration
from zensim.train.syncs import DENSE

PROFILE = shape_profile("gpt2", 8 * 1024, "a100-bf16", 8, optimizer_s=0.03)
COSTS = Costs(ClusterSpec.parse(4, 2, "25Gbps", "25us", nvlink_latency="1us"))
CKPT = Checkpoint(3e8, replicas=2)


def simulate(n, background=None):
    return simulate_iteration(PROFILE, DENSE, COSTS, bucketing=DDPBuckets(100), iterations=n,
                              background=background).run


@pytest.fixture(scope="module")
def baseline():
    return simulate(7)


def test_idle_spans_are_gaps_of_the_nic(baseline):
    spans, length = iteration_spans(baseline, 0, 1, 2)
    assert spans and length > 0
    start = baseline.iteration_start[1, 0]
    busy = [(lo - start, hi - start) for lo, hi in nic_busy(baseline, 0)]
    for lo, hi in spans:
        assert 0 <= lo < hi <= length + 1e-12
        assert not any(b_lo < hi - 1e-12 and b_hi > lo + 1e-12 for b_lo, b_hi in busy)   # no message inside
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert spans[0][0] == 0 and spans[0][1] >= 0.9 * PROFILE.forward_s   # the forward leaves the NIC idle


def test_every_chunk_reaches_the_peer_replica(baseline):
    spans, _ = iteration_spans(baseline, 0, 1, 2)
    wire = Wire(COSTS.cluster.nic_bandwidth, COSTS.cluster.nic_latency)
    plan, _ = interleaved_plan(spans, CKPT, wire, 2)
    assert sum(s.nbytes for s in plan) == pytest.approx(CKPT.remote_bytes)
    traffic = CheckpointTraffic(COSTS.cluster, plan, 2, first=1)
    run = simulate(4, traffic)
    net = run.network
    ids = np.array(traffic.ids)
    assert net.nbytes[ids].sum() == pytest.approx(COSTS.cluster.machines * CKPT.remote_bytes)
    assert np.isfinite(net.delivered_at[ids]).all()
    # every message leaves its machine's NIC and enters its placement group's peer (groups (0, 1), (2, 3))
    machine = net.topology.machine_of_link()[net.routes[ids][:, :2]]
    assert (machine[:, 1] == machine[:, 0] ^ 1).all()
    # released no earlier than the start of the span it was placed in
    assert (net.sent_at[ids] >= run.iteration_start[1].min() - 1e-12).all()


def test_blocking_pays_what_the_idle_time_cannot_hide_and_interleaving_less(baseline):
    send = CKPT.remote_bytes / COSTS.cluster.nic_bandwidth
    block = measure(simulate, COSTS, CKPT, every=2, mode="blocking", baseline=baseline)
    assert block.idle_s < send     # this checkpoint does not fit one iteration's idle time
    # sent at once, it can hide at most in the iteration's idle time
    assert block.overhead_s >= send - block.idle_s - 1e-9
    inter = measure(simulate, COSTS, CKPT, every=2, mode="interleaved", baseline=baseline)
    assert inter.overhead_s < block.overhead_s
    assert inter.idle_after_s < inter.idle_s   # it used the idle time


def test_spread_over_enough_iterations_it_is_nearly_free(baseline):
    spans, length = iteration_spans(baseline, 0, 1, 2)
    wire = Wire(COSTS.cluster.nic_bandwidth, COSTS.cluster.nic_latency)
    k = next(k for k in range(1, 4) if interleaved_plan(spans, CKPT, wire, k)[1] == 0)
    cost = measure(simulate, COSTS, CKPT, every=k, mode="interleaved", baseline=baseline)
    assert cost.predicted_s == 0
    assert cost.fraction < 0.01
    with pytest.raises(ValueError, match="mode"):
        measure(simulate, COSTS, CKPT, every=1, mode="eventually", baseline=baseline)
