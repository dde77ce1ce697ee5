"""The protocol every sharing model implements, and the view of the network it is given.

A sharing model decides when each message in flight has crossed its route. It is constructed on a
`zensim.net.network.Network`, seen through `NetworkView`: per link `capacity`, `latency`,
`nic_efficiency` (eff(k) table of NIC links, or None), `host_efficiency` (h(f) table, or None),
`nic_links`; per message `route_tuples[m]`, `routes[m]` (padded with `num_links`), `nbytes[m]`,
`route_latency[m]`; and the clock (`clock.now`, `clock.at`, `clock.late`). When a message's last
byte has left its last link the model calls `deliver_after(latency, m)`.

The Network calls `inject(ids)` for each group of messages one sender starts at one instant (in
send order), and `reserve(size)` before it injects any of the message ids up to `size` - 1, so that
per-message arrays can grow (a compiled replay, which injects nothing, leaves them empty). Options (e.g. maxmin's `batch`) are keyword arguments named in `options` with
their defaults (the network passes every option, defaults filled in). `zensim.net.models.conformance` lists the properties every model must satisfy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Protocol

import numpy as np

from zensim.net.clock import EventLoop


class NetworkView(Protocol):
    """What a sharing model may read from the network it runs on (zensim.net.network.Network)."""

    clock: EventLoop
    num_links: int
    capacity: np.ndarray  # bytes/s per link
    latency: np.ndarray  # seconds per link
    nic_links: np.ndarray  # ids of the links of kind NIC
    nic_efficiency: list[float] | None  # eff(0..K) of NIC links, None without a NIC efficiency
    host_efficiency: list[float] | None  # h(0..F), None without a host efficiency
    routes: np.ndarray  # (messages, width) link ids, padded with num_links
    route_tuples: list[tuple[int, ...]]
    nbytes: np.ndarray
    route_latency: np.ndarray

    def deliver_after(self, delay: float, m: int) -> None:
        """Message m's last byte left its last link; it arrives `delay` later."""


class ReplayNetwork(NetworkView, Protocol):
    """What the compiled replays (zensim.net.fastloop and the models' loops) read and write of a network
    beyond a model's view; zensim.net.network.Network is one. Named here for their annotations, which
    cannot import the network: the maxmin model imports its compiled steps (no import cycle)."""

    count: int  # messages declared
    sent_at: np.ndarray  # per message its injection time (NaN: not yet)
    delivered_at: np.ndarray
    model: SharingModel


class SharingModel(Protocol):
    """How messages in flight share links (see the module docstring)."""

    name: ClassVar[str]
    summary: ClassVar[str]  # one line for --help and docs
    options: ClassVar[Mapping[str, object]]  # accepted keyword options and their defaults

    def __init__(self, net: NetworkView, **options: object) -> None: ...

    def reserve(self, size: int) -> None:
        """Make room for message ids 0..size-1."""

    def inject(self, ids: list[int]) -> None:
        """Messages `ids` start now, in this order (one sender, one instant)."""
