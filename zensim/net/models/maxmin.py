"""The `maxmin` sharing model: flows share links max-min fairly (the fluid model of TCP), incrementally.

Rates are piecewise constant between events; each active flow keeps its bytes left at the time of its
last rate change and its projected finish time, so an event costs O(1) numpy calls, not a pass over
every flow's bytes. Flows that start at one instant (every rank's sends of that instant) are solved
together once, at the end of the instant; only the *affected component* is re-solved: the flows reachable from the changed links through shared links;
other components keep their rates. A flow alone on all its links (rings, recursive doubling) is
*isolated*: it runs at its route's bottleneck speed with its own finish event, in plain Python; when
another flow arrives on one of its links it is promoted, with the bytes it has left, into the shared
set. The solve is progressive filling (bottleneck algorithm): repeatedly
the link with the least fair share `residual / unfrozen flows` fixes the rate of its flows.

Departures are batched: after a re-solve, up to `batch x active flows` departures (at least 1) retire
at their exact times under the current rates before the component of the freed links is re-solved;
meanwhile the freed capacity stays idle until that re-solve.
`batch=0` re-solves at every departure (exact max-min); every arrival re-solves too.

With a NIC efficiency eff(k), a NIC link carrying k active flows (isolated or shared) has capacity
bandwidth x eff(k) in the solve; an isolated flow runs at eff(1). The count is the one of the last
solve of the link's component (departures batched as above).

With a host efficiency h(f) (an emulator's property: all NICs run on one host), the capacity of
every NIC link is further scaled by h(f), f = the flows active anywhere in
the network. Any change of f changes every such capacity, so the model then keeps no flow isolated
and every solve covers all active flows (fine at emulator sizes).
"""

from __future__ import annotations

import numpy as np

from zensim.errors import ConfigError
from zensim.net.models.base import NetworkView

_TIE = 1e-12  # relative tolerance: links whose shares tie, flows finishing "now"
_SMALL = 48  # components up to this many flows are found and solved in plain Python


