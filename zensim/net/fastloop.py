"""What the compiled replays (zensim.net.fastfifo, zensim.net.fastmaxmin) share: the event heap that
stands for `Clock`, and the ranks' stage program that stands for `LogReplay`, compiled with numba.

Both replay one message log alone on a network of its own, every rank starting at 0, and give the
general path's times bit for bit: the same events scheduled in the same order (so ties at one instant
break the same way) and the same floating-point operations. A model's loop pops events, runs its own
(hops, departures, solves) and calls `advance` for the ranks; where `advance` returns a (rank, stage)
slot, the model injects that slot's sends (`Network.start`) and calls `advance` again with `SENT`.

An event row (float64): time, order, kind, three arguments. `order` is the scheduling sequence
number, plus 2**52 for a `late` event (Clock.LATE: after every ordinary event of its instant), so
one comparison of (time, order) gives Clock's (time, priority, sequence) order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numba
import numpy as np

if TYPE_CHECKING:
    from zensim.net.network import Network

# event kinds of the stage program (models number theirs from MODEL on)
SEND, END, BEGIN, SENT, FINISH, MODEL = 0, 1, 2, 3, 4, 5
# st: the loop's integer state
SIZE, SEQ, EVENTS, RUNNING = 0, 1, 2, 3
_LATE = float(2**52)
ROW = 6


def alone(net: Network, model: str) -> bool:
    """Whether a compiled loop gives the general path's times on this network: the `model` model, no
    efficiency tables, no shared host processors, no rendezvous, no exchange CPU, nothing sent or
    scheduled yet."""
    return (net.model.name == model and net.link_efficiency is None and net.host_efficiency is None
            and net.costs.host_cores is None and not net.costs.rendezvous and net.costs.exchange is None
            and net.clock.events == 0)


def schedule(net: Network, arrays: dict[str, np.ndarray], first: int) -> tuple:
    """The log's schedule (LogReplay.arrays) as the compiled loop takes it: (order, bounds, pending,
    stage, src, dst) as int64 arrays (pending a copy, counted down), then pre and post (float64).
    ValueError unless the log is the network's only client."""
    if first or len(arrays["stage"]) != net.count:
        raise ValueError("the compiled replay runs one log alone on its network")
    ints = [np.array(arrays[key], dtype=np.int64) for key in ("order", "bounds", "pending", "stage", "src", "dst")]
    return (*ints, *(np.ascontiguousarray(arrays[key], dtype=np.float64) for key in ("pre", "post")))


def compact_routes(net: Network) -> np.ndarray:
    """Every message's route with the padding last (Network.route_tuples' order), int64."""
    routes = net.routes[:net.count]
    order = np.argsort(routes == net.num_links, axis=1, kind="stable")
    return np.ascontiguousarray(np.take_along_axis(routes, order, axis=1), dtype=np.int64)


def finish(net: Network, now: float, st: np.ndarray, sent_at: np.ndarray, delivered_at: np.ndarray) -> None:
    """Hand a compiled run's message times, clock and event count back to the network."""
    net.sent_at[:net.count] = sent_at
    net.delivered_at[:net.count] = delivered_at
    net.clock.now = now
    net.clock.events = int(st[EVENTS])


@numba.njit(cache=True)
def sift_up(heap, i, key, order):  # pragma: no cover (compiled)
    """Make room for a row keyed (key, order) at the end `i` of a heap (rows ordered by their first two
    columns); returns the index where it goes."""
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent, 0] < key or (heap[parent, 0] == key and heap[parent, 1] < order):
            break
        heap[i] = heap[parent]
        i = parent
    return i


@numba.njit(cache=True)
def sift_down(heap, size):  # pragma: no cover (compiled)
    """Remove row 0 of a heap of `size` + 1 rows: its last row (index `size`) takes the place."""
    if size == 0:
        return
    key, order = heap[size, 0], heap[size, 1]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and (heap[right, 0] < heap[child, 0]
                             or (heap[right, 0] == heap[child, 0] and heap[right, 1] < heap[child, 1])):
            child = right
        if key < heap[child, 0] or (key == heap[child, 0] and order < heap[child, 1]):
            break
        heap[i] = heap[child]
        i = child
    heap[i] = heap[size]


