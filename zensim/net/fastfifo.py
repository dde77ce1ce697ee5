"""Message logs alone on a `fifo` network, as one compiled event loop (numba).

The same semantics, step for step, as `LogReplay` on `Network` with the `Fifo` model over `Clock`
(zensim/net/replay.py, models/fifo.py, clock.py): the same events scheduled in the same order (so
ties at one instant break the same way), the same floating-point operations in the same order, so
every time comes out bit-identical (tests/test_net_fastfifo.py asserts it against the general path).
It covers one log alone (`replay()`: every rank starting at 0) and several logs started by a
fastloop.Program (the training timeline), with the costs fastloop.alone lists; anything else takes
the general path. Per event: a heap push and pop of plain numbers, about 50x cheaper than a Python
callback. The heap and the ranks' stage program are zensim.net.fastloop's.

Events: a rank's local work ending (then it injects its stage's sends, or ends the stage), a
program's timer, a message's head reaching its next link, a message's delivery. Each message has at
most one event pending, each rank and each timer at most one, so the heap is sized once.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numba
import numpy as np

from zensim.jit import announce
from zensim.net import fastloop
from zensim.net.efficiency import factor
from zensim.net.fastloop import (FINISH, MODEL, SENT, START, Program, advance, arrived, grow, pop, push, resume,
                                 inlined, sends, uncounted)

if TYPE_CHECKING:
    from zensim.net.network import Network

_HOP, _DELIVER = MODEL, MODEL + 1
COMPILE_S = 15  # about this many seconds of CPU compile _loop (zensim.jit.announce)
# The efficiency tables (Fifo._rate, zensim.net.efficiency), both scaling NIC links: per link whether it is
# a NIC's; a host efficiency (Fifo._in_flight): the table h(0..) (`table`), per message when its first link
# is done, and the heap of those times for the messages in flight (a min-heap of its first size[0] rows,
# keyed by column 0, kept by fastloop.sift_up and sift_down); a NIC efficiency: the table eff(0..) (`eff`),
# the end times each NIC link took (Fifo.taken: link k's run of `ends` from its first hop's place, the ones
# before popped[k] dropped, the next at pushed[k]) and per link the messages of the injection under way
# whose first link it is, not yet through _hop (Fifo.inject's `on_first`). Without a table, its arrays of
# length 0. Read by name (host.flight); NUMBA_DISABLE_JIT=1 runs the same code as Python.
Host = namedtuple("Host", "table nic first_end flight size eff ends popped pushed joining")
# The network as the loop reads it: per message its route with the padding (`pad`) last, its bytes; per
# link its capacity and latency; the efficiency tables (`Host`).
Wire = namedtuple("Wire", "routes nbytes capacity latency pad host")


def applies(net: Network) -> bool:
    """Whether the compiled loop gives the general path's times on this network: the fifo model, with
    what fastloop.alone says the compiled loops cover."""
    return fastloop.alone(net, "fifo")


def run(net: Network, clients: Sequence, program: Program) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run `program` (fastloop.Program) over the clients, the network's only ones, until nothing is left
    (compiled). Fills the network's sent_at, delivered_at and clock; returns per slot (fastloop.schedule's
    numbering) the stage start, transfer start, transfer end and stage end times (4, slots), and per node
    of the program when it began and when it was done."""
    rank, messages, sizes, prog = fastloop.schedule(net, clients, program)
    st = fastloop.state(net.count)
    out = np.zeros((4, sizes["slots"]))
    sent_at, delivered_at = net.sent_at[:net.count], net.delivered_at[:net.count]  # NaN: nothing sent yet (applies)
    floats = [np.ascontiguousarray(x, dtype=np.float64) for x in (net.nbytes[:net.count], net.capacity, net.latency)]
    host = _host(net)
    announce(_loop, "the fifo network loop (zensim.net.fastfifo)", COMPILE_S)
    now = _loop(fastloop.compact_routes(net), *floats, net.num_links, host, rank, messages, prog, st, out, sent_at,
                delivered_at)
    fastloop.finish(net, now, st, sent_at, delivered_at)
    return out, prog.began, prog.ended


