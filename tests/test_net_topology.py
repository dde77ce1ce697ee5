"""Topology: routes over NVLink inside a machine, shared NICs across, leaf-spine uplinks."""

import pytest

from zensim.errors import ConfigError
from zensim.net.topology import ClusterSpec, Topology


def names(topo, src, dst):
    return [topo.names[k] for k in topo.route(src, dst)]


def test_routes_switch():
    topo = Topology(ClusterSpec.parse(3, 4, "25Gbps", nvlink="300GB/s"))
    assert names(topo, 0, 3) == ["nvl-up 0", "nvl-down 3"]
    assert names(topo, 1, 6) == ["nic-up 0", "nic-down 1"]
    assert names(topo, 5, 5) == []
    # all GPUs of a machine share one NIC: same link ids
    assert topo.route(0, 4)[0] == topo.route(3, 11)[0]
    up = topo.route(0, 4)[0]
    assert topo.capacity[up] == 25e9 / 8
    assert topo.capacity[topo.route(0, 1)[0]] == 300e9


def test_routes_leafspine_capacity():
    topo = Topology(ClusterSpec.parse(6, 1, "10Gbps", fabric="leafspine", oversub=2, machines_per_leaf=4))
    assert names(topo, 0, 3) == ["nic-up 0", "nic-down 3"]
    assert names(topo, 0, 5) == ["nic-up 0", "leaf-up 0", "leaf-down 1", "nic-down 5"]
    leaf_up0, leaf_down1 = topo.route(0, 5)[1:3]
    assert topo.capacity[leaf_up0] == pytest.approx(4 * 10e9 / 8 / 2)
    assert topo.capacity[leaf_down1] == pytest.approx(2 * 10e9 / 8 / 2)  # the last leaf holds 2 machines


def test_latency_on_egress():
    topo = Topology(ClusterSpec.parse(2, 2, "25Gbps", nic_latency="5us", nvlink_latency="1us"))
    assert topo.latency[list(topo.route(0, 2))].sum() == pytest.approx(5e-6)
    assert topo.latency[list(topo.route(0, 1))].sum() == pytest.approx(1e-6)


@pytest.mark.parametrize("kwargs", [dict(machines=0), dict(fabric="torus"), dict(oversub=0.5),
                                    dict(gpus_per_machine=1.5)])
def test_bad_cluster(kwargs):
    args = dict(machines=2, gpus_per_machine=1, nic="25Gbps") | kwargs
    with pytest.raises(ConfigError):
        ClusterSpec.parse(**args)
