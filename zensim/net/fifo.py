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
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Sequence

import numpy as np
import simpy


class FifoNetwork:
    """Per-link FIFO with cut-through pipelining: O(hops) work and at most one event per hop per message."""

    def __init__(self, env: simpy.Environment, capacity: np.ndarray, latency: np.ndarray,
                 routes: Sequence[tuple[int, ...]], nbytes: np.ndarray, deliver: Callable[[int], None],
                 efficiency: Sequence[Sequence[float] | None] | None = None) -> None:
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
        if eff is None:
            return self.capacity[k]
        taken = self.taken[k]
        while taken and taken[0] <= now:
            taken.popleft()
        return self.capacity[k] * eff[min(len(taken) + 1 + joining, len(eff) - 1)]

    def _hop(self, m: int, i: int, prev_end: float, joining: int = 0) -> None:
        """The head of message m reaches link i of its route now: queue behind what the link already took."""
        now = self.env.now
        k = self.routes[m][i]
        start = max(self.free[k], now)
        end = max(start + self.nbytes[m] / self._rate(k, now, joining), prev_end)
        self.free[k] = end
        if self.efficiency:
            self.taken[k].append(end)
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
