"""Multi-tier fat-trees: routes up to the lowest shared tier and down, uplink capacities per tier, a
dense all-reduce against its closed form, and oversubscription slowing exactly the traffic that
crosses the oversubscribed tier."""

from __future__ import annotations

import numpy as np
import pytest

from zensim.cli import main
from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.presets import ring_allreduce_seconds, ring_bandwidth
from zensim.net.profile import WorkCost
from zensim.net.fabrics import build_topology
from zensim.net.links import LinkKind
from zensim.net.topology import ClusterSpec, parse_tiers
from zensim.sim.cluster import build_cluster
from zensim.sim.run import simulate
from zensim.trace import TensorSpec, TraceWriter

B = 1e9  # NIC bytes/s


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """32 workers, numel a multiple of 2 x 16 (the closed forms are exact)."""
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    rng = np.random.default_rng(3)
    with TraceWriter(path, [TensorSpec("w", 32000)], workers=32, iterations=1) as w:
        for worker in range(32):
            w.write(0, worker, 0, np.unique(rng.choice(32000, 300, replace=False)))
    return path


def test_uplink_capacity_is_what_the_members_bring_over_the_tier_oversubscription():
    # 10 machines; leaves of 4 (2:1), pods of 2 leaves (3:1): leaves hold 4, 4, 2 machines, pods 8 and 2
    topo = build_topology(ClusterSpec(10, 1, B, fabric="fattree", tiers=((4, 2.0), (2, 3.0))))
    cap = {topo.names[k]: topo.capacity[k] for k in topo.links_of_kind(LinkKind.FABRIC)}
    assert cap["leaf-up 0"] == cap["leaf-down 1"] == pytest.approx(4 * B / 2)
    assert cap["leaf-up 2"] == pytest.approx(2 * B / 2)
    assert cap["pod-up 0"] == pytest.approx((4 * B / 2 + 4 * B / 2) / 3)
    assert cap["pod-down 1"] == pytest.approx(2 * B / 2 / 3)
    assert len(cap) == 2 * (3 + 2)


def test_routes_climb_to_the_lowest_shared_tier():
    topo = build_topology(ClusterSpec(16, 2, B, fabric="fattree", tiers=((2, 1.0), (2, 1.0), (2, 1.0))))
    names = lambda s, d: [topo.names[k] for k in topo.route(s, d)]  # noqa: E731
    assert names(0, 1) == ["nvl-up 0", "nvl-down 1"]
    assert names(0, 3) == ["nic-up 0", "nic-down 1"]  # machines 0, 1: one leaf
    assert names(0, 5) == ["nic-up 0", "leaf-up 0", "leaf-down 1", "nic-down 2"]
    assert names(0, 9) == ["nic-up 0", "leaf-up 0", "pod-up 0", "pod-down 1", "leaf-down 2", "nic-down 4"]
    assert names(31, 0) == ["nic-up 15", "leaf-up 7", "pod-up 3", "tier3-up 1", "tier3-down 0", "pod-down 0",
                            "leaf-down 0", "nic-down 0"]
    assert topo.route_width == 8


def test_a_leafspine_is_the_one_tier_fattree():
    leafspine = build_topology(ClusterSpec(6, 2, B, fabric="leafspine", oversub=2.0, machines_per_leaf=4))
    fattree = build_topology(ClusterSpec(6, 2, B, fabric="fattree", tiers=((4, 2.0),)))
    assert leafspine.names == fattree.names
    assert np.array_equal(leafspine.capacity, fattree.capacity)
    src, dst = np.divmod(np.arange(144), 12)
    assert np.array_equal(leafspine.route_matrix(src, dst), fattree.route_matrix(src, dst))


@pytest.mark.parametrize("model", ["fifo", "maxmin"])
@pytest.mark.parametrize("tiers", [((2, 1.0), (2, 8.0)), ((2, 4.0), (2, 1.0)), ((4, 2.0), (4, 1.0)), ((16, 1.0),)])
def test_dense_allreduce_one_gpu_per_machine_is_its_closed_form(trace, model, tiers):
    cluster = ClusterSpec(16, 1, B, nic_latency=3e-6, fabric="fattree", tiers=tiers)
    (rec,) = simulate(trace, ["dense-allreduce"], Costs(cluster, WorkCost.zero()), model)
    expected = ring_allreduce_seconds(32000, 16, 1, cluster.nvlink_bandwidth, 0.0, B, 3e-6, False, model, tiers=tiers)
    assert rec.time_s == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("tiers", [((2, 4.0),), ((2, 1.0), (2, 3.0)), ((8, 1.0),)])
def test_dense_allreduce_in_zens_layout_is_its_closed_form(trace, tiers):
    cluster = ClusterSpec(8, 2, B, nic_latency=3e-6, nvlink_latency=1e-6, fabric="fattree", tiers=tiers)
    (rec,) = simulate(trace, ["dense-allreduce"], Costs(cluster, WorkCost.zero()), "maxmin")
    expected = ring_allreduce_seconds(32000, 8, 2, cluster.nvlink_bandwidth, 1e-6, B, 3e-6, False, "maxmin",
                                      tiers=tiers)
    assert rec.time_s == pytest.approx(expected, rel=1e-9)


