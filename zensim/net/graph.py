"""Graph fabrics: machines joined by any directed graph of links, routed by shortest paths.

`GraphTopology(spec, fabric)` lays out every machine's links as the tree fabrics do
(zensim.net.links.machine_links: NVLink pairs, one NIC pair) and then the edges of `fabric`, a
networkx DiGraph whose nodes include the machines 0..M-1 (and any switches or routers): each edge
is one link, with its `name`, `capacity` (bytes/s) and `latency` (s, default 0), of kind FABRIC, ids
in the graph's edge order. A message between GPUs of two machines leaves by the source machine's
`nic-up`, follows the graph's shortest path (fewest links; networkx's breadth-first search, so the
same path every time) from machine to machine, and enters by the destination's `nic-down`; GPUs of
one machine talk over NVLink. The paths of every machine pair are found once, when the topology
is made (one NIC per machine: ClusterSpec keeps one NIC per GPU to the rail switches). A fabric that is not a tree (a ring, a torus) is a function building its graph: see
zensim/net/ring.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from zensim.errors import ConfigError
from zensim.net.links import LinkKind, MachineLinks, check_gpus, machine_links

if TYPE_CHECKING:
    import networkx as nx


class GraphTopology(MachineLinks):
    """The links of `spec` with the fabric graph `fabric` (see the module docstring): a
    zensim.net.links.Topology."""

    def __init__(self, spec: Any, fabric: nx.DiGraph) -> None:
        import networkx as nx  # only where a graph fabric is built: not at every zensim import

        self.spec = spec
        machines = spec.machines
        self._block = 2 * spec.gpus_per_machine + 2
        names, kind, bw, lat = machine_links(spec, False)
        edges = list(fabric.edges(data=True))
        base = machines * self._block
        self.names = names + [str(data["name"]) for _, _, data in edges]
        self.kind = np.concatenate([kind, np.full(len(edges), LinkKind.FABRIC, np.int8)])
        self.capacity = np.concatenate([bw, np.array([float(data["capacity"]) for _, _, data in edges])])
        self.latency = np.concatenate([lat, np.array([float(data.get("latency", 0.0)) for _, _, data in edges])])
        link = {(a, b): base + i for i, (a, b, _) in enumerate(edges)}
        paths = nx.all_pairs_shortest_path(fabric)
        hops: dict[tuple[int, int], list[int]] = {}
        for a, found in paths:
            if a in range(machines):
                for b in range(machines):
                    if b != a and b not in found:
                        raise ConfigError(f"fabric {spec.fabric}: no path from machine {a} to machine {b}")
                    if b != a:
                        path = found[b]
                        hops[a, b] = [link[edge] for edge in zip(path, path[1:])]
        width = max((len(h) for h in hops.values()), default=0)
        self._hops = np.full((machines, machines, width), self.num_links, np.int64)  # [a, b]: fabric links a -> b
        self._count = np.zeros((machines, machines), np.int64)
        for (a, b), h in hops.items():
            self._hops[a, b, :len(h)] = h
            self._count[a, b] = len(h)

    @property
    def route_width(self) -> int:
        """The most links a route crosses (the column count of `route_matrix`): NIC, fabric path, NIC."""
        return 2 + self._hops.shape[2]

    def route_matrix(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Routes of many (src, dst) GPU pairs as an int64 matrix padded with `num_links` (a dummy link)."""
        src, dst = check_gpus(src, dst, self.spec.gpus)
        block, width = self._block, self._hops.shape[2]
        out = np.full((src.size, self.route_width), self.num_links, dtype=np.int64)
        ms, md = self._nvlink(out, src, dst)
        far = np.flatnonzero(ms != md)
        a, b = ms[far], md[far]
        out[far, 0] = a * block + block - 2  # nic-up of the source machine
        out[far, 1:1 + width] = self._hops[a, b]
        out[far, 1 + self._count[a, b]] = b * block + block - 1  # nic-down of the destination machine
        return out
