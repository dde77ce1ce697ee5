"""Topology: routes over NVLink inside a machine, shared NICs across, leaf-spine uplinks."""

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.net.fabrics import build_topology
from zensim.net.links import LinkKind, Topology
from zensim.net.topology import ClusterSpec


def names(topo, src, dst):
    return [topo.names[k] for k in topo.route(src, dst)]


def test_routes_switch():
    topo = build_topology(ClusterSpec.parse(3, 4, "25Gbps", nvlink="300GB/s"))
    assert names(topo, 0, 3) == ["nvl-up 0", "nvl-down 3"]
    assert names(topo, 1, 6) == ["nic-up 0", "nic-down 1"]
    assert names(topo, 5, 5) == []
    # all GPUs of a machine share one NIC: same link ids
    assert topo.route(0, 4)[0] == topo.route(3, 11)[0]
    up = topo.route(0, 4)[0]
    assert topo.capacity[up] == 25e9 / 8
    assert topo.capacity[topo.route(0, 1)[0]] == 300e9


def test_routes_leafspine_capacity():
    topo = build_topology(ClusterSpec.parse(6, 1, "10Gbps", fabric="leafspine", oversub=2, machines_per_leaf=4))
    assert names(topo, 0, 3) == ["nic-up 0", "nic-down 3"]
    assert names(topo, 0, 5) == ["nic-up 0", "leaf-up 0", "leaf-down 1", "nic-down 5"]
    leaf_up0, leaf_down1 = topo.route(0, 5)[1:3]
    assert topo.capacity[leaf_up0] == pytest.approx(4 * 10e9 / 8 / 2)
    assert topo.capacity[leaf_down1] == pytest.approx(2 * 10e9 / 8 / 2)  # the last leaf holds 2 machines


def test_latency_on_egress():
    topo = build_topology(ClusterSpec.parse(2, 2, "25Gbps", nic_latency="5us", nvlink_latency="1us"))
    assert topo.latency[list(topo.route(0, 2))].sum() == pytest.approx(5e-6)
    assert topo.latency[list(topo.route(0, 1))].sum() == pytest.approx(1e-6)


@pytest.mark.parametrize("kwargs", [dict(machines=0), dict(fabric="torus"), dict(oversub=0.5),
                                    dict(gpus_per_machine=1.5)])
def test_bad_cluster(kwargs):
    args = dict(machines=2, gpus_per_machine=1, nic="25Gbps") | kwargs
    with pytest.raises(ConfigError):
        ClusterSpec.parse(**args)


def _graph_routes(spec):
    """Routes by weighted shortest paths on an explicit graph (the former construction): an
    independent check of the formulas. Edge weights keep intra-machine traffic on NVLink."""
    import networkx as nx

    graph, g = nx.DiGraph(), spec.gpus_per_machine
    names = {}
    tiers = spec.switch_tiers()
    spans = np.cumprod([size for size, _ in tiers]).tolist()
    for m in range(spec.machines):
        host, nvsw = ("host", m), ("nvsw", m)
        fabric = ("group", 1, m // spans[0]) if tiers else ("switch",)
        for gpu in range(m * g, (m + 1) * g):
            graph.add_edge(("gpu", gpu), nvsw, weight=1, name=f"nvl-up {gpu}")
            graph.add_edge(nvsw, ("gpu", gpu), weight=1, name=f"nvl-down {gpu}")
            graph.add_edge(("gpu", gpu), host, weight=2, name=None)
            graph.add_edge(host, ("gpu", gpu), weight=2, name=None)
        graph.add_edge(host, fabric, weight=1, name=f"nic-up {m}")
        graph.add_edge(fabric, host, weight=1, name=f"nic-down {m}")
    for t, span in enumerate(spans, 1):  # group j of tier t under group j * span // next span of tier t + 1
        tier = {1: "leaf", 2: "pod"}.get(t, f"tier{t}")
        for j in range(-(-spec.machines // span)):
            above = ("group", t + 1, j * span // spans[t]) if t < len(spans) else ("core",)
            graph.add_edge(("group", t, j), above, weight=1, name=f"{tier}-up {j}")
            graph.add_edge(above, ("group", t, j), weight=1, name=f"{tier}-down {j}")
    for s in range(spec.gpus):
        paths = nx.single_source_dijkstra_path(graph, ("gpu", s), weight="weight")
        for d in range(spec.gpus):
            path = paths[("gpu", d)]
            names[s, d] = [graph.edges[u, v]["name"] for u, v in zip(path, path[1:]) if graph.edges[u, v]["name"]]
    return names


@pytest.mark.parametrize("machines,gpus,fabric,per", [(3, 4, "switch", 4), (7, 2, "leafspine", 2),
                                                      (9, 1, "leafspine", 4), (1, 8, "switch", 4),
                                                      (11, 2, "2:1,2:3", 0), (13, 1, "2:2,3:1,2:4", 0)])
def test_routes_by_formula_are_the_shortest_paths(machines, gpus, fabric, per):
    if ":" in fabric:  # a fat-tree's tiers
        spec = ClusterSpec.parse(machines, gpus, "8Gbps", fabric="fattree", tiers=fabric)
    else:
        spec = ClusterSpec(machines, gpus, 1e9, fabric=fabric, oversub=2.0, machines_per_leaf=per)
    topo = build_topology(spec)
    want = _graph_routes(spec)
    src, dst = np.divmod(np.arange(spec.gpus ** 2), spec.gpus)
    rows = topo.route_matrix(src, dst)
    for s, d, row in zip(src.tolist(), dst.tolist(), rows.tolist()):
        assert [topo.names[k] for k in row if k != topo.num_links] == want[s, d]


def test_link_kinds():
    topo = build_topology(ClusterSpec.parse(5, 2, "10Gbps", fabric="leafspine", machines_per_leaf=2))
    for kind, prefix in ((LinkKind.NVLINK, "nvl-"), (LinkKind.NIC, "nic-"), (LinkKind.FABRIC, "leaf-")):
        ids = topo.links_of_kind(kind)
        assert ids.size and all(topo.names[k].startswith(prefix) for k in ids)
    assert sum(topo.links_of_kind(k).size for k in LinkKind) == topo.num_links == 5 * (2 * 2 + 2) + 2 * 3


def test_bad_gpu_ids():
    topo = build_topology(ClusterSpec(2, 2, 1e9))
    with pytest.raises(ValueError, match="GPU ids"):
        topo.route_matrix(np.array([0]), np.array([4]))
