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
With a host efficiency h(f) (all NICs on one host, an emulator), a message on a NIC link is further
served at h(f), f = the messages in flight when its head reaches the link (injected and not yet
through their first link), its own counted once, plus the others its rank injects at the same instant.

One implementation: the compiled steps of zensim.net.fastfifo. A log or a fastloop.Program that runs
alone runs them in one compiled event loop (fastfifo.run); anywhere else (other clients, background
traffic, a SimPy environment's clock, a network that already ran) this class drives the same steps from
the network's clock: it keeps fastfifo's state (fastfifo.model_state: per link when it is free, the
efficiency tables' state; grown when the network's room grows, kept while messages are declared in the
room: their routes written into it in place, fastfifo.declared) and calls one compiled step per protocol
call and per event of its own (a sender's injection, a message's head reaching its next link), then
hands the events that step scheduled to the clock in the order it scheduled them: deliveries to
`deliver_after`, hops to `clock.at` (back into this class). The times are the compiled loop's bit for bit
(an event's delay is its time less now, and now + (t - now) == t). NUMBA_DISABLE_JIT=1 runs the same
steps as Python, for debugging. The frozen Python model it replaced is the tests' oracle (tests/oracle_fifo.py).
"""

from __future__ import annotations

import numpy as np

from zensim.jit import announce, direct
from zensim.net import fastfifo, fastloop
from zensim.net.fastfifo import _DELIVER, _HOP
from zensim.net.models.base import NetworkView

COMPILE_S = 3  # about this many seconds of CPU compile the steps (zensim.jit.announce)


class Fifo:
    """Per-link FIFO with cut-through pipelining, on the network's clock: fastfifo's compiled steps over its
    state (the module docstring). O(hops) work and at most one event per hop per message."""

    name = "fifo"
    summary = "per-link FIFO, one message at a time, cut-through across hops"
    options: dict[str, object] = {}

    def __init__(self, net: NetworkView) -> None:
        self.net = net
        self.clock = net.clock
        self.mm: fastfifo.Model | None = None  # fastfifo's state, from the first `reserve`
        self.heap = np.empty((64, fastloop.ROW))  # the events of one step (emptied after each: _hand_over)
        self.st = fastloop.state(0)
        self._rows = 0  # messages whose compacted route the state holds
        self._steps = {_HOP: (self._hop, 3)}  # its one kind of event but deliveries (fastloop.hand_over)

    def reserve(self, size: int) -> None:
        """Grow the per-message state to `size` messages (fastfifo.model_state)."""
        net = self.net
        if self.mm is None:
            announce(fastfifo.hop_step, "the fifo model's steps (zensim.net.fastfifo)", COMPILE_S)
        was, first = None if self.mm is None else self.mm.wire.routes, self._rows
        routes, self._rows = fastloop.grow_routes(net, was, first, size)
        self.mm = fastfifo.model_state(net, routes, self.mm, first)
        mm, heap, st = self.mm, self.heap, self.st  # the steps for their types
        self._inject_step = direct(fastfifo.inject_step, np.zeros(0, np.int64), 0.0, mm, heap, st)
        self._hop_step = direct(fastfifo.hop_step, 0, 0, 0.0, 0.0, mm, heap, st)

    def inject(self, ids: list[int]) -> None:
        """Send messages `ids` now, in this order (fastfifo.inject_step)."""
        if self.net.count > self._rows:  # messages declared since, in the room reserved: their routes in place
            first = self._rows
            _, self._rows = fastloop.grow_routes(self.net, self.mm.wire.routes, first)
            self.mm = fastfifo.declared(self.net, self.mm, first)
        if self.heap.shape[0] < len(ids):
            self.heap = np.empty((2 * len(ids), fastloop.ROW))
        self._inject_step(np.array(ids, dtype=np.int64), float(self.clock.now), self.mm, self.heap, self.st)
        self._hand_over()

    def _hop(self, m: int, i: int, prev_end: float) -> None:
        """The head of message m reaches hop i of its route now (its end on the hop before: `prev_end`)."""
        self._hop_step(m, i, prev_end, float(self.clock.now), self.mm, self.heap, self.st)
        self._hand_over()

    def _hand_over(self) -> None:
        """The events the last step scheduled, to the network's clock (fastloop.hand_over)."""
        fastloop.hand_over(self.net, self.heap, self.st, _DELIVER, self._steps)
