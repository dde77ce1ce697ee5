"""The reference oracle of the `maxmin` sharing model: the Python model as it stood before the model got one
implementation (zensim.net.fastmaxmin's compiled steps, driven by zensim.net.models.maxmin.MaxMin on the
general path). Frozen: the tests only (tests/replay_support.py: `oracle`) run it, and the
bit-identity tests (tests/test_net_fastmaxmin.py, test_train_timeline_compiled.py, ...) compare both the
compiled loop and the general path's adapter against it, time for time, solve for solve. A rule changed
in fastmaxmin is changed here too, in plain Python, so that the change is checked against a second
reading of it. Not registered in zensim.net.models.MODELS.

What it does: zensim/net/models/maxmin.py's docstring (the rules are the same).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right

import numpy as np

from zensim.net.models.base import NetworkView
from zensim.net.efficiency import capacities
from zensim.net.fastmaxmin import DEFER, HEAD, TIE
from zensim.net.models import maxmin
from zensim.net.waterfill import LinkState, share_of_room, solve_flows, warm_flows



FIRST = 64  # a segment's first head: a 64th of its flows (later ones an eighth; the order taken is the same)
_NONE = np.empty(0, dtype=np.int64)
_NO_TABLE = np.empty(0)  # an efficiency table's place where there is none (zensim.net.efficiency)


class _Component:
    """Shared flows connected through links (a superset once flows left: never split)."""

    __slots__ = ("parts", "nparts", "segments", "alive", "check", "epoch")

    def __init__(self) -> None:
        self.parts: list[np.ndarray | list[int]] = []  # flow ids (some may have left): solved arrays, joined runs
        self.nparts = 0  # pieces added since its last solve (1 for the solved set; it picks the root of a merge)
        self.segments: list[int] = []  # ids of its live departure segments
        self.alive = 0  # flows not yet departed
        self.check = np.inf  # when the idle capacity of a departure reaches its allowance (a re-solve is due)
        self.epoch = 0  # solves so far (a check armed before the last one is stale)


class _Segment:
    """The flows of one solve by projected finish time, ties in the order of the solve: a sorted head of
    the earliest, the rest unsorted in solve order (refilled as the head is used up, an eighth of what
    is left at a time, the first head a 64th (FIRST), at least HEAD: a solve costs O(flows), not a
    full sort, a segment replaced by the next solve soon sorts little, and draining a segment costs
    O(flows) partitions in all). The order taken is the stable sort of the whole segment, however it
    is cut into heads (zensim.net.fastmaxmin takes the same)."""

    __slots__ = ("finish", "flows", "head_finish", "head_flows", "pos")

    def __init__(self, finish: np.ndarray, flows: np.ndarray) -> None:
        self.finish, self.flows = finish, flows
        self.head_flows: list[int] = []
        self._refill()

    def _refill(self) -> None:
        head = max(HEAD, len(self.finish) // (FIRST if not self.head_flows else 8))
        if len(self.finish) <= head:  # all of it (the common case: a small component)
            order = np.argsort(self.finish, kind="stable")
            self.head_finish, self.head_flows = self.finish[order].tolist(), self.flows[order].tolist()
            self.finish = self.flows = _NONE
        else:  # the `head` earliest, ties to the first in solve order
            cut = np.partition(self.finish, head - 1)[head - 1]
            take = self.finish < cut
            take[np.flatnonzero(self.finish == cut)[:head - np.count_nonzero(take)]] = True
            finish, flows = self.finish[take], self.flows[take]
            order = np.argsort(finish, kind="stable")
            self.head_finish, self.head_flows = finish[order].tolist(), flows[order].tolist()
            self.finish, self.flows = self.finish[~take], self.flows[~take]
        self.pos = 0

    def next_finish(self) -> float | None:
        """The earliest finish not yet taken (None when all are)."""
        if self.pos == len(self.head_finish):
            if not len(self.finish):
                return None
            self._refill()
        return self.head_finish[self.pos]

    def take(self, horizon: float) -> list[int]:
        """The flows finishing by `horizon`, in time order."""
        out: list[int] = []
        while (first := self.next_finish()) is not None and first <= horizon:
            end = bisect_right(self.head_finish, horizon, self.pos)
            out += self.head_flows[self.pos: end]
            self.pos = end
        return out


class MaxMin:
    """Flow-level max-min fair sharing: isolated flows in plain Python, shared ones solved per component."""

    name = "maxmin-oracle"
    summary = "the frozen reference of maxmin (tests only)"
    options = maxmin.MaxMin.options

    def __init__(self, net: NetworkView, batch: float, exact_flows: int, local_flows: int | None) -> None:
        self.batch, self.exact_flows, self.local_flows = maxmin.checked(batch, exact_flows, local_flows)
        self.net = net
        self.clock = net.clock
        links = net.num_links
        self.dummy = links
        self.capacity = np.append(net.capacity, np.inf)
        # the efficiency tables (zensim.net.efficiency), empty without; they scale the NIC links
        self.nic_table = np.array(net.nic_efficiency or [], dtype=np.float64)
        self.host_table = np.array(net.host_efficiency or [], dtype=np.float64)
        self.nic = np.zeros(links + 1, dtype=bool)
        self.nic[net.nic_links] = True
        # a link's capacity for a flow alone on it: eff(1) on NIC links (no flow is alone under a host efficiency);
        # compiled code only with a table (a plain run's first compile is its loop's, announced: zensim.jit)
        self.alone = (capacities(self.capacity, self.nic, self.nic_table, np.ones(links + 1, np.int64), _NO_TABLE, 0,
                                 np.empty(links + 1)) if len(self.nic_table) else self.capacity).tolist()
        # per flow
        self.left = np.zeros(0)  # bytes left at base_time
        self.base_time = np.zeros(0)
        self.rate = np.zeros(0)
        self.segment_of = np.zeros(0, dtype=np.int64)  # the segment holding a shared flow's current finish time
        self.alive = np.zeros(0, dtype=bool)  # shared and not yet departed
        self.comp_of: list[int] = []  # component id of a shared flow
        # per link
        self.nflows = [0] * (links + 1)  # active flows, isolated or shared
        self.comp_on = [-1] * (links + 1)  # component of the shared flows on the link (-1: none)
        self.state = state = LinkState(links + 1)  # set by each solve on its links
        self.room = state.room  # service the link may lose before its component is due (inf: not saturated)
        self.spent = state.spent  # service lost in its busy period, up to the last solve
        self.freed = state.freed  # capacity freed since the last solve: sum of r
        self.freed_t = state.freed_t  # and sum of r x t
        self.last = state.last  # projected end of the last flow on the link (at the last solve)
        self.busy_from = state.busy_from  # start of the link's busy period
        self.used, self.peak, self.level = state.used, state.peak, state.level  # the last solve's rates on the link
        # components (union-find over ids), isolated flows, departure segments
        self.comps: dict[int, _Component] = {}
        self.parent: list[int] = []
        self.isolated: dict[int, tuple[float, float, int]] = {}  # flow -> (start, rate, stamp)
        self.isolated_on: dict[int, int] = {}  # link -> its isolated flow
        self.stamp = 0
        self.segments: dict[int, _Segment] = {}
        self.heads: list[tuple[float, int]] = []  # heap of (next finish, segment id)
        self.next_segment = 0
        self.armed_at = np.inf
        self.version = 0
        self.joined: list[int] = []  # flows that became shared this instant
        self.due: set[int] = set()  # components to re-solve at the end of this instant
        self.stale: set[int] = set()  # those of them due for freed capacity or a merge (no _warm)
        self.flush_armed = False
        self.active = 0  # shared flows alive
        self.solves = 0
        self.warm = 0  # arrivals given rates without a solve (_warm)

    # -- bookkeeping -------------------------------------------------------------------------

    def reserve(self, size: int) -> None:
        """Grow the per-flow arrays to `size` flows."""
        have = len(self.rate)
        for name, fill in (("left", 0.0), ("base_time", 0.0), ("rate", 0.0), ("segment_of", -1), ("alive", False)):
            old = getattr(self, name)
            new = np.full(size, fill, dtype=old.dtype)
            new[:have] = old
            setattr(self, name, new)
        self.comp_of += [-1] * (size - have)

    def _find(self, c: int) -> int:
        """The component id c was merged into."""
        root = c
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[c] != root:
            self.parent[c], c = root, self.parent[c]
        return root

    def _later(self) -> None:
        """Ask for a solve at the end of this instant."""
        if not self.flush_armed:
            self.flush_armed = True
            self.clock.late(self._flush)

    # -- arrivals ----------------------------------------------------------------------------

    def inject(self, ids: list[int]) -> None:
        """Start flows `ids` now; the shared ones are solved at the end of this instant."""
        now = self.clock.now
        routes, nbytes, nflows, isolated_on, joined = self.net.route_tuples, self.net.nbytes, self.nflows, self.isolated_on, self.joined
        for m in ids:
            route = routes[m]
            size = nbytes.item(m)
            if not route or size == 0:
                self.net.deliver_after(self.net.route_latency[m], m)
                continue
            idle = not len(self.host_table)
            for k in route:
                if nflows[k]:
                    idle = False
                    break
            if idle:
                self._isolate(m, now)
            else:
                for k in route:
                    if k in isolated_on:
                        joined.append(self._promote(isolated_on[k], now))
                self.left[m] = size
                self.base_time[m] = now
                joined.append(m)
            for k in route:
                if nflows[k] == 0:
                    self.busy_from[k] = now
                    self.spent[k] = self.freed[k] = self.freed_t[k] = self.used[k] = self.peak[k] = 0.0
                    self.level[k] = np.inf
                nflows[k] += 1
        if joined:
            self._later()

    def _isolate(self, m: int, now: float) -> None:
        """Flow m is alone on its links: full rate, its own finish event, no solve."""
        rate = min(self.alone[k] for k in self.net.route_tuples[m])
        self.stamp += 1
        self.isolated[m] = (now, rate, self.stamp)
        for k in self.net.route_tuples[m]:
            self.isolated_on[k] = m
        self.clock.at(self.net.nbytes[m] / rate, self._isolated_done, m, self.stamp)

    def _promote(self, m: int, now: float) -> int:
        """An isolated flow gets company: move it, with the bytes it has left, into the shared set."""
        start, rate, _ = self.isolated.pop(m)
        for k in self.net.route_tuples[m]:
            del self.isolated_on[k]
        self.left[m] = max(self.net.nbytes[m] - rate * (now - start), 0.0)
        self.base_time[m] = now
        self.rate[m] = 0.0
        return m

    def _isolated_done(self, m: int, stamp: int) -> None:
        """An isolated flow finished (unless it was promoted meanwhile)."""
        if self.isolated.get(m, (0, 0, -1))[2] != stamp:
            return
        del self.isolated[m]
        for k in self.net.route_tuples[m]:
            del self.isolated_on[k]
            self.nflows[k] -= 1
        self.net.deliver_after(self.net.route_latency[m], m)

    def _join(self) -> None:
        """Put the flows that became shared this instant into components (merging the ones they touch)."""
        routes, comp_on, comp_of, alive = self.net.route_tuples, self.comp_on, self.comp_of, self.alive
        root, run = -1, None  # the previous flow's component (a root until the next merge) and its run of ids
        for m in self.joined:
            route = routes[m]
            known = False  # only links of `root` or of no component: join it without a look-up
            if root >= 0:
                for k in route:
                    c = comp_on[k]
                    if c == root:
                        known = True
                    elif c >= 0:
                        known = False
                        break
            if known:
                run.append(m)
            else:
                touched = sorted({self._find(comp_on[k]) for k in route if comp_on[k] >= 0})
                if touched:  # the most pieces, ties to the lowest id; the others merged into it in id order
                    root = max(touched, key=lambda c: self.comps[c].nparts)
                    for c in touched:
                        if c != root:
                            self._merge(c, root)
                else:
                    root = len(self.parent)
                    self.parent.append(root)
                    self.comps[root] = _Component()
                comp = self.comps[root]
                if comp.parts and isinstance(comp.parts[-1], list):
                    comp.parts[-1].append(m)
                else:
                    comp.parts.append([m])
                run = comp.parts[-1]
                self.due.add(root)
            comp.nparts += 1
            comp.alive += 1
            comp_of[m] = root
            alive[m] = True
            for k in route:
                comp_on[k] = root
        self.active += len(self.joined)
        self.joined = []

    def _merge(self, c: int, root: int) -> None:
        """Component c joins root."""
        self.parent[c] = root
        other = self.comps.pop(c)
        self.comps[root].parts += other.parts
        self.comps[root].nparts += other.nparts
        self.comps[root].segments += other.segments
        self.comps[root].alive += other.alive
        self.due.discard(c)
        self.stale.add(root)

    # -- solves ------------------------------------------------------------------------------

    def _flush(self) -> None:
        """End of an instant: place new shared flows, then solve every component that is due."""
        self.flush_armed = False
        self._join()
        if len(self.host_table) and self.active:
            self.due.update(self.comps)
        for c in sorted({self._find(c) for c in self.due}):
            if c in self.comps and not self._warm(c):
                self._solve(c)
        self.due.clear()
        self.stale.clear()
        self._arm()

    def _capacities(self) -> np.ndarray:
        """Link capacities now: bandwidth x eff(flows on it) on NIC links, x h(active flows) with a host
        efficiency (zensim.net.efficiency.capacities)."""
        if not len(self.nic_table) and not len(self.host_table):
            return self.capacity
        return capacities(self.capacity, self.nic, self.nic_table, np.asarray(self.nflows, dtype=np.int64),
                          self.host_table, self.active + len(self.isolated), np.empty(len(self.capacity)))

    def _warm(self, c: int) -> bool:
        """Rates for the flows that joined component c this instant, the others keeping theirs, where that
        is still max-min (waterfill.warm_flows: the new flows use only links that limited none of the
        others, and each saturates one on which no flow is faster); a departure segment of their own.
        Not with efficiency tables (a flow count changes capacities), nor in the exact mode or a component
        of at most `exact_flows` flows, nor where freed capacity or a merge made c due. False: solve c."""
        comp = self.comps[c]
        new = comp.parts[-1]
        if (self.batch == 0 or comp.alive <= self.exact_flows or len(self.nic_table) or len(self.host_table)
                or c in self.stale or not isinstance(new, list) or comp.alive == len(new)):
            return False
        flows = np.asarray(new, dtype=np.int64)
        finish = warm_flows(flows, self.left, self.base_time, self.rate, self.net.routes, self.capacity,
                            self.clock.now, self.batch, self.state)
        if finish is None:
            return False
        comp.parts[-1], comp.nparts = flows, 1
        self.warm += 1
        self._segment(comp, finish, flows)
        return True

    def _solve(self, c: int) -> None:
        """Max-min rates of component c's flows from now on; a new departure segment for them."""
        comp = self.comps[c]
        flows = np.concatenate([np.asarray(part, dtype=np.int64) for part in comp.parts])
        # only departures since its last solve (one segment: no _warm, no merge; a joined flow has no rate
        # yet), capacities that do not follow the flow counts: a partial re-solve
        partial = len(comp.segments) == 1 and not len(self.nic_table) and not len(self.host_table)
        for s in comp.segments:
            self.segments.pop(s, None)
        comp.segments = []
        now = self.clock.now
        capacity = self._capacities()
        flows, finish = solve_flows(flows, self.alive, self.left, self.base_time, self.rate, self.net.sent_at, self.net.routes, capacity,
                                    now, self.batch, self.state, partial)
        # the compiled model re-solves a link of such a component alone where it runs out (fastmaxmin._patch),
        # which this oracle does not read: its logs keep their components at most local_flows
        assert not (self.batch > 0 and len(flows) > self.local_flows and capacity is self.capacity), \
            f"maxmin-oracle: a component of {len(flows)} flows, over local_flows {self.local_flows}"
        comp.parts, comp.nparts = [flows], 1
        comp.check = np.inf
        comp.epoch += 1
        self.solves += 1
        self._segment(comp, finish, flows)

    def _segment(self, comp: _Component, finish: np.ndarray, flows: np.ndarray) -> None:
        """A departure segment of `flows` (finishing at `finish`) added to comp's."""
        sid = self.next_segment
        self.next_segment += 1
        segment = self.segments[sid] = _Segment(finish, flows)
        self.segment_of[flows] = sid
        comp.segments.append(sid)
        heapq.heappush(self.heads, (segment.next_finish(), sid))

    # -- departures --------------------------------------------------------------------------

    def _arm(self) -> None:
        """One clock event at the earliest finish among the segments (older events become stale)."""
        while self.heads and self.heads[0][1] not in self.segments:
            heapq.heappop(self.heads)
        if not self.heads:
            return
        due = self.heads[0][0]
        if due != self.armed_at:
            self.armed_at = due
            self.version += 1
            self.clock.at(max(due - self.clock.now, 0.0), self._depart, self.version)

    def _depart(self, version: int) -> None:
        """Retire the shared flows that finish now; mark their components due where freed capacity exceeds
        the allowance; deliver them."""
        if version != self.version:
            return
        self.armed_at = np.inf
        now = self.clock.now
        horizon = now * (1 + TIE)
        routes, heads, segments, segment_of, alive = self.net.route_tuples, self.heads, self.segments, self.segment_of, self.alive
        gone: list[int] = []
        deferred: dict[int, float] = {}
        while heads and heads[0][0] <= horizon:
            _, sid = heapq.heappop(heads)
            segment = segments.get(sid)
            if segment is None:
                continue
            gone += [m for m in segment.take(horizon) if segment_of.item(m) == sid and alive.item(m)]
            following = segment.next_finish()
            if following is None:
                del segments[sid]
            else:
                heapq.heappush(heads, (following, sid))
        rates = [self.rate.item(m) for m in gone]
        for m in gone:
            alive[m] = False
        self.active -= len(gone)
        nflows, comp_on, freed_on, freed_t_on = self.nflows, self.comp_on, self.freed, self.freed_t
        spent, last, room, used = self.spent, self.last, self.room, self.used
        for m, rate in zip(gone, rates):
            c = self._find(self.comp_of[m])
            comp = self.comps[c]
            comp.alive -= 1
            if not comp.alive:  # its last flow: nothing left to re-solve
                del self.comps[c]
                self.due.discard(c)
            exact = self.batch == 0 or comp.alive <= self.exact_flows
            for k in routes[m]:
                nflows[k] -= 1
                if nflows[k] == 0:
                    comp_on[k] = -1
                    continue
                freed_on[k] = freed = freed_on.item(k) + rate
                freed_t_on[k] = freed_t = freed_t_on.item(k) + rate * now
                lost, allowance = spent.item(k), share_of_room(room.item(k), used.item(k), freed)
                if exact and allowance < np.inf:  # a saturated link: its freed capacity is taken up at once
                    allowance = 0.0
                if lost + freed * last.item(k) - freed_t > allowance and comp.alive:
                    # the idle capacity's lost service reaches DEFER of what is left of the allowance at `when`
                    when = ((allowance - lost) * DEFER + freed_t) / freed
                    if exact or when <= now:
                        self.due.add(c)
                        self.stale.add(c)
                    else:
                        deferred[c] = min(deferred.get(c, np.inf), when)
        for c, when in deferred.items():
            comp = self.comps.get(c)
            if comp is not None and c not in self.due and when < comp.check:
                comp.check = when
                self.clock.at(when - now, self._check, c, comp.epoch)
        if len(self.host_table) and gone and self.active:
            self.due.update(self.comps)
        if self.due:
            self._later()
        else:
            self._arm()
        for m in gone:
            self.net.deliver_after(self.net.route_latency[m], m)

    def _check(self, c: int, epoch: int) -> None:
        """A deferred departure's idle capacity has used up its link's allowance: re-solve component c,
        unless it was solved (or merged into another, which was solved) since."""
        comp = self.comps.get(c)
        if comp is not None and comp.epoch == epoch:
            self.due.add(c)
            self.stale.add(c)
            self._later()