def waterfill(routes: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates of flows with `routes` (rows of link ids, padded with the last, infinite link)."""
    links = len(capacity)
    dummy = links - 1
    flat = routes.ravel()
    by_link = np.argsort(flat, kind="stable")
    starts = np.searchsorted(flat[by_link], np.arange(links + 1)).tolist()
    flow_of = by_link // routes.shape[1]
    count = np.diff(starts).astype(np.float64)
    count[dummy] = 0
    residual = capacity.astype(np.float64).copy()
    rates = np.full(len(routes), np.nan)
    left = len(routes)
    share = np.empty(links)
    while left:
        share.fill(np.inf)
        np.divide(residual, count, out=share, where=count > 0)
        level = share.min()
        saturated = np.flatnonzero(share <= level * (1 + _TIE)).tolist()
        cand = np.concatenate([flow_of[starts[k]: starts[k + 1]] for k in saturated])
        cand = cand[np.isnan(rates[cand])]
        rates[cand] = level
        if len(saturated) > 1:  # a flow on two saturated links appears twice
            mark = np.zeros(len(routes), dtype=bool)
            mark[cand] = True
            cand = np.flatnonzero(mark)
        fixed = cand
        left -= len(fixed)
        used = np.bincount(routes[fixed].ravel(), minlength=links)
        count -= used
        count[dummy] = 0
        np.maximum(residual - used * level, 0.0, out=residual)
    return rates


class MaxMin:
    """Flow-level max-min fair sharing: isolated flows in plain Python, shared ones solved per component."""

    name = "maxmin"
    summary = "flow-level max-min fair sharing (fluid TCP), solved per affected component"
    options: dict[str, object] = {"batch": 1 / 64}

    def __init__(self, net: NetworkView, batch: float = 1 / 64) -> None:
        if not isinstance(batch, (int, float)) or isinstance(batch, bool) or not 0 <= batch <= 1:
            raise ConfigError(f"--maxmin-batch {batch}: must be in [0, 1]")
        self.net = net
        self.clock = net.clock
        self.dummy = net.num_links
        self.capacity = np.append(net.capacity, np.inf)
        self.efficiency = list(net.link_efficiency) + [None] if net.link_efficiency is not None else None
        eff1 = [1.0 if e is None else e[1] for e in self.efficiency] if self.efficiency else [1.0] * (self.dummy + 1)
        self.alone = (self.capacity * eff1).tolist()  # a link's capacity for a flow alone on it
        self.base_left = np.zeros(0)  # bytes left at base_time
        self.base_time = np.zeros(0)
        self.rate = np.zeros(0)
        self.finish = np.zeros(0)  # projected finish time of each shared flow
        self.batch = batch
        self.capacity_list = self.capacity.tolist()
        self.active = np.empty(0, dtype=np.int64)  # shared flows
        self.nflows = [0] * (self.dummy + 1)  # active flows per link, isolated or shared
        self.shared_on: dict[int, set[int]] = {}  # link -> shared flows crossing it
        self.isolated: dict[int, tuple[float, float, int]] = {}  # flow -> (start, rate, stamp)
        self.isolated_on: dict[int, int] = {}  # link -> its isolated flow
        self.stamp = 0
        self.dirty: set[int] = set()
        self.seeds: set[int] = set()  # links of the flows that joined the shared set this instant
        self.flush_armed = False  # a solve is due at the end of this instant
        self.since_solve, self.allowance = 0, 1
        self.version = 0
        self.solves = 0
        self.host_efficiency = net.host_efficiency
        self.scaled_links = frozenset(net.nic_links.tolist())
        self.host_factor = 1.0

    def reserve(self, size: int) -> None:
        """Grow the per-flow arrays to `size` flows."""
        have = len(self.rate)
        for name, fill in (("base_left", 0.0), ("base_time", 0.0), ("rate", 0.0), ("finish", np.inf)):
            old = getattr(self, name)
            new = np.full(size, fill)
            new[:have] = old
            setattr(self, name, new)

    def inject(self, ids: list[int]) -> None:
        """Start flows `ids` now; the shared set is re-solved once at the end of this instant."""
        now = self.clock.now
        routes, nbytes = self.net.route_tuples, self.net.nbytes
        shared: list[int] = []
        for m in ids:
            route = routes[m]
            if not route or nbytes[m] == 0:
                self.net.deliver_after(self.net.route_latency[m], m)
                continue
            if self.host_efficiency is None and all(self.nflows[k] == 0 for k in route):
                self._isolate(m, now)
            else:
                for k in route:
                    if k in self.isolated_on:
                        shared.append(self._promote(self.isolated_on[k], now))
                shared.append(m)
                self.base_left[m] = nbytes[m]
                self.base_time[m] = now
                self.seeds.update(route)
            for k in route:
                self.nflows[k] += 1
        if shared:
            for m in shared:
                for k in routes[m]:
                    self.shared_on.setdefault(k, set()).add(m)
            self.active = np.concatenate([self.active, shared])
            if not self.flush_armed:
                self.flush_armed = True
                self.clock.late(self._flush)

    def _flush(self) -> None:
        """End of an instant in which flows joined the shared set: one solve for all of them."""
        self.flush_armed = False
        self._solve(self.seeds | self.dirty)
        self.seeds = set()
        self._schedule()

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
        self.base_left[m] = max(self.net.nbytes[m] - rate * (now - start), 0.0)
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

    def _solve(self, seeds: set[int]) -> None:
        """Re-solve the shared component of links `seeds`, reset the departure batch."""
        if self.host_efficiency is not None:
            self.host_factor = self.host_efficiency[min(len(self.active), len(self.host_efficiency) - 1)]
            seeds = {k for k in range(self.dummy) if self.nflows[k] > 0}
        seeds.discard(self.dummy)
        small = self._small_component(seeds)
        if small is not None:
            flows = np.array(sorted(small), dtype=np.int64)
            rates = None
        else:
            routes = self.net.routes[self.active]
            marked = np.zeros(self.dummy + 1, dtype=bool)
            marked[list(seeds)] = True
            marked[self.dummy] = False
            inside = np.zeros(len(self.active), dtype=bool)
            while True:
                new = marked[routes].any(axis=1) & ~inside
                if not new.any():
                    break
                inside |= new
                marked[routes[new].ravel()] = True
                marked[self.dummy] = False
            flows = self.active[inside]
            rates = waterfill(routes[inside], self._capacities())
        if flows.size:
            now = self.clock.now
            left = self.base_left[flows] - self.rate[flows] * (now - self.base_time[flows])
            self.base_left[flows] = np.maximum(left, 0.0)
            self.base_time[flows] = now
            self.rate[flows] = self._waterfill_small(small) if rates is None else rates
            self.finish[flows] = now + self.base_left[flows] / self.rate[flows]
            self.solves += 1
        self.dirty.clear()
        self.since_solve = 0
        self.allowance = max(1, int(self.batch * len(self.active)))

    def _small_component(self, seeds: set[int]) -> set[int] | None:
        """Shared flows connected to `seeds`, by a Python search; None once it exceeds _SMALL flows."""
        flows: set[int] = set()
        links, frontier = set(seeds), list(seeds)
        while frontier:
            for m in self.shared_on.get(frontier.pop(), ()):
                if m not in flows:
                    flows.add(m)
                    if len(flows) > _SMALL:
                        return None
                    for k in self.net.route_tuples[m]:
                        if k not in links:
                            links.add(k)
                            frontier.append(k)
        return flows

    def _waterfill_small(self, flows: set[int]) -> list[float]:
        """Progressive filling in plain Python for a small component; rates in sorted flow order."""
        count: dict[int, int] = {}
        for m in flows:
            for k in self.net.route_tuples[m]:
                count[k] = count.get(k, 0) + 1
        residual = {k: self._capacity(k) for k in count}
        rate: dict[int, float] = {}
        while count:
            level = min(residual[k] / c for k, c in count.items())
            for k in [k for k, c in count.items() if residual[k] / c <= level * (1 + _TIE)]:
                for m in self.shared_on[k]:
                    if m not in rate:
                        rate[m] = level
                        for j in self.net.route_tuples[m]:
                            count[j] -= 1
                            residual[j] = max(residual[j] - level, 0.0)
            count = {k: c for k, c in count.items() if c > 0}
        return [rate[m] for m in sorted(flows)]

    def _capacity(self, k: int) -> float:
        """Capacity of link k now: bandwidth x eff(its flows) on an efficiency-scaled link, x h(active
        flows) on a scaled link under a host efficiency."""
        eff = self.efficiency[k] if self.efficiency else None
        cap = self.capacity_list[k] if eff is None else self.capacity_list[k] * eff[min(self.nflows[k], len(eff) - 1)]
        return cap * self.host_factor if self.host_efficiency is not None and k in self.scaled_links else cap

    def _capacities(self) -> np.ndarray:
        """Capacities of all links now (see _capacity)."""
        if not self.efficiency and self.host_efficiency is None:
            return self.capacity
        return np.array([self._capacity(k) for k in range(self.dummy + 1)])

    def _schedule(self) -> None:
        """Arm one event at the next shared departure; older armed events become stale."""
        self.version += 1
        if not self.active.size:
            return
        due = float(self.finish[self.active].min())
        if due == np.inf:
            return
        self.clock.at(max(due - self.clock.now, 0.0), self._depart, self.version)

    def _depart(self, version: int) -> None:
        """Retire the shared flows that finish now; re-solve when the batch allowance is used up."""
        if version != self.version:
            return
        now = self.clock.now
        done = self.finish[self.active] <= now * (1 + _TIE)
        finished = self.active[done].tolist()
        self.active = self.active[~done]
        for m in finished:
            for k in self.net.route_tuples[m]:
                self.shared_on[k].discard(m)
                self.nflows[k] -= 1
                if self.nflows[k] > 0:
                    self.dirty.add(k)
                else:
                    self.dirty.discard(k)
        self.since_solve += len(finished)
        if self.host_efficiency is not None:
            if finished and self.active.size:  # fewer flows: every scaled capacity changed
                self._solve(set())
        elif self.dirty and self.since_solve >= self.allowance:
            self._solve(set(self.dirty))
        for m in finished:
            self.net.deliver_after(self.net.route_latency[m], m)
        self._schedule()
