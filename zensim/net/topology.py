"""Cluster topology: machines x GPUs, NVLink inside a machine, one shared NIC per machine, a fabric.

The cluster is a networkx DiGraph. Every capacity-limited direction of a physical link is one *link*
(an integer id) with a bandwidth in bytes/s and a one-way latency in seconds:

- `nvl-up g`, `nvl-down g`: GPU g <-> its machine's NVSwitch (NVLink class), one pair per GPU;
- `nic-up m`, `nic-down m`: machine m's NIC, full duplex, shared by all of m's GPUs;
- leaf-spine only: `leaf-up j`, `leaf-down j`: leaf j <-> the spine layer, aggregated into one link
  per direction of capacity (machines on the leaf) x NIC bandwidth / oversubscription.

GPU -> NIC goes over the host (PCIe) which is not a bottleneck and carries no link. Routes are
shortest paths (edge weights keep intra-machine traffic on NVLink); a route is a tuple of link ids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from zensim.errors import ConfigError
from zensim.net.units import format_bandwidth, parse_bandwidth, parse_latency

FABRICS = ("switch", "leafspine")


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster: sizes, link speeds (bytes/s), latencies (s), fabric."""

    machines: int
    gpus_per_machine: int
    nic_bandwidth: float
    nic_latency: float = 0.0
    nvlink_bandwidth: float = 300e9
    nvlink_latency: float = 0.0
    fabric: str = "switch"
    oversub: float = 1.0
    machines_per_leaf: int = 4

    def __post_init__(self) -> None:
        for name in ("machines", "gpus_per_machine", "machines_per_leaf"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name}: must be a positive integer, got {value!r}")
        if self.fabric not in FABRICS:
            raise ConfigError(f"fabric: unknown fabric {self.fabric!r} (choose from {', '.join(FABRICS)})")
        if not self.oversub >= 1.0 or math.isinf(self.oversub):
            raise ConfigError(f"oversub: oversubscription ratio must be a finite number >= 1, got {self.oversub!r}")

    @property
    def gpus(self) -> int:
        """Total number of GPUs."""
        return self.machines * self.gpus_per_machine

    @classmethod
    def parse(cls, machines: int, gpus_per_machine: int, nic: str | float, nic_latency: str | float = 0.0,
              nvlink: str | float = "300GB/s", nvlink_latency: str | float = 0.0, fabric: str = "switch",
              oversub: float = 1.0, machines_per_leaf: int = 4) -> "ClusterSpec":
        """Build from unit strings (`25Gbps`, `5us`, ...), raising ConfigError naming the bad argument."""
        return cls(machines, gpus_per_machine, parse_bandwidth(nic, "--nic"), parse_latency(nic_latency, "--nic-latency"),
                   parse_bandwidth(nvlink, "--nvlink"), parse_latency(nvlink_latency, "--nvlink-latency"),
                   fabric, float(oversub), machines_per_leaf)

    def describe(self) -> str:
        """One line for reports: '16x8 GPUs, NIC 25Gbps, NVLink 2400Gbps, switch'."""
        fabric = self.fabric if self.fabric == "switch" else f"leafspine 1:{self.oversub:g} ({self.machines_per_leaf}/leaf)"
        return (f"{self.machines}x{self.gpus_per_machine} GPUs, NIC {format_bandwidth(self.nic_bandwidth)}, "
                f"NVLink {format_bandwidth(self.nvlink_bandwidth)}, {fabric}")


class Topology:
    """The link graph of a ClusterSpec, with per-link capacity/latency arrays and cached routes."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.graph = nx.DiGraph()
        self.names: list[str] = []
        capacity: list[float] = []
        latency: list[float] = []

        def link(u: tuple, v: tuple, name: str, bw: float, lat: float, weight: int = 1) -> None:
            self.graph.add_edge(u, v, link=len(self.names), weight=weight)
            self.names.append(name)
            capacity.append(bw)
            latency.append(lat)

        g_per = spec.gpus_per_machine
        fabric_node = ("switch",)
        for m in range(spec.machines):
            host, nvsw = ("host", m), ("nvsw", m)
            for local in range(g_per):
                gpu = ("gpu", m * g_per + local)
                link(gpu, nvsw, f"nvl-up {gpu[1]}", spec.nvlink_bandwidth, spec.nvlink_latency)
                link(nvsw, gpu, f"nvl-down {gpu[1]}", spec.nvlink_bandwidth, 0.0)
                self.graph.add_edge(gpu, host, link=None, weight=2)
                self.graph.add_edge(host, gpu, link=None, weight=2)
            if spec.fabric == "leafspine":
                fabric_node = ("leaf", m // spec.machines_per_leaf)
            link(host, fabric_node, f"nic-up {m}", spec.nic_bandwidth, spec.nic_latency)
            link(fabric_node, host, f"nic-down {m}", spec.nic_bandwidth, 0.0)
        if spec.fabric == "leafspine":
            leaves = -(-spec.machines // spec.machines_per_leaf)
            for j in range(leaves):
                size = min(spec.machines_per_leaf, spec.machines - j * spec.machines_per_leaf)
                bw = size * spec.nic_bandwidth / spec.oversub
                link(("leaf", j), ("spine",), f"leaf-up {j}", bw, 0.0)
                link(("spine",), ("leaf", j), f"leaf-down {j}", bw, 0.0)
        self.capacity = np.array(capacity, dtype=np.float64)
        self.latency = np.array(latency, dtype=np.float64)
        self._edge_link = {(u, v): k for u, v, k in self.graph.edges(data="link")}
        gpus = spec.gpus
        self._table = np.full((gpus, gpus, 4 if spec.fabric == "leafspine" else 2), self.num_links, dtype=np.int64)
        self._have = np.zeros(gpus, dtype=bool)

    @property
    def num_links(self) -> int:
        """Number of capacity-limited links."""
        return len(self.names)

    def _fill(self, src: int) -> None:
        """Routes from GPU `src` to every GPU: one shortest-path tree."""
        paths = nx.single_source_dijkstra_path(self.graph, ("gpu", src), weight="weight")
        for node, path in paths.items():
            if node[0] == "gpu":
                ids = [k for k in map(self._edge_link.get, zip(path, path[1:])) if k is not None]
                self._table[src, node[1], : len(ids)] = ids
        self._have[src] = True

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """Link ids from GPU `src` to GPU `dst` in order (empty for src == dst)."""
        return tuple(int(k) for k in self.route_matrix(np.array([src]), np.array([dst]))[0] if k != self.num_links)

    def route_matrix(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Routes of many (src, dst) GPU pairs as an int64 matrix padded with `num_links` (a dummy link)."""
        for s in np.unique(src[~self._have[src]]).tolist():
            self._fill(s)
        return self._table[src, dst]
