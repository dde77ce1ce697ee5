"""Cluster topology: machines x GPUs, NVLink inside a machine, one shared NIC per machine, a fabric.

Every capacity-limited direction of a physical link is one *link* (an integer id) with a bandwidth
in bytes/s, a one-way latency in seconds and a *kind* (`LinkKind`: what the link is, so that a model
never has to read names):

- `nvl-up g`, `nvl-down g` (NVLINK): GPU g <-> its machine's NVSwitch, one pair per GPU;
- `nic-up m`, `nic-down m` (NIC): machine m's NIC, full duplex, shared by all of m's GPUs; or, with
  `nics="gpu"` (one NIC per GPU, rail-optimized: the NICs of local rank l of every machine form rail
  l, one non-blocking switch), `nic-up g`, `nic-down g` for GPU g;
- switch tiers (FABRIC), for a leaf-spine or a multi-tier fat-tree: tier 1 groups machines under
  leaves, tier 2 groups leaves into pods, tier t >= 3 groups the groups of tier t-1; `leaf-up j`,
  `leaf-down j` (tier 1), `pod-up j`, `pod-down j` (tier 2), `tier{t}-up j`, `tier{t}-down j` join
  group j of the tier to the tier above (the spine, the core), aggregated into one link per direction
  (a fluid view of ECMP over the group's uplinks) of capacity (what the group's members bring up:
  machines x NIC bandwidth on tier 1, the member groups' uplinks above) / the tier's oversubscription.
  A leaf-spine is the one-tier case (`machines_per_leaf`, `oversub`); a fat-tree gives `tiers`, one
  (members per group, oversubscription) per tier from the bottom; the top is non-blocking.

GPU -> NIC goes over the host (PCIe), which is not a bottleneck and carries no link. Routes follow
from the structure, with no search: GPUs of one machine talk over NVLink (`nvl-up src`,
`nvl-down dst`); GPUs of two machines over their NICs (`nic-up`, `nic-down`), through the spine
switch tiers when the machines sit in different groups: up from the source's group of every tier
below the lowest one the two machines share, then down the destination's (`leaf-up`, `pod-up`,
`pod-down`, `leaf-down` across pods). Link ids are laid out per machine (its GPUs' NVLink pairs, then
its NIC pair), then tier by tier the groups' pairs, so that a link's id is a closed formula of the
GPU, machine or group it belongs to.

One NIC per GPU (rails): GPUs of the same local rank on two machines talk NIC to NIC over their rail;
GPUs of different local ranks take NCCL's PXN path: NVLink to the GPU of the destination's local
rank in the source machine, then that GPU's NIC and rail (`nvl-up src`, `nvl-down relay`,
`nic-up relay`, `nic-down dst`), so no traffic crosses rails and no spine is needed.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from zensim.errors import ConfigError
from zensim.net.units import format_bandwidth, parse_bandwidth, parse_latency

FABRICS = ("switch", "leafspine", "fattree")
TIER_NAMES = ("leaf", "pod")  # names of tiers 1 and 2; tier t >= 3 is `tier{t}`
Tiers = tuple[tuple[int, float], ...]  # per tier from the bottom: (members per group, oversubscription)
NIC_LAYOUTS = ("machine", "gpu")  # one NIC per machine (shared by its GPUs) | one NIC per GPU, rail-optimized
TRANSPORTS = ("tcp", "rdma")  # what carries inter-machine messages: sets the default per-message latency


class LinkKind(enum.IntEnum):
    """What a link is; models look at kinds (e.g. efficiency curves apply to NICs), never at names."""

    NVLINK = 0
    NIC = 1
    FABRIC = 2


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
              transport: str = "tcp", tiers: str | Tiers = ()) -> "ClusterSpec":
        """Build from unit strings (`25Gbps`, `5us`, `4:1,8:2` for tiers, ...), raising ConfigError naming
        the bad argument."""
        return cls(machines, gpus_per_machine, parse_bandwidth(nic, "--nic"), parse_latency(nic_latency, "--nic-latency"),
                   parse_bandwidth(nvlink, "--nvlink"), parse_latency(nvlink_latency, "--nvlink-latency"),
                   fabric, float(oversub), machines_per_leaf, nics, transport,
                   parse_tiers(tiers) if isinstance(tiers, str) else tuple(tiers))

    def switch_tiers(self) -> Tiers:
        """The switch tiers above the machines: none on a single switch, one for a leaf-spine, the fat-tree's."""
        if self.fabric == "leafspine":
            return ((self.machines_per_leaf, self.oversub),)
        return self.tiers

    def describe(self) -> str:
        """One line for reports: '16x8 GPUs, NIC 25Gbps tcp 25us, NVLink 2.4Tbps 0us, switch'."""
        fabric = {"switch": "switch", "leafspine": f"leafspine 1:{self.oversub:g} ({self.machines_per_leaf}/leaf)",
                  "fattree": f"fattree {format_tiers(self.tiers)}"}[self.fabric]
        nic = "NIC" if self.nics == "machine" else "NIC per GPU (rails)"
        return (f"{self.machines}x{self.gpus_per_machine} GPUs, {nic} {format_bandwidth(self.nic_bandwidth)} "
                f"{self.transport} {self.nic_latency * 1e6:g}us, NVLink {format_bandwidth(self.nvlink_bandwidth)} "
                f"{self.nvlink_latency * 1e6:g}us, {fabric}")


