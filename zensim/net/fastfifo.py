"""One message log alone on a `fifo` network, as one compiled event loop (numba).

The same semantics, step for step, as `LogReplay` on `Network` with the `Fifo` model over `Clock`
(zensim/net/replay.py, models/fifo.py, clock.py): the same events scheduled in the same order (so
ties at one instant break the same way), the same floating-point operations in the same order, so
every time comes out bit-identical (tests/test_net_fastfifo.py asserts it against the general path).
It covers what `replay()` runs on its own: one log, every rank starting at 0, fifo without NIC or
host efficiency tables and without shared host processors (`Costs.host_cores`); anything else takes
the general path. Per event: a heap push and pop of plain numbers, about 50x cheaper than a Python
callback.

Events: a rank's local work ending (then it injects its stage's sends, or ends the stage), a
message's head reaching its next link, a message's delivery. Each message has at most one event
pending and each rank at most one, so the heap is sized once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numba
import numpy as np

if TYPE_CHECKING:
    from zensim.net.network import Network

_SEND, _END, _HOP, _DELIVER = 0, 1, 2, 3
# st: the loop's integer state
_SIZE, _SEQ, _EVENTS, _RUNNING = 0, 1, 2, 3


def applies(net: Network) -> bool:
    """Whether the compiled loop gives the general path's times on this network: the fifo model, no
    efficiency tables, no shared host processors, no rendezvous, nothing sent or scheduled yet."""
    return (net.model.name == "fifo" and net.link_efficiency is None and net.host_efficiency is None
            and net.costs.host_cores is None and not net.costs.rendezvous and net.clock.events == 0)


def run(net: Network, schedule: dict[str, np.ndarray], first: int, n: int, stages: int) -> tuple[np.ndarray, int]:
    """Start every rank of a log now and run the network until nothing is left (compiled). The log's
    messages are the network's ids first.. in log order; `schedule`: LogReplay.arrays. Fills the
    network's sent_at, delivered_at and clock; returns per (rank, stage) slot the stage start,
    transfer start, transfer end and stage end times (4, n x stages), and the ranks still running."""
    count = len(schedule["stage"])
    if first or count != net.count:
        raise ValueError("the compiled fifo replay runs one log alone on its network")
    pad = net.num_links
    routes = net.routes[first:first + count]
    routes = np.take_along_axis(routes, np.argsort(routes == pad, axis=1, kind="stable"), axis=1)  # pads last
    st = np.zeros(4, np.int64)
    out = np.zeros((4, n * stages))
    sent_at, delivered_at = np.full(count, np.nan), np.full(count, np.nan)
    ints = [np.ascontiguousarray(schedule[key], dtype=np.int64)
            for key in ("order", "bounds", "pending", "stage", "src", "dst")]
    ints[2] = ints[2].copy()  # pending: counted down
    floats = [np.ascontiguousarray(x, dtype=np.float64) for x in (net.nbytes[first:first + count], net.capacity,
                                                                  net.latency, schedule["pre"], schedule["post"])]
    now = _loop(np.ascontiguousarray(routes, dtype=np.int64), *floats[:3], pad, *ints, *floats[3:], n, stages, st, out,
                sent_at, delivered_at)
    net.sent_at[first:first + count] = sent_at
    net.delivered_at[first:first + count] = delivered_at
    net.clock.now = now
    net.clock.events = int(st[_EVENTS])
    return out, int(st[_RUNNING])


@numba.njit(cache=True)
def _push(heap, st, time, kind, a, b, c):  # pragma: no cover (compiled)
    """Schedule an event at `time` (after those already scheduled for that time): Clock.at. A heap
    row: time, order of scheduling, kind, two integer arguments, a float argument."""
    seq = st[_SEQ]
    st[_SEQ] = seq + 1
    st[_EVENTS] += 1
    i = st[_SIZE]
    st[_SIZE] = i + 1
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent, 0] < time or (heap[parent, 0] == time and heap[parent, 1] < seq):
            break
        heap[i] = heap[parent]
        i = parent
    row = heap[i]
    row[0], row[1], row[2], row[3], row[4], row[5] = time, seq, kind, a, b, c


@numba.njit(cache=True)
def _pop(heap, st):  # pragma: no cover (compiled)
    """Remove the earliest event (ties: the first scheduled) and return it."""
    top = heap[0]
    event = (top[0], int(top[2]), int(top[3]), int(top[4]), top[5])
    size = st[_SIZE] - 1
    st[_SIZE] = size
    if size > 0:
        time, seq = heap[size, 0], heap[size, 1]
        i = 0
        while True:
            child = 2 * i + 1
            if child >= size:
                break
            right = child + 1
            if right < size and (heap[right, 0] < heap[child, 0]
                                 or (heap[right, 0] == heap[child, 0] and heap[right, 1] < heap[child, 1])):
                child = right
            if time < heap[child, 0] or (time == heap[child, 0] and seq < heap[child, 1]):
                break
            heap[i] = heap[child]
            i = child
        heap[i] = heap[size]
    return event


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
            _push(heap, st, now + (end - now), _DELIVER, m, 0, 0.0)
            return
        if head != now:
            _push(heap, st, now + (head - now), _HOP, m, i + 1, end)
            return
        i += 1
        prev_end = end


@numba.njit(cache=True)
def _work(heap, st, out, column, slot, now, seconds, then, r, s):  # pragma: no cover (compiled)
    """Stamp out[column, slot] now; with local work to do, schedule `then` after it (True)."""
    out[column, slot] = now
    if seconds > 0:
        _push(heap, st, now + seconds, then, r, s, 0.0)
        return True
    return False


@numba.njit(cache=True)
def _proceed(r, s, step, now, net, rank, free, heap, st, out, sent_at):  # pragma: no cover (compiled)
    """Rank r at stage s from `step` on (_SEND: its pre work done; _END: its post work done; -1: the
    stage begins; -2: its messages all delivered) until it waits for work or messages:
    LogReplay._begin/_send/_finish/_end."""
    routes, nbytes, capacity, latency, pad = net
    order, bounds, pending, sent, pre, post, stages = rank
    while True:
        slot = r * stages + s
        if step == -1:  # _begin
            if _work(heap, st, out, 0, slot, now, pre[slot], _SEND, r, s):
                return
            step = _SEND
        if step == _SEND:  # _send: inject the stage's sends in order, then finish if nothing is pending
            out[1, slot] = now
            sent[slot] = True
            for j in range(bounds[slot], bounds[slot + 1]):
                m = order[j]
                sent_at[m] = now
            for j in range(bounds[slot], bounds[slot + 1]):
                m = order[j]
                if routes[m, 0] == pad:
                    _push(heap, st, now + 0.0, _DELIVER, m, 0, 0.0)
                else:
                    _hop(m, 0, now, now, routes, nbytes, capacity, latency, pad, free, heap, st)
            if pending[slot] != 0:
                return
            step = -2
        if step == -2:  # _finish
            if _work(heap, st, out, 2, slot, now, post[slot], _END, r, s):
                return
            step = _END
        # _end
        out[3, slot] = now
        if s + 1 < stages:
            s += 1
            step = -1
            continue
        st[_RUNNING] -= 1
        return


@numba.njit(cache=True)
def _loop(routes, nbytes, capacity, latency, pad, order, bounds, pending, stage_of, src_of, dst_of, pre, post,
          n, stages, st, out, sent_at, delivered_at):  # pragma: no cover (compiled)
    """LogReplay.start() then Clock.run(): every rank begins stage 0 at time 0, events in (time,
    order of scheduling) order. Returns the time of the last event."""
    size = len(nbytes) + n + 1
    heap = np.empty((size, 6))
    free = np.zeros(len(capacity))
    sent = np.zeros(n * stages, np.bool_)
    net = (routes, nbytes, capacity, latency, pad)
    rank = (order, bounds, pending, sent, pre, post, stages)
    now = 0.0
    st[_RUNNING] = n if stages else 0
    if stages:
        for r in range(n):
            _proceed(r, 0, -1, now, net, rank, free, heap, st, out, sent_at)
    while st[_SIZE] > 0:
        now, kind, a, b, c = _pop(heap, st)
        if kind == _HOP:
            _hop(a, b, c, now, routes, nbytes, capacity, latency, pad, free, heap, st)
        elif kind == _DELIVER:  # Network._delivered, LogReplay._delivered
            delivered_at[a] = now
            s = stage_of[a]
            for r in (src_of[a], dst_of[a]):
                slot = r * stages + s
                pending[slot] -= 1
                if pending[slot] == 0 and sent[slot]:
                    _proceed(r, s, -2, now, net, rank, free, heap, st, out, sent_at)
        else:
            _proceed(a, b, kind, now, net, rank, free, heap, st, out, sent_at)
    return now
