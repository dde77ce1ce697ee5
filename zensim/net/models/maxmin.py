"""The `maxmin` sharing model: flows share links max-min fairly (the fluid model of TCP), incrementally.

One implementation: the compiled steps of zensim.net.fastmaxmin. A log or a fastloop.Program that runs
alone runs them in one compiled event loop (fastmaxmin.run); anywhere else (other clients, background
traffic, a SimPy environment's clock, a network that already ran) this class drives the same steps
from the network's clock: it keeps fastmaxmin's state (fastmaxmin.model_state: per flow, link and
component, the departure segments) and an event heap of its own, calls one compiled step per protocol
call and per event of its own (inject, an isolated flow's end, a departure, a deferred check, the
end-of-instant flush), and hands the events that step scheduled to the clock, in the order the step
scheduled them: deliveries to `deliver_after`, its own events to `clock.at` (back into this class),
the flush to `clock.late`. The times are the compiled loop's bit for bit (an event's delay is its time
less now, and now + (t - now) == t). NUMBA_DISABLE_JIT=1 runs the same steps as Python, for debugging.
The frozen Python model it replaced is the tests' oracle (tests/oracle_maxmin.py).

Rates are piecewise constant between solves. Each flow keeps its bytes left at its last solve and
its projected finish time; each solve orders its flows by finish time (a *segment*, partially
sorted: its earliest few hundred, then the next), and departures are taken from the heads of the
segments in time order, so a departure costs O(1) work, not a pass over the active flows.

- A flow alone on all its links (rings, recursive doubling) is *isolated*: it runs at its route's
  bottleneck speed with its own finish event, no solve; when another flow arrives on one of its
  links it is promoted, with the bytes it has left, into the shared set.
- Shared flows form *components*: flows that start on a link already used join that link's
  component (components merge on arrival and are never split: a stale component is solved as one,
  which is still exact). A solve covers one component: progressive filling, compiled
  (zensim.net.waterfill).
- Flows that start at one instant are solved together once, at the end of that instant (every
  rank's sends of a stage), with the components due for a re-solve after departures.
- Arrivals without a solve (`_warm`, not in the exact mode): where the flows that joined a component
  this instant use only links that limited none of its flows at the last solve, and max-min among
  themselves in the capacity the others leave each saturates a link on which no flow is faster, the
  others keep their rates and the new flows get those (waterfill.warm_flows): that is the max-min
  allocation of all of them (the others' bottlenecks are untouched; a test checks it against a
  solve), up to capacity freed by departures since the last solve, which stays under the allowance
  below as before. Where a merge or freed capacity made the component due, or a check fails, it is
  solved whole (a large one after the joins wait: below). In zen's second all-to-all every rank starts
  at its own instant on its idle uplink: 1076 of 1080 arrivals at 1024 ranks, where each re-solved up
  to a million flows.
- Departures: a flow's departure frees its rate on its links. Only capacity freed on a link that
  limited some flow at the last solve (a saturated link) and still carries flows can raise a rate.
  Left idle, capacity r freed at time t on link k stays idle until the next solve, at the latest
  until the last flow on k ends at T_k (projected at the last solve): r (T_k - t) bytes of service
  lost. With `batch` = ε, a component is re-solved as soon as, on one of its saturated links, the
  service lost over the link's busy period (idle time before earlier solves, plus the projected
  loss of the capacity freed since the last one) would exceed ε x (capacity x (now - the start of
  the busy period) + the bytes left on the link), both as of the last solve: ε x capacity x the
  least the busy period can last, whatever the rates (not ε x capacity x (T_k - its start): where
  one large flow shares a link with k small ones, the first solve projects T_k k + 1 times too
  long), so each link's busy period loses at most ε of its least length, whatever the number of
  solves and the fan-in (waterfill._restart). Per flow: the allowance is scaled at each departure by
  the share of the last solve's rates on the link still alive (waterfill.share_of_room: the flows
  left make a loss up at their rates), and a solve counts the busy period from its oldest flow's
  start (waterfill.solve_compiled), so credit banked before a flow began is not spent on it. The re-solve is not done at once: the component is due when the service
  actually lost since its last solve reaches 1/64 of what is left of the allowance (a time known
  at the departure, since rates do not change until the next solve), and any solve before then
  (the next rank's sends, usually) takes the freed capacity up for free; at 256-rank zen this
  cuts the solves from 2369 to 661 (half of the allowance: 458 solves, but +0.43% against exact
  on a real log where 1/64 is +0.13%). ε = 0 re-solves at every such departure: exact max-min. Departures
  at the end of a stage of near-equal flows cost little (T_k - t is small) and are batched widely;
  early ones are not. Measured against the exact mode on the benchmark logs and on logs built to
  defeat batching: docs/simulator.md.
- Small components are exact: a component of at most `exact_flows` (default 2048) flows after a
  departure is re-solved at once wherever freed capacity could be used, and its arrivals are always
  solved (no `_warm`), as with ε = 0. A solve of a few thousand flows costs little, and batching them
  saved few solves: where eight shard instances' ring flows share each NIC (ZEN's layout), one
  departure frees 1/8 of a NIC, and a stage end moved by 3-7% of the makespan against exact (the
  makespan +0.8% at 128 x 8) for 2% fewer solves and no less CPU. A log whose components never
  exceed it replays bit-identically to ε = 0; all-to-alls at 46+ ranks (2070+ flows in one
  component) keep the allowance. docs/simulator.md has the figures.
- Large components re-solve one link at a time (`local_flows`, default 8192; None turns it off): in a
  component of more than N flows, a link that runs out of allowance (at an instant no flow joined the
  component) has only its own flows re-solved: max-min in its capacity and in what the other flows
  leave on their other links, no flow above the level of another link of it that limits flows, every
  other flow keeping its rate (a rise takes freed capacity up, a fall frees capacity, both counted by
  the allowance as departures are). It stands only where every flow still has a saturated link on
  which no flow is faster, in the capacities less what departures left idle (what a solve leaves), or
  where the rate by which it holds the link's flows below that, over their time, fits half of what is
  left of the link's allowance, and is charged to it (`waterfill._held_back`); else it is tried again
  with the links that held it back (a region, up to 2 rounds), and where none stands the component is
  solved whole. So its error is the allowance's, bounded the same way. The component is
  also solved whole when flows join it, or once its link re-solves have re-solved half its flows since
  its last solve. In an all-to-all each link runs out about once per stage: whole solves of n^2 flows
  made the push n^3 (215 s of CPU at 2048 ranks; 35 s with link re-solves). docs/simulator.md has the
  figures.
- Joins into a large component wait for its next solve (`_hold`; batched mode, no efficiency table):
  where flows join a component of more than `exact_flows` and `local_flows` flows, not given rates
  without a solve (`_warm`), they get no rate (as if sent later) until a check at most ε x the longest
  busy period among their links from now solves the component whole, unless a solve comes first; later
  joins wait for the same solve (no `_warm` while flows wait). So a flow starts at most ε x its join
  time late, as a link loses at most ε of its busy period to idle capacity.
  In ZEN's layout every rank's start joins flows that cross every machine's NIC, and each such join
  solved the whole component (n^3): zen at 512 x 8 took 323 s of CPU, now 31-36 s, and 1024 x 8 167-171 s.
  docs/simulator.md has the figures.

With a NIC efficiency eff(k), a NIC link carrying k active flows (isolated or shared) has capacity
bandwidth x eff(k) in the solve; an isolated flow runs at eff(1). The count is the one of the last
solve of the link's component.

With a host efficiency h(f) (an emulator's property: all NICs run on one host), the capacity of
every NIC link is further scaled by h(f), f = the flows active anywhere in the network. Any change
of f changes every such capacity, so the model then keeps no flow isolated and re-solves every
component at every arrival and departure (fine at emulator sizes).
"""

