"""What a topology is: links with kinds, capacities and latencies, and the route of every GPU pair.

Every capacity-limited direction of a physical link is one *link* (an integer id) with a bandwidth
in bytes/s, a one-way latency in seconds and a *kind* (`LinkKind`: what the link is, so that a model
never has to read names). A `Topology` (the protocol the network models, the replay and the
reports take) holds them in arrays indexed by link id and routes GPU pairs in bulk: `route_matrix`
gives one row of link ids per pair, padded with `num_links` (a dummy link) to `route_width`
columns. The fabrics (zensim.net.fabrics) are its members: tree fabrics by formula
(zensim/net/tree.py), graph fabrics by shortest paths (zensim/net/graph.py).
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np


class LinkKind(enum.IntEnum):
    """What a link is; models look at kinds (e.g. efficiency curves apply to NICs), never at names."""

    NVLINK = 0
    NIC = 1
    FABRIC = 2


@runtime_checkable
class Topology(Protocol):
    """A cluster's links and routes (see the module docstring): `spec` (its ClusterSpec), per link
    `names`, `kind` (LinkKind values), `capacity` (bytes/s) and `latency` (s, on the link a message
    enters first)."""

    spec: Any
    names: list[str]
    kind: np.ndarray
    capacity: np.ndarray
    latency: np.ndarray

    @property
    def num_links(self) -> int:
        """Number of capacity-limited links."""

    @property
    def route_width(self) -> int:
        """The most links a route crosses (the column count of `route_matrix`)."""

    def machine_of_link(self) -> np.ndarray:
        """The machine each link belongs to (-1 for fabric links)."""

    def links_of_kind(self, kind: LinkKind) -> np.ndarray:
        """Ids of the links of one kind, ascending."""

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """Link ids from GPU `src` to GPU `dst` in order (empty for src == dst)."""

    def route_matrix(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Routes of many (src, dst) GPU pairs as an int64 matrix padded with `num_links`."""


def check_gpus(src: np.ndarray, dst: np.ndarray, gpus: int) -> tuple[np.ndarray, np.ndarray]:
    """`src` and `dst` as int64 arrays; ValueError unless every id is a GPU of 0..gpus-1."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= gpus):
        raise ValueError(f"GPU ids must be in 0..{gpus - 1}")
    return src, dst


def machine_links(spec: Any, rails: bool) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Every machine's links in id order (names, kinds, capacities, latencies): its GPUs' NVLink pairs
    (`nvl-up g`, `nvl-down g`), then its NIC pair (`nic-up m`, `nic-down m`) or with `rails` one per
    GPU (`nic-up g`, `nic-down g`); a message's latency sits on the egress link it enters."""
    g, machines = spec.gpus_per_machine, spec.machines
    nics = g if rails else 1
    names: list[str] = []
    for m in range(machines):
        for gpu in range(m * g, (m + 1) * g):
            names += [f"nvl-up {gpu}", f"nvl-down {gpu}"]
        for nic in (range(m * g, (m + 1) * g) if rails else [m]):
            names += [f"nic-up {nic}", f"nic-down {nic}"]
    kind = np.array([LinkKind.NVLINK] * 2 * g + [LinkKind.NIC] * 2 * nics, dtype=np.int8)
    bw = np.array([spec.nvlink_bandwidth] * 2 * g + [spec.nic_bandwidth] * 2 * nics)
    lat = np.array([spec.nvlink_latency, 0.0] * g + [spec.nic_latency, 0.0] * nics)
    return names, np.tile(kind, machines), np.tile(bw, machines), np.tile(lat, machines)


class MachineLinks:
    """The members every topology laid out machine by machine shares (tree and graph fabrics): a
    machine's `_block` links (its GPUs' NVLink pairs, then its NIC pairs) from id `machine x _block`,
    the fabric's links after every machine's. A fabric's class declares its `options` ({key: default},
    read from ClusterSpec.fabric_option), the `required` ones ({key: an example}) and a `title` for errors."""

    options: ClassVar[dict[str, object]] = {}
    required: ClassVar[dict[str, str]] = {}
    title: ClassVar[str] = ""
    spec: Any
    names: list[str]
    kind: np.ndarray
    _block: int

    @property
    def num_links(self) -> int:
        """One per name."""
        return len(self.names)

    def machine_of_link(self) -> np.ndarray:
        """Machine m owns ids m x _block .. (m + 1) x _block - 1; the fabric's are -1."""
        per = np.repeat(np.arange(self.spec.machines), self._block)
        return np.concatenate([per, np.full(self.num_links - len(per), -1)])

    def links_of_kind(self, kind: LinkKind) -> np.ndarray:
        """Where `kind` holds it."""
        return np.flatnonzero(self.kind == kind)

    def _nvlink(self, out: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Write the routes of GPU pairs inside one machine (`nvl-up src`, `nvl-down dst`) into `out`;
        the pairs' machines."""
        g, block = self.spec.gpus_per_machine, self._block
        if g == 1:  # one GPU a machine: no pair inside one
            return src, dst
        ms, md = src // g, dst // g
        near = (ms == md) & (src != dst)
        out[near, 0] = ms[near] * block + 2 * (src[near] % g)
        out[near, 1] = md[near] * block + 2 * (dst[near] % g) + 1
        return ms, md

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """The pair's row of `route_matrix` without its padding."""
        row = self.route_matrix(np.array([src]), np.array([dst]))[0]  # type: ignore[attr-defined]
        return tuple(int(k) for k in row if k != self.num_links)