def _host(net: Network) -> Host:
    """The efficiency tables' state (`Host`) at the start of a replay of the network's messages."""
    model, links = net.model, net.num_links
    nic = np.zeros(links, np.bool_)
    nic[net.nic_links] = True
    flights = net.count if len(model.host_table) else 0
    hops = np.zeros(links, np.int64)  # per NIC link the messages crossing it (with a NIC efficiency)
    if len(model.nic_table):
        hops = np.bincount(net.routes[:net.count].ravel(), minlength=links + 1)[:links] * nic
    popped = np.cumsum(hops) - hops
    return Host(model.host_table, nic, np.zeros(flights), np.zeros((flights, 2)), np.zeros(1, np.int64),
                model.nic_table, np.empty(hops.sum()), popped, popped.copy(), np.zeros(links, np.int64))


# -- the efficiency tables (Fifo._in_flight, Fifo._rate): `host` a `Host`

@uncounted
def _in_flight(now, m, first_hop, later, host):  # pragma: no cover (compiled)
    """Fifo._in_flight: the messages in flight now (injected, first link not yet done), m included once,
    plus `later` more that its sender injects at this instant after it."""
    flight, size = host.flight, host.size
    while size[0] and flight[0, 0] <= now:  # heapq.heappop
        size[0] -= 1
        fastloop.sift_down(flight, size[0])
    mine = 1 if first_hop or host.first_end[m] <= now else 0
    return size[0] + mine + later


@uncounted
def _started(m, end, host):  # pragma: no cover (compiled)
    """Message m's first link is done at `end`: in flight until then (heapq.heappush)."""
    host.first_end[m] = end
    i = fastloop.sift_up(host.flight, host.size[0], end, 0.0)
    host.flight[i, 0], host.flight[i, 1] = end, 0.0
    host.size[0] += 1


@uncounted
def _taken(k, now, host):  # pragma: no cover (compiled)
    """Fifo._rate's count of the messages NIC link k took that end after now (the earlier ones popped)."""
    ends, popped, pushed = host.ends, host.popped, host.pushed
    while popped[k] < pushed[k] and ends[popped[k]] <= now:
        popped[k] += 1
    return pushed[k] - popped[k]


@uncounted
def _hop(m, i, prev_end, later, now, routes, nbytes, capacity, latency, pad, free, host, heap,
         st):  # pragma: no cover (compiled)
    """Fifo._hop: the head of m reaches hop i now (and the hops after it at once while their heads
    arrive at this instant); `later`: messages its sender injects after it now."""
    width = routes.shape[1]
    table, nic, eff = host.table, host.nic, host.eff
    while True:
        k = routes[m, i]
        start = free[k] if free[k] >= now else now  # max(free[k], now)
        rate = capacity[k]
        flows = _in_flight(now, m, i == 0, later, host) if len(table) else 0
        joining = 0
        if i == 0 and len(eff):  # Fifo.inject's on_first
            host.joining[k] -= 1
            joining = host.joining[k]
        if nic[k]:  # Fifo._rate
            if len(eff):
                rate *= factor(eff, _taken(k, now, host) + 1 + joining)
            if len(table):
                rate *= factor(table, flows)
        end = start + nbytes[m] / rate
        if prev_end > end:
            end = prev_end
        free[k] = end
        if nic[k] and len(eff):
            host.ends[host.pushed[k]] = end
            host.pushed[k] += 1
        if i == 0 and len(table):
            _started(m, end, host)
        head, end = start + latency[k], end + latency[k]
        if i + 1 == width or routes[m, i + 1] == pad:
            push(heap, st, now + (end - now), _DELIVER, m, 0, 0.0)
            return
        if head != now:
            push(heap, st, now + (head - now), _HOP, m, i + 1, end)
            return
        i += 1
        prev_end = end