from __future__ import annotations

import numpy as np

from zensim.errors import ConfigError
from zensim.jit import announce, direct
from zensim.net import fastloop, fastmaxmin
from zensim.net.fastmaxmin import (_ACTIVE, _CHECK, _DELIVER, _DEPART, _FLUSH, _ISOLATED, _LOCAL, _SOLVES, _WAITS,
                                   _WARM, Wire)
from zensim.net.models.base import NetworkView

EXACT_FLOWS = 2048  # a component of at most this many flows is solved at every change, as with batch 0
LOCAL_FLOWS = 8192  # a link of a component of more than this many flows that runs out is re-solved alone
OFF = 2**62  # local_flows None: no component re-solves a link alone
COMPILE_S = 36  # about this many seconds of CPU compile the steps (zensim.jit.announce)


def checked(batch: object, exact_flows: object, local_flows: object) -> tuple[float, int, int]:
    """maxmin's options (`MaxMin.options`) as the model keeps them; a ConfigError naming a bad one."""
    if not isinstance(batch, (int, float)) or isinstance(batch, bool) or not 0 <= batch <= 1:
        raise ConfigError(f"--maxmin-batch {batch}: must be in [0, 1]")
    for name, value in (("exact_flows", exact_flows), ("local_flows", local_flows)):
        if ((not isinstance(value, int) or isinstance(value, bool) or value < 0)
                and (name, value) != ("local_flows", None)):
            raise ConfigError(f"maxmin option {name} {value!r}: must be an integer at least 0"
                              + (" (or none: off)" if name == "local_flows" else ""))
    return float(batch), exact_flows, OFF if local_flows is None else local_flows


