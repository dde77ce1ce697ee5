"""Tree fabrics: one switch, a leaf-spine or a multi-tier fat-tree above the machines
(`TreeTopology`, registered in zensim.net.fabrics as switch, leafspine and fattree).

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

import numpy as np

from zensim.net.links import LinkKind, MachineLinks, check_gpus, machine_links

TIER_NAMES = ("leaf", "pod")  # names of tiers 1 and 2; tier t >= 3 is `tier{t}`


def tier_name(t: int) -> str:
    """The name of switch tier t (1-based) in link names: leaf, pod, tier3, ..."""
    return TIER_NAMES[t - 1] if t <= len(TIER_NAMES) else f"tier{t}"


def format_tiers(tiers) -> str:  # type: ignore[no-untyped-def]
    """((4, 1.0), (8, 2.0)) -> '4:1,8:2' (what parse_tiers reads)."""
    return ",".join(f"{size}:{oversub:g}" for size, oversub in tiers)


class TreeTopology(MachineLinks):
    """The links of a ClusterSpec with a tree fabric (names, kinds, capacities, latencies) and its
    routes, by formula: a zensim.net.links.Topology. As itself, the single switch (no options)."""

    title = "switch"

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
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
        names, kind, bw, lat = machine_links(spec, self.rails)
        for t, count in enumerate(self.groups, 1):
            tier = tier_name(t)
            for j in range(count):
                names += [f"{tier}-up {j}", f"{tier}-down {j}"]
        self.names = names
        fabric_links = 2 * sum(self.groups)
        self.kind = np.concatenate([kind, np.full(fabric_links, LinkKind.FABRIC, np.int8)])
        below, uplinks = np.full(machines, spec.nic_bandwidth), []
        for size, oversub in tiers:  # a group's uplink: what its members bring up / the tier's oversubscription
            below = np.add.reduceat(below, np.arange(0, len(below), size)) / oversub
            uplinks.append(np.repeat(below, 2))
        self.capacity = np.concatenate([bw, *uplinks])
        self.latency = np.concatenate([lat, np.zeros(fabric_links)])

    @property
    def route_width(self) -> int:
        """The most links a route crosses (the column count of `route_matrix`)."""
        return 4 if self.rails else 2 + 2 * len(self.spans)

    @staticmethod
    def label(spec) -> str:  # type: ignore[no-untyped-def]
        """The fabric in a cluster's one-line description."""
        if spec.fabric == "leafspine":
            return f"leafspine 1:{spec.oversub:g} ({spec.machines_per_leaf}/leaf)"
        return "switch" if spec.fabric == "switch" else f"fattree {format_tiers(spec.tiers)}"

    def route_matrix(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Routes of many (src, dst) GPU pairs as an int64 matrix padded with `num_links` (a dummy link)."""
        src, dst = check_gpus(src, dst, self.spec.gpus)
        g, block = self.spec.gpus_per_machine, self._block
        out = np.full((src.size, self.route_width), self.num_links, dtype=np.int64)
        ms, md = self._nvlink(out, src, dst)  # same machine: NVLink
        far = ms != md
        if self.rails:
            return self._rail_routes(src, dst, ms, md, far, out)
        # tiers crossed: those whose groups differ (groups nest, so those below too); up, then down. Written
        # column by column where a mask holds (np.copyto), not through index arrays of the pairs
        level = np.zeros(src.size, dtype=np.int64)
        for span in self.spans:
            level += ms // span != md // span
        at = [far & (level == top) for top in range(len(self.spans) + 1)]  # the pairs that go up to each tier
        np.copyto(out[:, 0], ms * block + 2 * g, where=far)  # nic-up of the source machine
        for t, (span, base) in enumerate(zip(self.spans, self.tier_base), 1):
            np.copyto(out[:, t], base + 2 * (ms // span), where=level >= t)
            down = base + 2 * (md // span) + 1
            for top in range(t, len(self.spans) + 1):  # its down link's column: 2 x level - t + 1
                np.copyto(out[:, 2 * top - t + 1], down, where=at[top])
        nic_down = md * block + 2 * g + 1  # of the destination, after the fabric's links
        for top, pairs in enumerate(at):
            np.copyto(out[:, 2 * top + 1], nic_down, where=pairs)
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


class LeafSpineTopology(TreeTopology):
    """A leaf-spine: one tier of leaves of `machines_per_leaf` machines, their uplinks 1:`oversub`."""

    options = {"oversub": 1.0, "machines_per_leaf": 4}
    title = "leaf-spine"


class FatTreeTopology(TreeTopology):
    """A multi-tier fat-tree: its `tiers` from the bottom ('4:1,8:2', zensim.net.topology.parse_tiers)."""

    options = {"tiers": ""}
    required = {"tiers": "e.g. 4:1,8:2 (leaves of 4 machines, pods of 8 leaves with 2:1 uplinks)"}
    title = "fat-tree"
