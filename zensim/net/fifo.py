"""The `fifo` sharing model: every link serves one message at a time, first come first served.

A message is pipelined across the links of its route (cut-through): on link k it starts when the link
is free and its head has arrived (start of link k-1 plus that link's latency), and it cannot finish
before it finished on link k-1 plus the latency. Pure message-level store-and-forward would charge
an inter-machine message twice (NIC up, then NIC down), which no packet network does; with one hop,
or equal speeds and no contention, this is exactly alpha + bytes / bandwidth. A link takes messages in
the order their heads reach it (one event per hop), so an all-to-all in rotated order has no conflicts.

With a NIC efficiency eff(k), a message is served on a NIC link at bandwidth x eff(k), k = the
messages on that link when its head reaches it (queued or in service, itself included, and the other
messages a rank injects onto it at the same instant): the n-1 sends of an all-to-all all go at eff(n-1).
With a host efficiency h(f) (all NICs on one host, an emulator), a message on a link of
`scaled_links` (the NICs) is further served at h(f), f = the messages in flight when its head reaches
the link (injected and not yet through their first link), its own included.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Callable, Sequence

import numpy as np
import simpy


class FifoNetwork:
    """Per-link FIFO with cut-through pipelining: O(hops) work and at most one event per hop per message."""

    def __init__(self, env: simpy.Environment, capacity: np.ndarray, latency: np.ndarray,
                 routes: Sequence[tuple[int, ...]], nbytes: np.ndarray, deliver: Callable[[int], None],
                 efficiency: Sequence[Sequence[float] | None] | None = None,
                 host_efficiency: Sequence[float] | None = None, scaled_links: Sequence[int] = ()) -> None:
        self.env = env
        self.capacity = capacity.tolist()
        self.latency = latency.tolist()
        self.routes = routes
        self.nbytes = nbytes.tolist()
        self.deliver = deliver
        self.free = [0.0] * len(self.capacity)
        self.efficiency = efficiency if efficiency is not None and any(e is not None for e in efficiency) else None
        self.taken: list[deque[float]] = [deque() for _ in self.capacity]  # end times of messages on each link
        self.events = 0
        self.host_efficiency = list(host_efficiency) if host_efficiency is not None else None
        self.scaled_links = frozenset(scaled_links)
        self.inflight: list[float] = []  # heap: first-link end times of the messages in flight

    def inject(self, ids: Sequence[int]) -> None:
        """Send messages `ids` now, in this order."""
        batch = Counter(self.routes[m][0] for m in ids if self.routes[m]) if self.efficiency else Counter()
        for m in ids:
            if self.routes[m]:
                batch[self.routes[m][0]] -= 1
                self._hop(m, 0, self.env.now, batch[self.routes[m][0]])
            else:
                self._later(0.0, self.deliver, m)

    def _rate(self, k: int, now: float, joining: int) -> float:
        """Bandwidth of link k for a message whose head reaches it now, `joining` more arriving with it."""
        eff = self.efficiency[k] if self.efficiency else None
        rate = self.capacity[k]
        if eff is not None:
            taken = self.taken[k]
            while taken and taken[0] <= now:
                taken.popleft()
            rate *= eff[min(len(taken) + 1 + joining, len(eff) - 1)]
        if self.host_efficiency is not None and k in self.scaled_links:
            while self.inflight and self.inflight[0] <= now:
                heapq.heappop(self.inflight)
            flows = len(self.inflight) + 1 + joining
            rate *= self.host_efficiency[min(flows, len(self.host_efficiency) - 1)]
        return rate

    def _hop(self, m: int, i: int, prev_end: float, joining: int = 0) -> None:
        """The head of message m reaches link i of its route now: queue behind what the link already took."""
        now = self.env.now
        k = self.routes[m][i]
        start = max(self.free[k], now)
        end = max(start + self.nbytes[m] / self._rate(k, now, joining), prev_end)
        self.free[k] = end
        if self.efficiency:
            self.taken[k].append(end)
        if self.host_efficiency is not None and i == 0:
            heapq.heappush(self.inflight, end)
        head, end = start + self.latency[k], end + self.latency[k]
        if i + 1 == len(self.routes[m]):
            self._later(end - now, self.deliver, m)
        elif head == now:
            self._hop(m, i + 1, end)
        else:
            self._later(head - now, self._hop, m, i + 1, end)

    def _later(self, delay: float, fn: Callable, *args) -> None:
        """Call fn(*args) after `delay`."""
        self.events += 1
        self.env.timeout(delay).callbacks.append(lambda _ev: fn(*args))
