"""Cluster topology: machines x GPUs, NVLink inside a machine, one shared NIC per machine, a fabric.

`ClusterSpec` says what the cluster is (sizes, link speeds and latencies, which fabric and its
figures); `zensim.net.fabrics.build_topology(spec)` makes its links and routes (a
`zensim.net.links.Topology`) with the fabric's registered class: the tree fabrics (one switch,
leaf-spine, fat-tree: zensim/net/tree.py, routes by formula) and graph fabrics (zensim/net/graph.py,
routes by shortest paths; a ring of machines: zensim/net/ring.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from zensim.errors import ConfigError
from zensim.net.fabrics import FABRICS, fabric_option
from zensim.net.tree import format_tiers
from zensim.net.units import format_bandwidth, parse_bandwidth, parse_latency

Tiers = tuple[tuple[int, float], ...]  # per tier from the bottom: (members per group, oversubscription)
NIC_LAYOUTS = ("machine", "gpu")  # one NIC per machine (shared by its GPUs) | one NIC per GPU, rail-optimized
TRANSPORTS = ("tcp", "rdma")  # what carries inter-machine messages: sets the default per-message latency


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
    nics: str = "machine"  # NIC_LAYOUTS
    transport: str = "tcp"  # TRANSPORTS (descriptive here: zensim.sim.cluster picks the latency from it)
    tiers: Tiers = ()  # fattree only: (members per group, oversubscription) per tier, from the bottom
    # ((key, value), ...): the options the fabric declares (zensim.net.fabrics) beyond the fields above
    fabric_options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        for name in ("machines", "gpus_per_machine", "machines_per_leaf"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name}: must be a positive integer, got {value!r}")
        if self.fabric not in FABRICS:
            raise ConfigError(f"fabric: unknown fabric {self.fabric!r} (choose from {', '.join(FABRICS)})")
        if not self.oversub >= 1.0 or math.isinf(self.oversub):
            raise ConfigError(f"oversub: oversubscription ratio must be a finite number >= 1, got {self.oversub!r}")
        if self.nics not in NIC_LAYOUTS:
            raise ConfigError(f"nics: unknown NIC layout {self.nics!r} (choose from {', '.join(NIC_LAYOUTS)})")
        object.__setattr__(self, "tiers", tuple(tuple(tier) for tier in self.tiers))  # lists (JSON) to tuples
        object.__setattr__(self, "fabric_options", tuple((k, fabric_option(self.fabric, k, v))
                                                         for k, v in self.fabric_options))
        if (self.fabric == "fattree") != bool(self.tiers):
            raise ConfigError("tiers: a fat-tree needs its tiers, and only a fat-tree has them (fabric is "
                              f"{self.fabric!r}, tiers {format_tiers(self.tiers) or 'none'})")
        for tier in self.tiers:
            if len(tier) != 2:
                raise ConfigError(f"tiers: each tier is (members per group, oversubscription), got {tier!r}")
            size, oversub = tier
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ConfigError(f"tiers: members per group must be a positive integer, got {size!r}")
            if not oversub >= 1.0 or math.isinf(oversub):
                raise ConfigError(f"tiers: oversubscription must be a finite number >= 1, got {oversub!r}")
        if self.nics == "gpu" and self.fabric != "switch":
            raise ConfigError("nics: one NIC per GPU is rail-optimized (one switch per rail): fabric must be switch")
        if self.transport not in TRANSPORTS:
            raise ConfigError(f"transport: unknown transport {self.transport!r} (choose from {', '.join(TRANSPORTS)})")

    @property
    def gpus(self) -> int:
        """Total number of GPUs."""
        return self.machines * self.gpus_per_machine

    @classmethod
    def parse(cls, machines: int, gpus_per_machine: int, nic: str | float, nic_latency: str | float = 0.0,
              nvlink: str | float = "300GB/s", nvlink_latency: str | float = 0.0, fabric: str = "switch",
              oversub: float = 1.0, machines_per_leaf: int = 4, nics: str = "machine",
              transport: str = "tcp", tiers: str | Tiers = (),
              fabric_options: tuple[tuple[str, Any], ...] = ()) -> "ClusterSpec":
        """Build from unit strings (`25Gbps`, `5us`, `4:1,8:2` for tiers, ...), raising ConfigError naming
        the bad argument."""
        return cls(machines, gpus_per_machine, parse_bandwidth(nic, "--nic"), parse_latency(nic_latency, "--nic-latency"),
                   parse_bandwidth(nvlink, "--nvlink"), parse_latency(nvlink_latency, "--nvlink-latency"),
                   fabric, float(oversub), machines_per_leaf, nics, transport,
                   parse_tiers(tiers) if isinstance(tiers, str) else tuple(tiers), fabric_options)

    def fabric_option(self, key: str) -> Any:
        """The fabric's option `key`: as given, else the default its class declares."""
        return dict(self.fabric_options).get(key, FABRICS[self.fabric].options[key])

    def switch_tiers(self) -> Tiers:
        """The switch tiers above the machines: none on a single switch, one for a leaf-spine, the fat-tree's."""
        if self.fabric == "leafspine":
            return ((self.machines_per_leaf, self.oversub),)
        return self.tiers

    def describe(self) -> str:
        """One line for reports: '16x8 GPUs, NIC 25Gbps tcp 25us, NVLink 2.4Tbps 0us, switch'."""
        fabric = FABRICS[self.fabric].label(self)
        nic = "NIC" if self.nics == "machine" else "NIC per GPU (rails)"
        return (f"{self.machines}x{self.gpus_per_machine} GPUs, {nic} {format_bandwidth(self.nic_bandwidth)} "
                f"{self.transport} {self.nic_latency * 1e6:g}us, NVLink {format_bandwidth(self.nvlink_bandwidth)} "
                f"{self.nvlink_latency * 1e6:g}us, {fabric}")


def parse_tiers(text: str, what: str = "--tiers") -> Tiers:
    """'4:1,8:2' (per tier from the bottom, members per group : oversubscription) -> ((4, 1.0), (8, 2.0));
    a one-line ConfigError naming `what` otherwise."""
    tiers = []
    for item in str(text).split(","):
        size, sep, ratio = item.strip().partition(":")
        try:
            tier = (int(size), float(ratio))
        except ValueError:
            tier = None
        if not sep or tier is None or tier[0] < 1 or not 1 <= tier[1] < math.inf:
            raise ConfigError(f"{what}: cannot parse {item.strip()!r} in {text!r} as MEMBERS:OVERSUB (a positive "
                              "integer, a ratio >= 1), e.g. 4:1,8:2 (leaves of 4 machines, pods of 8 leaves at 2:1)")
        tiers.append(tier)
    return tuple(tiers)
