"""The `fifo` sharing model: every link serves one message at a time, first come first served.

A message is pipelined across the links of its route (cut-through): on link k it starts when the link
is free and its head has arrived (start of link k-1 plus that link's latency), and it cannot finish
before it finished on link k-1 plus the latency. Pure message-level store-and-forward would charge
an inter-machine message twice (NIC up, then NIC down), which no packet network does; with one hop,
or equal speeds and no contention, this is exactly alpha + bytes / bandwidth. Links are reserved in
injection order, which is event-time order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import simpy


class FifoNetwork:
    """Reservation-based per-link FIFO: O(hops) per message, one delivery event each."""

    def __init__(self, env: simpy.Environment, capacity: np.ndarray, latency: np.ndarray,
                 routes: Sequence[tuple[int, ...]], nbytes: np.ndarray, deliver: Callable[[int], None]) -> None:
        self.env = env
        self.capacity = capacity.tolist()
        self.latency = latency.tolist()
        self.routes = routes
        self.nbytes = nbytes.tolist()
        self.deliver = deliver
        self.free = [0.0] * len(self.capacity)
        self.events = 0

    def inject(self, ids: Sequence[int]) -> None:
        """Send messages `ids` now, in this order."""
        now = self.env.now
        for m in ids:
            size = self.nbytes[m]
            head, end = now, now
            for k in self.routes[m]:
                start = max(self.free[k], head)
                end = max(start + size / self.capacity[k], end)
                self.free[k] = end
                head = start + self.latency[k]
                end += self.latency[k]
            self._at(end - now, m)

    def _at(self, delay: float, m: int) -> None:
        """Deliver message m after `delay`."""
        self.events += 1
        self.env.timeout(delay).callbacks.append(lambda _ev, m=m: self.deliver(m))
