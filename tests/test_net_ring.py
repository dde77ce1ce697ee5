"""A fabric that is not a tree: a ring of machines (zensim/net/ring.py, routed by shortest paths in
zensim/net/graph.py), registered by one line in zensim.net.fabrics, routes as networkx finds them
and simulates schemes through the whole pipeline."""

import networkx as nx
import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.fabrics import FABRICS, build_topology
from zensim.net.links import LinkKind, Topology
from zensim.net.models import MODELS
from zensim.net.profile import WorkCost
from zensim.net.ring import ring_graph
from zensim.net.topology import ClusterSpec
from zensim.schemes import closed as analytic
from zensim.sim import simulate
from zensim.trace import TensorSpec, TraceWriter

B = 25e9 / 8
NUMEL = 4096


def test_ring_routes_take_the_shorter_way_round():
    topo = build_topology(ClusterSpec(5, 2, B, fabric="ring"))
    assert isinstance(topo, Topology)
    name = lambda route: [topo.names[k] for k in route]  # noqa: E731
    assert name(topo.route(0, 4)) == ["nic-up 0", "ring-cw 0", "ring-cw 1", "nic-down 2"]
    assert name(topo.route(0, 6)) == ["nic-up 0", "ring-ccw 4", "ring-ccw 3", "nic-down 3"]
    assert name(topo.route(2, 3)) == ["nvl-up 2", "nvl-down 3"]
    assert topo.route(7, 7) == ()
    assert len(topo.links_of_kind(LinkKind.FABRIC)) == 10 and topo.route_width == 4
    assert (topo.machine_of_link()[topo.links_of_kind(LinkKind.FABRIC)] == -1).all()


@pytest.mark.parametrize("machines", [1, 2, 3, 6, 7])
def test_every_route_is_a_shortest_path_of_the_ring(machines):
    """Each pair's fabric links chain from machine to machine along a path as short as networkx's."""
    topo = build_topology(ClusterSpec(machines, 2, B, fabric="ring"))
    graph = ring_graph(machines, B)
    ends = {f"{d['name']}": (a, b) for a, b, d in graph.edges(data=True)}
    gpus = np.arange(2 * machines)
    src, dst = np.repeat(gpus, len(gpus)), np.tile(gpus, len(gpus))
    rows = topo.route_matrix(src, dst)
    for s, d, row in zip(src, dst, rows):
        hops = [ends[topo.names[k]] for k in row if k != topo.num_links and topo.kind[k] == LinkKind.FABRIC]
        a, b = s // 2, d // 2
        assert len(hops) == (nx.shortest_path_length(graph, a, b) if a != b else 0)
        assert all(x[1] == y[0] for x, y in zip(hops, hops[1:])) and (not hops or (hops[0][0], hops[-1][1]) == (a, b))


def test_a_ring_refuses_one_nic_per_gpu():
    with pytest.raises(ConfigError, match="fabric must be switch"):
        ClusterSpec(4, 2, B, fabric="ring", nics="gpu")
    assert "ring" in FABRICS and ClusterSpec(4, 1, B, fabric="ring").describe().endswith(", ring")


def test_schemes_simulate_on_the_ring(tmp_path):
    """The dense ring all-reduce only talks to ring neighbours, one message per ring link and stage:
    the time it takes on a switch (its closed form, to the parts' uneven sizes). All-to-all sparse traffic shares ring links: slower than on a
    switch, and at least the busiest ring link's bytes at its rate."""
    rng = np.random.default_rng(0)
    path = str(tmp_path / "t.zt")
    with TraceWriter(path, [TensorSpec("t", NUMEL)], workers=6, iterations=1) as w:
        for worker in range(6):
            w.write(0, worker, 0, np.sort(rng.choice(NUMEL, 64, replace=False)))
    ring, switch = ClusterSpec(6, 1, B, fabric="ring"), ClusterSpec(6, 1, B)
    topo = build_topology(ring)
    for model in MODELS:
        [rec] = simulate(path, "dense-allreduce", Costs(ring, WorkCost.zero()), model)
        [flat] = simulate(path, "dense-allreduce", Costs(switch, WorkCost.zero()), model)
        assert rec.time_s == flat.time_s
        assert rec.time_s == pytest.approx(analytic.dense_ring(analytic.SparsityStats(6, 4 * NUMEL, 0.0), B), rel=1e-3)
        [on_ring] = simulate(path, "agsparse-p2p", Costs(ring, WorkCost.zero()), model)
        [on_switch] = simulate(path, "agsparse-p2p", Costs(switch, WorkCost.zero()), model)
        assert on_ring.time_s > on_switch.time_s
        log = on_ring.simulated.log
        carried = np.zeros(topo.num_links + 1)
        np.add.at(carried, topo.route_matrix(log.src, log.dst), log.nbytes[:, None])
        fabric = topo.links_of_kind(LinkKind.FABRIC)
        assert on_ring.time_s >= (carried[fabric] / topo.capacity[fabric]).max() * (1 - 1e-12)