def test_ring_bandwidth_is_the_slowest_crossed_tier():
    assert ring_bandwidth(16, B, ((2, 1.0), (2, 8.0))) == pytest.approx(4 * B / 8)
    assert ring_bandwidth(16, B, ((2, 4.0), (2, 1.0))) == pytest.approx(2 * B / 4)
    assert ring_bandwidth(4, B, ((4, 8.0),)) == B  # one group: the ring crosses no tier
    with pytest.raises(ValueError, match="do not fill"):
        ring_bandwidth(10, B, ((4, 2.0),))


# 16 machines, leaves of 2, pods of 2 leaves (4 machines); one message per link, each machine sends at
# most one and receives at most one
INTRA_LEAF, CROSS_LEAF, CROSS_POD = (0, 1), (8, 10), (2, 6)


def _delivery_times(model: str, tiers) -> dict[tuple[int, int], float]:
    spec = ClusterSpec(16, 1, B, nic_latency=5e-6, fabric="fattree", tiers=tiers)
    net = Network(Costs(spec, WorkCost.zero()), model)
    ids = {pair: net.send(*pair, 1e6) for pair in (INTRA_LEAF, CROSS_LEAF, CROSS_POD)}
    net.run()
    return {pair: float(net.delivered_at[m]) for pair, m in ids.items()}


@pytest.mark.parametrize("model", ["fifo", "maxmin"])
def test_oversubscription_slows_exactly_the_traffic_crossing_its_tier(model):
    alone = 5e-6 + 1e6 / B
    base = _delivery_times(model, ((2, 1.0), (2, 1.0)))
    assert all(t == pytest.approx(alone, rel=1e-12) for t in base.values())
    pods = _delivery_times(model, ((2, 1.0), (2, 8.0)))  # pod uplinks 4 B / 8 = B / 2: only cross-pod traffic
    assert pods[INTRA_LEAF] == base[INTRA_LEAF] and pods[CROSS_LEAF] == base[CROSS_LEAF]
    assert pods[CROSS_POD] == pytest.approx(5e-6 + 1e6 / (B / 2), rel=1e-12)
    leaves = _delivery_times(model, ((2, 4.0), (2, 1.0)))  # leaf uplinks 2 B / 4: everything leaving a leaf
    assert leaves[INTRA_LEAF] == base[INTRA_LEAF]
    assert leaves[CROSS_LEAF] == leaves[CROSS_POD] == pytest.approx(5e-6 + 1e6 / (B / 2), rel=1e-12)


def test_flows_crossing_a_tier_share_its_uplink_max_min_fairly():
    # machines 0..3 of pod 0 each send to pod 1 (4..7): four flows on pod-up 0 of 4 B / 2 = 2 B
    spec = ClusterSpec(8, 1, B, fabric="fattree", tiers=((2, 1.0), (2, 2.0)))
    net = Network(Costs(spec, WorkCost.zero()), "maxmin")
    for m in range(4):
        net.send(m, m + 4, 1e6)
    net.run()
    assert np.allclose(net.delivered_at[:4], 1e6 / (2 * B / 4), rtol=1e-12)


def test_tiers_parse_and_errors(trace, capsys):
    assert parse_tiers("4:1, 8:2.5") == ((4, 1.0), (8, 2.5))
    for bad in ("4", "4:0.5", "0:1", "a:b", "4:1,"):
        with pytest.raises(ConfigError, match="--tiers: cannot parse"):
            parse_tiers(bad)
    with pytest.raises(ConfigError, match="tiers: a fat-tree needs its tiers"):
        ClusterSpec(4, 1, B, fabric="fattree")
    with pytest.raises(ConfigError, match="rail-optimized"):
        ClusterSpec(4, 8, B, nics="gpu", fabric="fattree", tiers=((2, 1.0),))
    spec, _ = build_cluster(8, fabric="fattree", tiers="2:1,2:4")
    assert spec.tiers == ((2, 1.0), (2, 4.0)) and "fattree 2:1,2:4" in spec.describe()
    base = ["simulate", "--trace", str(trace), "--machines", "4", "--scheme", "dense-allreduce"]
    for extra, message in ((["--tiers", "2:1"], "--tiers: only for a fat-tree fabric (fabric is 'switch')"),
                           (["--fabric", "fattree"], "--tiers: a fat-tree needs its tiers"),
                           (["--fabric", "fattree", "--tiers", "2:1", "--oversub", "2"],
                            "--oversub: only for a leaf-spine fabric (fabric is 'fattree'")):
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
    assert main(base + ["--fabric", "fattree", "--tiers", "2:1,2:2", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"fabric": "fattree"' in out and '"tiers": [' in out
