"""The simulated clock: callbacks at points in time, run in (time, priority, order of scheduling) order.

SimPy's core without processes or event objects: a heap of (time, priority, sequence, fn, args).
Every callback of the network runs from here, so an event costs one heap push and pop and one call.
Priority `LATE` runs a callback after every ordinary callback of the same instant, including those
scheduled meanwhile: a sharing model uses it to solve once per instant for all the flows that
started or ended at that instant.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Protocol

NORMAL, LATE = 1, 2


class EventLoop(Protocol):
    """What a Network, its sharing model and its host processors ask of a clock: `Clock` below, or a
    SimPy environment's (zensim.net.simpy_adapter.SimPyClock)."""

    events: int  # callbacks scheduled so far

    @property
    def now(self) -> float:
        """Simulated time in seconds."""

    def at(self, delay: float, fn: Callable, *args) -> None:
        """Call fn(*args) `delay` seconds from now (after the callbacks already due at that time)."""

    def late(self, fn: Callable, *args) -> None:
        """Call fn(*args) at the end of this instant, after every ordinary callback due now."""

    def run(self, until: float | None = None) -> None:
        """Run callbacks in time order until none is left (or up to `until`)."""


class Clock:
    """A discrete-event loop over one simulated time axis (seconds)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.events = 0  # callbacks scheduled so far
        self._queue: list[tuple] = []
        self._seq = itertools.count()

    def at(self, delay: float, fn: Callable, *args) -> None:
        """Call fn(*args) `delay` seconds from now (after the callbacks already due at that time)."""
        self.events += 1
        heapq.heappush(self._queue, (self.now + delay, NORMAL, next(self._seq), fn, args))

    def late(self, fn: Callable, *args) -> None:
        """Call fn(*args) at the end of this instant, after every ordinary callback due now."""
        self.events += 1
        heapq.heappush(self._queue, (self.now, LATE, next(self._seq), fn, args))

    def run(self, until: float | None = None) -> None:
        """Run callbacks in time order until none is left (or the next is later than `until`)."""
        queue, pop = self._queue, heapq.heappop
        while queue:
            if until is not None and queue[0][0] > until:
                self.now = until
                return
            time, _, _, fn, args = pop(queue)
            self.now = time
            fn(*args)
        if until is not None and until > self.now:
            self.now = until
