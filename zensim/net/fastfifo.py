"""One message log alone on a `fifo` network, as one compiled event loop (numba).

The same semantics, step for step, as `LogReplay` on `Network` with the `Fifo` model over `Clock`
(zensim/net/replay.py, models/fifo.py, clock.py): the same events scheduled in the same order (so
ties at one instant break the same way), the same floating-point operations in the same order, so
every time comes out bit-identical (tests/test_net_fastfifo.py asserts it against the general path).
It covers what `replay()` runs on its own: one log, every rank starting at 0, fifo without NIC or
host efficiency tables and without shared host processors (`Costs.host_cores`); anything else takes
the general path. Per event: a heap push and pop of plain numbers, about 50x cheaper than a Python
callback. The heap and the ranks' stage program are zensim.net.fastloop's.

Events: a rank's local work ending (then it injects its stage's sends, or ends the stage), a
message's head reaching its next link, a message's delivery. Each message has at most one event
pending and each rank at most one, so the heap is sized once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numba
import numpy as np

from zensim.net import fastloop
from zensim.net.fastloop import FINISH, MODEL, RUNNING, SENT, advance, arrived, pop, push

if TYPE_CHECKING:
    from zensim.net.network import Network

_HOP, _DELIVER = MODEL, MODEL + 1


def applies(net: Network) -> bool:
    """Whether the compiled loop gives the general path's times on this network: the fifo model, no
    efficiency tables, no shared host processors, no rendezvous, no exchange CPU, nothing sent or
    scheduled yet."""
    return fastloop.alone(net, "fifo")


def run(net: Network, schedule: dict[str, np.ndarray], first: int, n: int, stages: int) -> tuple[np.ndarray, int]:
    """Start every rank of a log now and run the network until nothing is left (compiled). The log's
    messages are the network's ids first.. in log order; `schedule`: LogReplay.arrays. Fills the
    network's sent_at, delivered_at and clock; returns per (rank, stage) slot the stage start,
    transfer start, transfer end and stage end times (4, n x stages), and the ranks still running."""
    plan = fastloop.schedule(net, schedule, first)
    st = np.zeros(4, np.int64)
    out = np.zeros((4, n * stages))
    sent_at, delivered_at = np.full(net.count, np.nan), np.full(net.count, np.nan)
    floats = [np.ascontiguousarray(x, dtype=np.float64) for x in (net.nbytes[:net.count], net.capacity, net.latency)]
    now = _loop(fastloop.compact_routes(net), *floats, net.num_links, *plan, n, stages, st, out, sent_at,
                delivered_at)
    fastloop.finish(net, now, st, sent_at, delivered_at)
    return out, int(st[RUNNING])


@numba.njit(cache=True)
def _hop(m, i, prev_end, now, routes, nbytes, capacity, latency, pad, free, heap, st):  # pragma: no cover
    """Fifo._hop without efficiencies: the head of m reaches hop i now (and the hops after it at once
    while their heads arrive at this instant)."""
    width = routes.shape[1]
    while True:
        k = routes[m, i]
        start = free[k] if free[k] >= now else now  # max(free[k], now)
        end = start + nbytes[m] / capacity[k]
        if prev_end > end:
            end = prev_end
        free[k] = end
        head, end = start + latency[k], end + latency[k]
        if i + 1 == width or routes[m, i + 1] == pad:
            push(heap, st, now + (end - now), _DELIVER, m, 0, 0.0)
            return
        if head != now:
            push(heap, st, now + (head - now), _HOP, m, i + 1, end)
            return
        i += 1
        prev_end = end


@numba.njit(cache=True)
def _rank(r, s, step, now, net, order, rank, free, heap, st, out, sent_at):  # pragma: no cover (compiled)
    """Advance rank r from `step`, injecting its sends (Network.start, Fifo.inject) where it sends."""
    routes, nbytes, capacity, latency, pad = net
    bounds, stages = rank[0], rank[5]
    slot = advance(r, s, step, now, rank, heap, st, out)
    while slot >= 0:
        for j in range(bounds[slot], bounds[slot + 1]):
            sent_at[order[j]] = now
        for j in range(bounds[slot], bounds[slot + 1]):
            m = order[j]
            if routes[m, 0] == pad:
                push(heap, st, now + 0.0, _DELIVER, m, 0, 0.0)
            else:
                _hop(m, 0, now, now, routes, nbytes, capacity, latency, pad, free, heap, st)
        slot = advance(slot // stages, slot % stages, SENT, now, rank, heap, st, out)


@numba.njit(cache=True)
def _loop(routes, nbytes, capacity, latency, pad, order, bounds, pending, stage_of, src_of, dst_of, pre, post,
          n, stages, st, out, sent_at, delivered_at):  # pragma: no cover (compiled)
    """LogReplay.start() then Clock.run(): every rank begins stage 0 at time 0, events in (time,
    order of scheduling) order. Returns the time of the last event."""
    size = len(nbytes) + n + 1
    heap = np.empty((size, fastloop.ROW))
    free = np.zeros(len(capacity))
    sent = np.zeros(n * stages, np.bool_)
    net = (routes, nbytes, capacity, latency, pad)
    rank = (bounds, pending, sent, pre, post, stages)
    now = 0.0
    st[RUNNING] = n if stages else 0
    if stages:
        for r in range(n):
            _rank(r, 0, fastloop.BEGIN, now, net, order, rank, free, heap, st, out, sent_at)
    while st[fastloop.SIZE] > 0:
        now, kind, a, b, c = pop(heap, st)
        if kind == _HOP:
            _hop(a, b, c, now, routes, nbytes, capacity, latency, pad, free, heap, st)
        elif kind == _DELIVER:  # Network._delivered, LogReplay._delivered
            delivered_at[a] = now
            s = stage_of[a]
            for r in (src_of[a], dst_of[a]):
                if arrived(r, s, rank):
                    _rank(r, s, FINISH, now, net, order, rank, free, heap, st, out, sent_at)
        else:
            _rank(a, b, kind, now, net, order, rank, free, heap, st, out, sent_at)
    return now