class MaxMin:
    """Flow-level max-min fair sharing on the network's clock: fastmaxmin's compiled steps over its state
    (the module docstring)."""

    name = "maxmin"
    summary = "flow-level max-min fair sharing (fluid TCP), solved per component, departures batched by freed capacity"
    options: dict[str, object] = {"batch": 1 / 256, "exact_flows": EXACT_FLOWS, "local_flows": LOCAL_FLOWS}

    def __init__(self, net: NetworkView, batch: float, exact_flows: int, local_flows: int | None) -> None:
        self.batch, self.exact_flows, self.local_flows = checked(batch, exact_flows, local_flows)
        self.net = net
        self.clock = net.clock
        self.mm: fastmaxmin.Model | None = None  # fastmaxmin's state, from the first `reserve`
        self.ms: np.ndarray | None = None  # its integer state (solve counts), or a compiled run's (fastmaxmin.run)
        self.heap = np.empty((64, fastloop.ROW))  # the events of one step (emptied after each: _hand_over)
        self.st = fastloop.state(0)
        self._rows = 0  # messages whose compacted route and route latency the state holds
        # its events' kinds (fastloop.hand_over): the method each calls and how many of its columns it takes
        self._steps = {_ISOLATED: (self._isolated_done, 2), _DEPART: (self._depart, 1), _CHECK: (self._check, 2),
                       _FLUSH: (self._flush, -1)}

    @property
    def solves(self) -> int:
        """Component solves so far."""
        return int(self.ms[_SOLVES]) if self.ms is not None else 0

    @property
    def warm(self) -> int:
        """Arrivals given rates without a solve so far (fastmaxmin._warm)."""
        return int(self.ms[_WARM]) if self.ms is not None else 0

    @property
    def local(self) -> int:
        """Links re-solved alone so far (fastmaxmin._patch)."""
        return int(self.ms[_LOCAL]) if self.ms is not None else 0

    @property
    def waits(self) -> int:
        """Joins into a large component that waited for its next solve so far (fastmaxmin._hold)."""
        return int(self.ms[_WAITS]) if self.ms is not None else 0

    # -- the protocol --------------------------------------------------------------------------

    def reserve(self, size: int) -> None:
        """Grow the per-flow and per-component state to `size` flows (fastmaxmin.model_state)."""
        net, ran = self.net, None
        if self.mm is None:  # the first (after a compiled run, its counts carried on)
            announce(fastmaxmin.flush_step, "the maxmin model's steps (zensim.net.fastmaxmin)", COMPILE_S)
            ran = self.ms
        was = None if self.mm is None else self.mm.wire.croutes
        croutes, self._rows = fastloop.grow_routes(net, was, self._rows, size)
        wire = Wire(croutes, net.routes, np.empty(0, np.int32), net.nbytes, np.append(net.capacity, np.inf),
                    np.empty(0), net.num_links, self.batch, self.exact_flows, self.local_flows)
        self.mm = fastmaxmin.model_state(net, size, wire, net.sent_at, self.mm)
        if ran is not None:
            self.mm.ms[[_SOLVES, _WARM, _LOCAL, _WAITS]] = ran[[_SOLVES, _WARM, _LOCAL, _WAITS]]
        self.ms = self.mm.ms
        self._sync()
        mm, heap, st = self.mm, self.heap, self.st  # the steps for their types
        self._inject_step = direct(fastmaxmin.inject_step, np.zeros(0, np.int64), 0.0, mm, heap, st)
        self._isolated_step = direct(fastmaxmin.isolated_step, 0, 0, 0.0, mm, heap, st)
        self._depart_step = direct(fastmaxmin.depart_step, 0, 0.0, mm, heap, st)
        self._check_step = direct(fastmaxmin.check_step, 0, 0, 0.0, mm, heap, st)
        self._flush_step = direct(fastmaxmin.flush_step, 0.0, mm, heap, st)

    def _sync(self) -> None:
        """The network's messages declared since into the state: their compacted routes (written in place),
        their route latencies (the network's arrays, which it may have replaced)."""
        net, mm = self.net, self.mm
        _, self._rows = fastloop.grow_routes(net, mm.wire.croutes, self._rows)
        latency = net.route_latency
        if mm.wire.latency is not latency:
            self.mm = mm._replace(wire=mm.wire._replace(latency=latency))

    def inject(self, ids: list[int]) -> None:
        """Start flows `ids` now (fastmaxmin.inject_step); the shared ones are solved at the end of this
        instant."""
        if self.net.count > self._rows:
            self._sync()
        self._room(len(ids))
        self._inject_step(np.array(ids, dtype=np.int64), float(self.clock.now), self.mm, self.heap, self.st)
        self._hand_over()

    # -- the model's events ----------------------------------------------------------------------

    def _isolated_done(self, m: int, stamp: int) -> None:
        """An isolated flow finished (unless it was promoted meanwhile)."""
        self._isolated_step(m, stamp, float(self.clock.now), self.mm, self.heap, self.st)
        self._hand_over()

    def _depart(self, version: int) -> None:
        """Retire the shared flows that finish now (unless a later departure event replaced this one)."""
        self._room(0)
        self._depart_step(version, float(self.clock.now), self.mm, self.heap, self.st)
        self._hand_over()

    def _check(self, c: int, epoch: int) -> None:
        """A deferred departure's idle capacity has used up its allowance: re-solve component c, unless it
        was solved (or merged into another) since."""
        self._check_step(c, epoch, float(self.clock.now), self.mm, self.heap, self.st)
        self._hand_over()

    def _flush(self) -> None:
        """End of an instant: place new shared flows, then solve every component that is due."""
        self.mm = self._flush_step(float(self.clock.now), self.mm, self.heap, self.st)  # grown where it needed room
        self._hand_over()

    def _room(self, sends: int) -> None:
        """A heap with room for the events of the next step: one per flow injected and one more, or two
        per shared flow (a departure's deliveries and checks) and one more."""
        need = max(sends, 2 * int(self.mm.ms[_ACTIVE])) + 8
        if self.heap.shape[0] < need:
            self.heap = np.empty((2 * need, fastloop.ROW))

    def _hand_over(self) -> None:
        """The events the last step scheduled, to the network's clock (fastloop.hand_over)."""
        fastloop.hand_over(self.net, self.heap, self.st, _DELIVER, self._steps)