class Topology:
    """The links of a ClusterSpec (names, kinds, capacities, latencies) and its routes, by formula."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        g, machines = spec.gpus_per_machine, spec.machines
        self.rails = spec.nics == "gpu"
        nics = g if self.rails else 1  # NIC pairs per machine
        self._block = 2 * g + 2 * nics  # links per machine: g NVLink pairs, then its NIC pairs
        tiers = spec.switch_tiers()
        # per tier: machines under one group (span), number of groups, id of its first link
        self.spans = np.cumprod([size for size, _ in tiers], dtype=np.int64).tolist()
        self.groups = [-(-machines // span) for span in self.spans]
        self.tier_base = (machines * self._block + 2 * np.concatenate([[0], np.cumsum(self.groups)])).tolist()
        names: list[str] = []
        for m in range(machines):
            for gpu in range(m * g, (m + 1) * g):
                names += [f"nvl-up {gpu}", f"nvl-down {gpu}"]
            for nic in (range(m * g, (m + 1) * g) if self.rails else [m]):
                names += [f"nic-up {nic}", f"nic-down {nic}"]
        for t, count in enumerate(self.groups, 1):
            tier = tier_name(t)
            for j in range(count):
                names += [f"{tier}-up {j}", f"{tier}-down {j}"]
        self.names = names
        fabric_links = 2 * sum(self.groups)
        per_machine = np.array([LinkKind.NVLINK] * 2 * g + [LinkKind.NIC] * 2 * nics, dtype=np.int8)
        self.kind = np.concatenate([np.tile(per_machine, machines), np.full(fabric_links, LinkKind.FABRIC, np.int8)])
        bw = np.array([spec.nvlink_bandwidth] * 2 * g + [spec.nic_bandwidth] * 2 * nics)
        lat = np.array([spec.nvlink_latency, 0.0] * g + [spec.nic_latency, 0.0] * nics)  # latency on the egress link
        below, uplinks = np.full(machines, spec.nic_bandwidth), []
        for size, oversub in tiers:  # a group's uplink: what its members bring up / the tier's oversubscription
            below = np.add.reduceat(below, np.arange(0, len(below), size)) / oversub
            uplinks.append(np.repeat(below, 2))
        self.capacity = np.concatenate([np.tile(bw, machines), *uplinks])
        self.latency = np.concatenate([np.tile(lat, machines), np.zeros(fabric_links)])

    @property
    def num_links(self) -> int:
        """Number of capacity-limited links."""
        return len(self.names)

    @property
    def route_width(self) -> int:
        """The most links a route crosses (the column count of `route_matrix`)."""
        return 4 if self.rails else 2 + 2 * len(self.spans)

    def machine_of_link(self) -> np.ndarray:
        """The machine each link belongs to (-1 for fabric links)."""
        per = np.repeat(np.arange(self.spec.machines), self._block)
        return np.concatenate([per, np.full(self.num_links - len(per), -1)])

    def links_of_kind(self, kind: LinkKind) -> np.ndarray:
        """Ids of the links of one kind, ascending."""
        return np.flatnonzero(self.kind == kind)

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """Link ids from GPU `src` to GPU `dst` in order (empty for src == dst)."""
        row = self.route_matrix(np.array([src]), np.array([dst]))[0]
        return tuple(int(k) for k in row if k != self.num_links)

    def route_matrix(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Routes of many (src, dst) GPU pairs as an int64 matrix padded with `num_links` (a dummy link)."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        gpus = self.spec.gpus
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= gpus):
            raise ValueError(f"GPU ids must be in 0..{gpus - 1}")
        g, block = self.spec.gpus_per_machine, self._block
        out = np.full((src.size, self.route_width), self.num_links, dtype=np.int64)
        ms, md = src // g, dst // g
        near = (ms == md) & (src != dst)  # same machine: NVLink
        out[near, 0] = ms[near] * block + 2 * (src[near] % g)
        out[near, 1] = md[near] * block + 2 * (dst[near] % g) + 1
        far = ms != md
        if self.rails:
            return self._rail_routes(src, dst, ms, md, far, out)
        out[far, 0] = ms[far] * block + 2 * g  # nic-up of the source machine
        # tiers crossed: those whose groups differ (groups nest, so those below too); up, then down
        level = np.zeros(src.size, dtype=np.int64)
        for span in self.spans:
            level += ms // span != md // span
        rows = np.arange(src.size)
        for t, (span, base) in enumerate(zip(self.spans, self.tier_base), 1):
            up = np.flatnonzero(level >= t)
            out[up, t] = base + 2 * (ms[up] // span)
            out[up, 2 * level[up] - t + 1] = base + 2 * (md[up] // span) + 1
        out[rows[far], 2 * level[far] + 1] = md[far] * block + 2 * g + 1  # nic-down of the destination
        return out

    def _rail_routes(self, src: np.ndarray, dst: np.ndarray, ms: np.ndarray, md: np.ndarray, far: np.ndarray,
                     out: np.ndarray) -> np.ndarray:
        """Routes between machines with one NIC per GPU: same local rank, NIC to NIC on its rail; another
        local rank, PXN: NVLink to the source machine's GPU of the destination's local rank first."""
        g, block = self.spec.gpus_per_machine, self._block
        ls, ld = src % g, dst % g
        direct = far & (ls == ld)
        out[direct, 0] = ms[direct] * block + 2 * g + 2 * ls[direct]  # nic-up of the source GPU
        out[direct, 1] = md[direct] * block + 2 * g + 2 * ld[direct] + 1  # nic-down of the destination GPU
        pxn = far & (ls != ld)
        out[pxn, 0] = ms[pxn] * block + 2 * ls[pxn]  # nvl-up of the source GPU
        out[pxn, 1] = ms[pxn] * block + 2 * ld[pxn] + 1  # nvl-down of the relay (same machine, dst's local rank)
        out[pxn, 2] = ms[pxn] * block + 2 * g + 2 * ld[pxn]  # the relay's nic-up
        out[pxn, 3] = md[pxn] * block + 2 * g + 2 * ld[pxn] + 1  # the destination's nic-down
        return out


def tier_name(t: int) -> str:
    """The name of switch tier t (1-based) in link names: leaf, pod, tier3, ..."""
    return TIER_NAMES[t - 1] if t <= len(TIER_NAMES) else f"tier{t}"


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


def format_tiers(tiers: Tiers) -> str:
    """((4, 1.0), (8, 2.0)) -> '4:1,8:2' (what parse_tiers reads)."""
    return ",".join(f"{size}:{oversub:g}" for size, oversub in tiers)
