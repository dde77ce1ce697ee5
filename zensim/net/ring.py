"""A ring of machines (a one-dimensional torus): each machine's router joins its two neighbours,
one link per direction, at the NIC's bandwidth; a message takes the shorter way round
(zensim.net.graph). Registered as the `ring` fabric in zensim.net.fabrics."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

from zensim.net.graph import GraphTopology


def ring_graph(machines: int, bandwidth: float) -> nx.DiGraph:
    """Machines 0..M-1 in a ring: `ring-cw m` from m to m+1 and `ring-ccw m` back (one pair for two
    machines, none for one)."""
    import networkx as nx  # only where a graph fabric is built: not at every zensim import

    graph = nx.DiGraph()
    graph.add_nodes_from(range(machines))
    for m in range(machines):
        nxt = (m + 1) % machines
        for a, b, name in ((m, nxt, f"ring-cw {m}"), (nxt, m, f"ring-ccw {m}")):
            if a != b and not graph.has_edge(a, b):
                graph.add_edge(a, b, name=name, capacity=bandwidth)
    return graph


class RingTopology(GraphTopology):
    """The ring fabric's links and routes."""

    def __init__(self, spec: Any) -> None:
        super().__init__(spec, ring_graph(spec.machines, spec.nic_bandwidth))

    @staticmethod
    def label(spec: Any) -> str:
        """The fabric in a cluster's one-line description."""
        return "ring"
