"""The network API: messages between GPUs and local work on hosts, over one simulated clock.

In the spirit of ASTRA-sim's four calls (send, schedule, get time, and the run loop), a `Network`
offers clients:

    net = Network(costs, model="maxmin")          # costs: zensim.net.costs.Costs (links, efficiencies, cores)
    net.send(src_gpu, dst_gpu, nbytes, on_delivery)    # on_delivery(message id) when the last byte arrived
    net.compute(host, seconds, then, *args)       # local work on a host's processors, then then(*args)
    net.schedule(delay, then, *args)              # a timer
    net.now                                       # simulated seconds
    net.run()                                     # until nothing is left to do

Sends issued at the same instant share the network from that instant on; the sharing model sees
them together (maxmin solves once per instant, not once per send). Clients that know many messages
in advance declare them in bulk (`add_messages`, routes computed vectorized) and `start` them
later, one group per sender and instant. Several clients share one Network: their messages share
the links, their local work shares the hosts' processors (with `Costs.host_cores`).

Per message the network keeps its route, bytes, injection and delivery time (`sent_at`,
`delivered_at`, indexed by message id). The sharing model is looked up by name in
zensim.net.models.MODELS and implements zensim.net.models.base.SharingModel.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from zensim.net.clock import Clock, EventLoop
from zensim.net.cores import SharedCores
from zensim.net.costs import Costs
from zensim.net.models import make_model
from zensim.net.links import LinkKind

Delivery = Callable[[int], None]


class Network:
    """A topology, a sharing model and a local-work model over one clock (see the module docstring):
    a `Clock` of its own, or `clock` (a SimPy environment's: zensim.net.simpy_adapter)."""

    def __init__(self, costs: Costs, model: str = "fifo", options: Mapping[str, object] | None = None,
                 clock: EventLoop | None = None) -> None:
        self.costs = costs
        self.topology = topo = costs.topology
        self.clock: EventLoop = Clock() if clock is None else clock
        self.num_links = topo.num_links
        self.capacity = topo.capacity
        self.latency = topo.latency
        self.nic_links = topo.links_of_kind(LinkKind.NIC)
        eff = costs.nic_efficiency
        self.nic_efficiency: list[float] | None = eff.table(eff.points[-1][0]) if eff is not None else None
        host = costs.host_efficiency
        self.host_efficiency: list[float] | None = host.table(host.points[-1][0]) if host is not None else None
        self.count = 0
        if topo.num_links >= 2**31:
            raise ValueError(f"network: {topo.num_links} links reach 2**31 (int32 link ids)")
        self.routes = np.empty((0, topo.route_width), dtype=np.int32)  # link ids: int32, the compiled loops' dtype
        self.nbytes = np.empty(0)
        self._route_latency = np.empty(0)  # of the first _latency_rows messages (route_latency)
        self._latency_rows = 0
        self.sent_at = np.empty(0)
        self.delivered_at = np.empty(0)
        self._tuples: list[tuple[int, ...]] = []  # route_tuples of the first len(_tuples) messages
        self._first_of_block: list[int] = []  # messages declared together (one callback): the first's id
        self._on_delivery: list[Delivery | None] = []  # per block its callback
        self._model_room = 0  # message ids the sharing model has room for (it grows when they are started)
        self._pools: dict[int, SharedCores] = {}
        self.model = make_model(model, self, options or {})

    @property
    def now(self) -> float:
        """Simulated time in seconds."""
        return self.clock.now

    @property
    def events(self) -> int:
        """Callbacks scheduled so far (timers, deliveries, model events, local work)."""
        return self.clock.events

    @property
    def route_tuples(self) -> list[tuple[int, ...]]:
        """Per message its route as a tuple of link ids (no padding); made when first asked for (a
        compiled replay never needs them), rows of one length at a time."""
        have = len(self._tuples)
        if have < self.count:
            routes = self.routes[have:self.count]
            used = routes != self.num_links
            hops = used.sum(axis=1)
            compact = np.take_along_axis(routes, np.argsort(~used, axis=1, kind="stable"), axis=1)  # pads last
            new: list[tuple[int, ...]] = [()] * len(routes)
            for length in np.unique(hops).tolist():
                rows = np.flatnonzero(hops == length)
                for i, route in zip(rows.tolist(), map(tuple, compact[rows, :length].tolist())):
                    new[i] = route
            self._tuples += new
        return self._tuples

    @property
    def route_latency(self) -> np.ndarray:
        """Per message the latency of its route (seconds: the sum of its links'); worked out when first
        asked for (a compiled fifo replay never needs it), for the messages declared since."""
        have, count = self._latency_rows, self.count
        if have < count:
            if len(self._route_latency) < count:
                self._route_latency = _grown(self._route_latency[:have], len(self.nbytes))
            self._route_latency[have:count] = np.append(self.latency, 0.0)[self.routes[have:count]].sum(axis=1)
            self._latency_rows = count
        return self._route_latency

    def add_messages(self, src: Sequence[int] | np.ndarray, dst: Sequence[int] | np.ndarray,
                     nbytes: Sequence[int] | np.ndarray, on_delivery: Delivery | None = None) -> np.ndarray:
        """Declare messages (GPU ids, bytes) without sending them; their ids, to `start` later."""
        src, dst = np.asarray(src, dtype=np.int64).ravel(), np.asarray(dst, dtype=np.int64).ravel()
        size = np.asarray(nbytes, dtype=np.float64).ravel()
        if not src.size == dst.size == size.size:
            raise ValueError("src, dst and nbytes must have the same length")
        if size.size and not (size.min() >= 0 and np.isfinite(size).all()):
            raise ValueError("message sizes must be finite and >= 0 bytes")
        routes = self.topology.route_matrix(src, dst)
        first, k = self.count, len(size)
        if first + k >= 2**31:
            raise ValueError(f"network: {first + k} messages reach 2**31 (int32 message ids)")
        self._reserve(first + k)
        self.routes[first: first + k] = routes
        self.nbytes[first: first + k] = size
        if k and (not self._on_delivery or self._on_delivery[-1] != on_delivery):
            self._first_of_block.append(first)
            self._on_delivery.append(on_delivery)
        self.count = first + k
        return np.arange(first, first + k)

    def start(self, ids: Sequence[int] | np.ndarray) -> None:
        """Inject declared messages now, in this order: one group, as one sender issues them at once."""
        ids = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        if ids:
            if self._model_room < self.count:  # a compiled replay never starts any: the model stays empty
                self._model_room = len(self.nbytes)
                self.model.reserve(self._model_room)
            self.sent_at[ids] = self.clock.now
            self.model.inject(ids)

    def send(self, src: int, dst: int, nbytes: float, on_delivery: Delivery | None = None) -> int:
        """Send `nbytes` from GPU `src` to GPU `dst` now; on_delivery(id) when it has arrived. Its id."""
        m = int(self.add_messages([src], [dst], [nbytes], on_delivery)[0])
        self.start([m])
        return m

    def schedule(self, delay: float, then: Callable, *args) -> None:
        """Call then(*args) after `delay` simulated seconds (a timer)."""
        if not delay >= 0:
            raise ValueError(f"delay must be >= 0 seconds, got {delay!r}")
        self.clock.at(delay, then, *args)

    def compute(self, host: int, seconds: float, then: Callable, *args) -> None:
        """`seconds` of one processor's local work on `host`, then then(*args). With Costs.host_cores the
        work of a host shares that many processors; otherwise every piece of work has its own."""
        if self.costs.host_cores is None:
            self.clock.at(seconds, then, *args)
            return
        pool = self._pools.get(host)
        if pool is None:
            pool = self._pools[host] = SharedCores(self.clock, self.costs.host_cores, self.costs.host_others)
        pool.run(seconds, then, *args)

    def run(self, until: float | None = None) -> None:
        """Advance the clock until nothing is left to do (or up to `until` seconds)."""
        self.clock.run(until)

    def deliver_after(self, delay: float, m: int) -> None:
        """For sharing models: message m's last byte left its last link; it arrives `delay` later."""
        self.clock.at(delay, self._delivered, m)

    def _delivered(self, m: int) -> None:
        self.delivered_at[m] = self.clock.now
        callback = self._on_delivery[bisect_right(self._first_of_block, m) - 1]
        if callback is not None:
            callback(m)

    def _reserve(self, size: int) -> None:
        """Grow the per-message arrays to hold `size` messages (the model's grow in `start`)."""
        have = len(self.nbytes)
        if size <= have:
            return
        new = max(size, 2 * have, 1024)
        self.routes, self.nbytes = _grown(self.routes, new), _grown(self.nbytes, new)
        self.sent_at, self.delivered_at = _grown(self.sent_at, new, np.nan), _grown(self.delivered_at, new, np.nan)


def _grown(a: np.ndarray, size: int, fill: float = 0) -> np.ndarray:
    """`a` in a new array of `size` rows (the rows after `a`'s filled with `fill`)."""
    out = np.full((size,) + a.shape[1:], fill, dtype=a.dtype)
    out[:len(a)] = a
    return out
