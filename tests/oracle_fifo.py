"""The reference oracle of the `fifo` sharing model: the Python model as it stood before the model got one
implementation (zensim.net.fastfifo's compiled steps, driven by zensim.net.models.fifo.Fifo on the general
path). Frozen: the tests only (tests/replay_support.py: `oracle`) run it, and the bit-identity tests
(tests/test_net_fastfifo.py, test_train_timeline_compiled.py, ...) compare both the compiled loop and the
general path's adapter against it, time for time, event for event. A rule changed in fastfifo is changed
here too, in plain Python, so that the change is checked against a second reading of it. Not registered
in zensim.net.models.MODELS.

What it does: zensim/net/models/fifo.py's docstring (the rules are the same).
"""

from __future__ import annotations

import heapq
from collections import Counter, deque

import numpy as np

from zensim.net.efficiency import factor
from zensim.net.models.base import NetworkView


class Fifo:
    """Per-link FIFO with cut-through pipelining: O(hops) work and at most one event per hop per message."""

    name = "fifo-oracle"
    summary = "per-link FIFO, one message at a time, cut-through across hops"
    options: dict[str, object] = {}

    def __init__(self, net: NetworkView) -> None:
        self.net = net
        self.clock = net.clock
        self.capacity = net.capacity.tolist()
        self.latency = net.latency.tolist()
        self.free = [0.0] * len(self.capacity)
        # the efficiency tables (zensim.net.efficiency), empty without, and the NIC links they scale (none without)
        self.nic_table = np.array(net.nic_efficiency or [], dtype=np.float64)
        self.host_table = np.array(net.host_efficiency or [], dtype=np.float64)
        self.nic = frozenset(net.nic_links.tolist() if len(self.nic_table) or len(self.host_table) else ())
        self.taken: list[deque[float]] = [deque() for _ in self.capacity]  # end times of messages on each NIC link
        self.inflight: list[float] = []  # heap: first-link end times of the messages in flight

    def reserve(self, size: int) -> None:
        """Nothing per message beyond what the network keeps."""

    def inject(self, ids: list[int]) -> None:
        """Send messages `ids` now, in this order."""
        routes, now = self.net.route_tuples, self.clock.now
        moving = [m for m in ids if routes[m]]
        on_first = Counter(routes[m][0] for m in moving) if len(self.nic_table) else None
        later = len(moving)  # messages of this group not yet through _hop: in flight from this instant too
        for m in ids:
            route = routes[m]
            if not route:
                self.net.deliver_after(0.0, m)
                continue
            later -= 1
            joining = 0
            if on_first is not None:
                on_first[route[0]] -= 1
                joining = on_first[route[0]]
            self._hop(m, route, 0, now, now, joining, later)

    def _rate(self, k: int, now: float, joining: int, flows: int) -> float:
        """Bandwidth of link k for a message whose head reaches it now, `joining` more messages reaching
        it at this instant, `flows` messages in flight in the network (for the host efficiency)."""
        rate = self.capacity[k]
        if k in self.nic:
            if len(self.nic_table):
                taken = self.taken[k]
                while taken and taken[0] <= now:
                    taken.popleft()
                rate *= factor(self.nic_table, len(taken) + 1 + joining)
            if len(self.host_table):
                rate *= factor(self.host_table, flows)
        return rate

    def _in_flight(self, now: float, first_end: float, first_hop: bool, later: int) -> int:
        """Messages in flight now (injected, first link not yet done), this one included once, plus
        `later` more that its sender injects at this instant after it."""
        if not len(self.host_table):
            return 0
        while self.inflight and self.inflight[0] <= now:
            heapq.heappop(self.inflight)
        mine = 1 if first_hop or first_end <= now else 0  # past its first hop, it is in the heap until first_end
        return len(self.inflight) + mine + later

    def _hop(self, m: int, route: tuple[int, ...], i: int, prev_end: float, first_end: float, joining: int = 0,
             later: int = 0) -> None:
        """The head of message m reaches link i of its route now: queue behind what the link already took.
        `first_end`: when m's first link finished it (from hop 1 on); `later`: messages its sender
        injects after it at this instant (while this call is part of that injection)."""
        now = self.clock.now
        k = route[i]
        start = max(self.free[k], now)
        rate = self._rate(k, now, joining, self._in_flight(now, first_end, i == 0, later))
        end = max(start + self.net.nbytes[m] / rate, prev_end)
        self.free[k] = end
        if k in self.nic and len(self.nic_table):
            self.taken[k].append(end)
        if i == 0:
            first_end = end
            if len(self.host_table):
                heapq.heappush(self.inflight, end)
        head, end = start + self.latency[k], end + self.latency[k]
        if i + 1 == len(route):
            self.net.deliver_after(end - now, m)
        elif head == now:
            self._hop(m, route, i + 1, end, first_end, 0, later)
        else:
            self.clock.at(head - now, self._hop, m, route, i + 1, end, first_end)
