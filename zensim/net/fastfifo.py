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
from zensim.net.fastloop import (FINISH, MODEL, SENT, START, Program, advance, arrived, grow, pop, push, resume,
                                 inlined, sends, uncounted)

if TYPE_CHECKING:
    from zensim.net.network import Network

_HOP, _DELIVER = MODEL, MODEL + 1
COMPILE_S = 15  # about this many seconds of CPU compile _loop (zensim.jit.announce)
# A host efficiency h(f) (Fifo._in_flight, Fifo._rate): the table h(0..), per link whether it is a NIC's,
# per message when its first link is done, and the heap of those times for the messages in flight (a
# min-heap of its first size[0] rows, keyed by column 0, kept by fastloop.sift_up and sift_down); without one,
# arrays of length 0. Read by name (host.flight);
# NUMBA_DISABLE_JIT=1 runs the same code as Python.
Host = namedtuple("Host", "table nic first_end flight size")
# The network as the loop reads it: per message its route with the padding (`pad`) last, its bytes; per
# link its capacity and latency; the host efficiency (`Host`).
Wire = namedtuple("Wire", "routes nbytes capacity latency pad host")


def applies(net: Network) -> bool:
    """Whether the compiled loop gives the general path's times on this network: the fifo model, with
    what fastloop.alone says the compiled loops cover, and a host efficiency."""
    return fastloop.alone(net, "fifo", host_efficiency=True)


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
    host = Host(np.zeros(0), np.zeros(0, np.bool_), np.zeros(0), np.zeros((0, 2)), np.zeros(1, np.int64))
    if net.host_efficiency is not None:
        nic = np.zeros(net.num_links, np.bool_)
        nic[net.nic_links] = True
        host = Host(np.array(net.host_efficiency), nic, np.zeros(net.count), np.zeros((net.count, 2)),
                    np.zeros(1, np.int64))
    announce(_loop, "the fifo network loop (zensim.net.fastfifo)", COMPILE_S)
    now = _loop(fastloop.compact_routes(net), *floats, net.num_links, host, rank, messages, prog, st, out, sent_at,
                delivered_at)
    fastloop.finish(net, now, st, sent_at, delivered_at)
    return out, prog.began, prog.ended


# -- a host efficiency h(f) (Fifo._in_flight, Fifo._rate): `host` a `Host`

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
def _hop(m, i, prev_end, later, now, routes, nbytes, capacity, latency, pad, free, host, heap,
         st):  # pragma: no cover (compiled)
    """Fifo._hop without NIC efficiency: the head of m reaches hop i now (and the hops after it at once
    while their heads arrive at this instant); `later`: messages its sender injects after it now."""
    width = routes.shape[1]
    table, nic = host.table, host.nic
    while True:
        k = routes[m, i]
        start = free[k] if free[k] >= now else now  # max(free[k], now)
        rate = capacity[k]
        if len(table):
            flows = _in_flight(now, m, i == 0, later, host)
            if nic[k]:
                rate *= table[min(flows, len(table) - 1)]
        end = start + nbytes[m] / rate
        if prev_end > end:
            end = prev_end
        free[k] = end
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
        for j in range(first, stop):
            m = ids[j]
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
                s, step, count = stage_of[a], FINISH, 2
        for j in range(count):
            if kind == _DELIVER:
                r = src_of[a] if j == 0 else dst_of[a]
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