@inlined
def _rank(r, s, step, now, net, rank, prog, free, heap, st, out, sent_at):  # pragma: no cover (compiled)
    """Advance the ranks and the program from rank r's (or node r's) `step`, injecting (Network.start,
    Fifo.inject) where they send. (Inlined: one call of advance.)"""
    routes, nbytes, capacity, latency, pad, host = net.routes, net.nbytes, net.capacity, net.latency, net.pad, net.host
    while True:
        slot = advance(r, s, step, now, rank, prog, heap, st, out)
        if slot < 0:
            return
        ids, first, stop = sends(slot, rank, st)
        later = 0  # the group's messages not yet through _hop
        for j in range(first, stop):
            sent_at[ids[j]] = now
            if routes[ids[j], 0] != pad:
                later += 1
                if len(host.eff):
                    host.joining[routes[ids[j], 0]] += 1
        for j in range(first, stop):
            m = np.int64(ids[j])
            if routes[m, 0] == pad:
                push(heap, st, now + 0.0, _DELIVER, m, 0, 0.0)
            else:
                later -= 1
                _hop(m, 0, now, later, now, routes, nbytes, capacity, latency, pad, free, host, heap, st)
        r, s = resume(slot, rank)
        step = SENT


@uncounted
def _events(now, start, net, rank, prog, messages, free, heap, st, out, sent_at, delivered_at,
            room):  # pragma: no cover (compiled)
    """With `start`, start the program's roots at time 0, in order; then run the heap's events until it
    is empty or, with CORES events pending, it may need more rows than it has (`room` and one per
    CORES event); returns the time of the last one run."""
    routes, nbytes, capacity, latency, pad, host = net.routes, net.nbytes, net.capacity, net.latency, net.pad, net.host
    stage_of, src_of, dst_of = messages.stage, messages.src, messages.dst
    roots = prog.roots
    i = 0 if start else len(roots)
    while i < len(roots) or st[fastloop.SIZE] > 0:
        if i < len(roots):  # a root starts (one call of _rank, inlined, for every step)
            r, s, step, count, kind, i = roots[i], 0, START, 1, START, i + 1
        else:
            if st[fastloop.CORE_EVENTS] and room + st[fastloop.CORE_EVENTS] > heap.shape[0]:
                break
            now, kind, a, b, c = pop(heap, st)
            if kind == _HOP:
                _hop(a, b, c, 0, now, routes, nbytes, capacity, latency, pad, free, host, heap, st)
                continue
            r, s, step, count = a, b, kind, 1
            if kind == _DELIVER:  # Network._delivered, LogReplay._delivered: the sender's stage, then the
                delivered_at[a] = now  # receiver's, each where it has all its messages now
                s, step, count = np.int64(stage_of[a]), FINISH, 2  # int32 columns (fastloop.IDS), read as int64
        for j in range(count):
            if kind == _DELIVER:
                r = np.int64(src_of[a]) if j == 0 else np.int64(dst_of[a])
                if not arrived(r, s, rank):
                    continue
            _rank(r, s, step, now, net, rank, prog, free, heap, st, out, sent_at)
    return now


@numba.njit(cache=True)
def _loop(routes, nbytes, capacity, latency, pad, host, rank, messages, prog, st, out, sent_at,
          delivered_at):  # pragma: no cover (compiled)
    """The program's roots start at time 0, in order, then Clock.run(): events in (time, order of
    scheduling) order (_events). Returns the time of the last event. At most one event is pending per
    message, per rank and per node of the program, so the heap is sized once; but for shared host
    processors' events (fastloop.CORE_EVENTS), stale ones included: one step schedules at most one per
    rank and one more, so the heap grows here before _events would lack room."""
    ranks = len(rank.stages)
    size = len(nbytes) + ranks + len(prog.kind) + 1
    heap = np.empty((size, fastloop.ROW))
    free = np.zeros(len(capacity))
    net = Wire(routes, nbytes, capacity, latency, pad, host)
    room = size + ranks + 1
    now = _events(0.0, True, net, rank, prog, messages, free, heap, st, out, sent_at, delivered_at, room)
    while st[fastloop.SIZE] > 0:
        heap = grow(heap, room + st[fastloop.CORE_EVENTS])
        now = _events(now, False, net, rank, prog, messages, free, heap, st, out, sent_at, delivered_at, room)
    return now