@numba.njit(cache=True)
def _schedule(heap, st, time, late, kind, a, b, c):  # pragma: no cover (compiled)
    seq = st[SEQ]
    st[SEQ] = seq + 1
    st[EVENTS] += 1
    order = seq + late
    i = sift_up(heap, st[SIZE], time, order)
    st[SIZE] += 1
    row = heap[i]
    row[0], row[1], row[2], row[3], row[4], row[5] = time, order, kind, a, b, c


@numba.njit(cache=True)
def push(heap, st, time, kind, a, b, c):  # pragma: no cover (compiled)
    """Schedule an event at `time` (after those already scheduled for that time): Clock.at. Arguments:
    two integers and a float."""
    _schedule(heap, st, time, 0.0, kind, a, b, c)


@numba.njit(cache=True)
def push_late(heap, st, time, kind, a):  # pragma: no cover (compiled)
    """Schedule an event at the end of instant `time`, after every ordinary one: Clock.late."""
    _schedule(heap, st, time, _LATE, kind, a, 0, 0.0)


@numba.njit(cache=True)
def pop(heap, st):  # pragma: no cover (compiled)
    """Remove the earliest event (ties: the first scheduled) and return it: time, kind, a, b, c."""
    top = heap[0]
    event = (top[0], int(top[2]), int(top[3]), int(top[4]), top[5])
    st[SIZE] -= 1
    sift_down(heap, st[SIZE])
    return event


@numba.njit(cache=True)
def grow(heap, need):  # pragma: no cover (compiled)
    """The heap, with room for at least `need` rows."""
    if need <= heap.shape[0]:
        return heap
    bigger = np.empty((max(need, 2 * heap.shape[0]), heap.shape[1]))
    bigger[:heap.shape[0]] = heap
    return bigger


@numba.njit(cache=True)
def _work(heap, st, out, column, slot, now, seconds, then, r, s):  # pragma: no cover (compiled)
    """Stamp out[column, slot] now; with local work to do, schedule `then` after it (True)."""
    out[column, slot] = now
    if seconds > 0:
        push(heap, st, now + seconds, then, r, s, 0.0)
        return True
    return False


@numba.njit(cache=True)
def advance(r, s, step, now, rank, heap, st, out):  # pragma: no cover (compiled)
    """Rank r at stage s from `step` on (BEGIN: the stage begins; SEND: its pre work done; SENT: its
    sends injected; FINISH: its messages all delivered; END: its post work done) until it waits for
    work or messages (-1), or has sends to inject now: their (rank, stage) slot, after marking it
    sent (LogReplay._begin/_send/_finish/_end). `rank`: (bounds, pending, sent, pre, post, stages);
    out: per slot the stage start, transfer start, transfer end and stage end times."""
    bounds, pending, sent, pre, post, stages = rank
    while True:
        slot = r * stages + s
        if step == BEGIN:
            if _work(heap, st, out, 0, slot, now, pre[slot], SEND, r, s):
                return -1
            step = SEND
        if step == SEND:
            out[1, slot] = now
            sent[slot] = True
            return slot
        if step == SENT:
            if pending[slot] != 0:
                return -1
            step = FINISH
        if step == FINISH:
            if _work(heap, st, out, 2, slot, now, post[slot], END, r, s):
                return -1
            step = END
        out[3, slot] = now
        if s + 1 < stages:
            s += 1
            step = BEGIN
            continue
        st[RUNNING] -= 1
        return -1


@numba.njit(cache=True)
def arrived(r, s, rank):  # pragma: no cover (compiled)
    """A message of rank r's stage s was delivered (LogReplay._delivered): whether the stage now has
    all its messages and its own sends injected (then advance it from FINISH)."""
    bounds, pending, sent, pre, post, stages = rank
    slot = r * stages + s
    pending[slot] -= 1
    return pending[slot] == 0 and sent[slot]
