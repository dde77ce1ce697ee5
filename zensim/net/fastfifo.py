"""The `fifo` sharing model's one implementation: its compiled steps, and the event loop that runs them alone.

The model (what it does: models/fifo.py's docstring): per link one message at a time, first come first
served, cut-through across hops, with the NIC and host efficiency tables. Its steps: `_inject` (a
sender's messages start now, in order) and `_hop` (a message's head reaches its next link; the hops
after it at once while their heads arrive at this instant) over the state `model_state` builds for both
drivers (`Model`: the network as the steps read it, `Wire`, with the efficiency tables' state, `Host`,
and per link when it is free); they schedule their events (a hop, a delivery) on a fastloop heap.

Two drivers run the same steps over the same state:
- `run()`: one log alone (`replay()`: every rank starting at 0) or several logs started by a
  fastloop.Program (the training timeline), with the costs fastloop.alone lists: one compiled loop,
  `_loop`, pops the heap and runs the model's steps and the ranks' stage program (fastloop's) itself.
  Per event: a heap push and pop of plain numbers, about 50x cheaper than a Python callback.
- models/fifo.Fifo (the general path: other clients, background traffic, a SimPy clock, a network that
  already ran): one compiled entry point per protocol call and per event (`inject_step`, `hop_step`,
  at the end of this file), whose events Fifo hands to the network's clock in the order they were
  scheduled.
Both give the same times, bit for bit, as the frozen Python model kept as the tests' oracle
(tests/oracle_fifo.py; tests/test_net_fastfifo.py asserts it for both). NUMBA_DISABLE_JIT=1 runs all of
it as Python, for debugging.

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
    from zensim.net.models.base import ReplayNetwork

_HOP, _DELIVER = MODEL, MODEL + 1
COMPILE_S = 15  # about this many seconds of CPU compile _loop (zensim.jit.announce)
# The efficiency tables (_hop's rate, zensim.net.efficiency), both scaling NIC links: per link whether it is
# a NIC's; a host efficiency (_in_flight): the table h(0..) (`table`), per message when its first link
# is done, and the heap of those times for the messages in flight (a min-heap of its first size[0] rows,
# keyed by column 0, kept by fastloop.sift_up and sift_down); a NIC efficiency: the table eff(0..) (`eff`),
# the end times each NIC link took (`_taken`: link k's run of `ends`, up to stop[k], the ones before
# popped[k] dropped, the next at pushed[k]; a run has room for the hops on its link of the messages
# declared, and spare[k] more: stop - pushed less those hops still to come, which a hop leaves as it is;
# laid out by `_host` and `_runs`, messages declared since counted in by `_declare`) and per link the
# messages of the injection under way whose first link it is, not yet through _hop. Without a table, its
# arrays of length 0. Read by name (host.flight); NUMBA_DISABLE_JIT=1 runs the same code as Python.
Host = namedtuple("Host", "table nic first_end flight size eff ends popped pushed joining stop spare")
# The network as the steps read it: per message its route with the padding (`pad`) last, its bytes; per
# link its capacity and latency; the efficiency tables (`Host`).
Wire = namedtuple("Wire", "routes nbytes capacity latency pad host")
# The model's state (`model_state`): the network as the steps read it (`Wire`) and per link the time it
# is free (the end of the last message it took).
Model = namedtuple("Model", "wire free")


def applies(net: ReplayNetwork) -> bool:
    """Whether the compiled loop gives the general path's times on this network: the fifo model, with
    what fastloop.alone says the compiled loops cover."""
    return fastloop.alone(net, "fifo")


def run(net: ReplayNetwork, clients: Sequence, program: Program) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run `program` (fastloop.Program) over the clients, the network's only ones, until nothing is left
    (compiled). Fills the network's sent_at, delivered_at and clock; returns per slot (fastloop.schedule's
    numbering) the stage start, transfer start, transfer end and stage end times (4, slots), and per node
    of the program when it began and when it was done."""
    rank, messages, sizes, prog = fastloop.schedule(net, clients, program)
    st = fastloop.state(net.count)
    out = np.zeros((4, sizes["slots"]))
    sent_at, delivered_at = net.sent_at[:net.count], net.delivered_at[:net.count]  # NaN: nothing sent yet (applies)
    mm = model_state(net, fastloop.compact_routes(net))
    announce(_loop, "the fifo network loop (zensim.net.fastfifo)", COMPILE_S)
    now = _loop(mm.wire, mm.free, rank, messages, prog, st, out, sent_at, delivered_at)
    fastloop.finish(net, now, st, sent_at, delivered_at)
    return out, prog.began, prog.ended


def model_state(net: ReplayNetwork, routes: np.ndarray, old: Model | None = None, first: int = 0) -> Model:
    """The model's state (`Model`) for messages 0..len(routes)-1 on `net` (the compiled loop's, run(), and
    the general path's, models/fifo.Fifo): `routes` their routes with the padding last (rows not yet
    declared all padding), their bytes the network's (a view of its array). With `old` (the state of the
    first `first` messages, in less room) it is grown: when the links are free and the efficiency tables'
    state carried over (`_grown`), the messages declared since counted in (`_declare`)."""
    size = len(routes)
    capacity, latency = (np.ascontiguousarray(x, dtype=np.float64) for x in (net.capacity, net.latency))
    host = _host(net, routes) if old is None else _declare(_grown(old.wire.host, size), routes[first:net.count])
    wire = Wire(routes, np.ascontiguousarray(net.nbytes[:size], dtype=np.float64), capacity, latency, net.num_links,
                host)
    return Model(wire, np.zeros(net.num_links) if old is None else old.free)


def declared(net: ReplayNetwork, mm: Model, first: int) -> Model:
    """The state `mm` once the messages declared from message `first` on, in the room it was made for, are in
    it (their compacted routes written into mm.wire.routes: the general path, models/fifo.Fifo): nothing
    else in it depends on the routes (the bytes are a view of the network's array, the host efficiency's
    per-message arrays as long as the room) but a NIC efficiency table's runs of end times (`_declare`:
    their spare room counted down in place, O(hops), and only where a run has too little, laid out anew).
    `mm` itself, or with those runs laid out anew."""
    host = _declare(mm.wire.host, mm.wire.routes[first:net.count])
    return mm if host is mm.wire.host else mm._replace(wire=mm.wire._replace(host=host))


def _host(net: ReplayNetwork, routes: np.ndarray) -> Host:
    """The efficiency tables' state (`Host`) at the start, for messages with `routes`: each NIC link's run
    of end times as long as the hops on it, no spare."""
    links = net.num_links
    nic = np.zeros(links, np.bool_)
    nic[net.nic_links] = True
    nic_table = np.array(net.nic_efficiency or [], dtype=np.float64)
    host_table = np.array(net.host_efficiency or [], dtype=np.float64)
    flights = len(routes) if len(host_table) else 0
    hops = np.zeros(links, np.int64)  # per NIC link the messages crossing it (with a NIC efficiency)
    if len(nic_table):
        hops = np.bincount(routes.ravel(), minlength=links + 1)[:links] * nic
    popped = np.cumsum(hops) - hops
    return Host(host_table, nic, np.zeros(flights), np.zeros((flights, 2)), np.zeros(1, np.int64), nic_table,
                np.empty(hops.sum()), popped, popped.copy(), np.zeros(links, np.int64), popped + hops,
                np.zeros(links, np.int64))


def _grown(old: Host, size: int) -> Host:
    """`old` with room for `size` messages: a host efficiency's per-message arrays grown, the messages in
    flight carried over; the rest kept as it is."""
    if not len(old.table):
        return old
    first_end, flight = np.zeros(size), np.zeros((size, 2))
    first_end[:len(old.first_end)] = old.first_end
    flight[:len(old.flight)] = old.flight
    return old._replace(first_end=first_end, flight=flight)


def _declare(host: Host, rows: np.ndarray) -> Host:
    """`host` once messages with routes `rows` are declared: with a NIC efficiency table, their hops on NIC
    links counted off the runs' spare room, in place (O(hops)); where a run has too little, the runs laid
    out anew (`_runs`). `host` itself, or the one laid out anew."""
    if not len(host.eff):
        return host
    hit = rows[rows < len(host.nic)]  # the padding left out
    hit = hit[host.nic[hit]]
    if not len(hit):
        return host
    np.subtract.at(host.spare, hit, 1)
    if host.spare[hit].min() >= 0:
        return host
    return _runs(host)


def _runs(host: Host) -> Host:
    """`host` with its NIC links' runs of end times laid out anew (O(links + end times kept)): each with room
    for its end times kept (at its start) and its link's hops to come (stop - pushed - spare), and as much
    again and 8 more spare, so that a run is laid out again only once some link's hops to come outgrow it."""
    kept = host.pushed - host.popped
    need = kept + host.stop - host.pushed - host.spare
    length = np.where(host.nic, 2 * need + 8, 0)
    stop = np.cumsum(length)
    start = stop - length
    ends = np.empty(int(length.sum()))
    at = np.arange(kept.sum()) - np.repeat(np.cumsum(kept) - kept, kept)  # each kept one's place in its run
    ends[np.repeat(start, kept) + at] = host.ends[np.repeat(host.popped, kept) + at]
    return host._replace(ends=ends, popped=start, pushed=start + kept, stop=stop, spare=length - need)


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
def _inject(ids, first, stop, now, net, free, heap, st):  # pragma: no cover (compiled)
    """Fifo.inject: messages ids[first:stop] start now, in this order (one sender's group): each through
    _hop, a message that crosses no link delivered at once. (Inlined.)"""
    routes, nbytes, capacity, latency, pad, host = net.routes, net.nbytes, net.capacity, net.latency, net.pad, net.host
    later = 0  # the group's messages not yet through _hop
    for j in range(first, stop):
        if routes[ids[j], 0] != pad:
            later += 1
            if len(host.eff):  # per first link the group's messages not yet through _hop
                host.joining[routes[ids[j], 0]] += 1
    for j in range(first, stop):
        m = np.int64(ids[j])
        if routes[m, 0] == pad:
            push(heap, st, now + 0.0, _DELIVER, m, 0, 0.0)
        else:
            later -= 1
            _hop(m, 0, now, later, now, routes, nbytes, capacity, latency, pad, free, host, heap, st)


@inlined
def _rank(r, s, step, now, net, rank, prog, free, heap, st, out, sent_at):  # pragma: no cover (compiled)
    """Advance the ranks and the program from rank r's (or node r's) `step`, injecting (Network.start,
    _inject) where they send. (Inlined: one call of advance.)"""
    while True:
        slot = advance(r, s, step, now, rank, prog, heap, st, out)
        if slot < 0:
            return
        ids, first, stop = sends(slot, rank, st)
        for j in range(first, stop):
            sent_at[ids[j]] = now
        _inject(ids, first, stop, now, net, free, heap, st)
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
def _loop(net, free, rank, messages, prog, st, out, sent_at, delivered_at):  # pragma: no cover (compiled)
    """The program's roots start at time 0, in order, then Clock.run(): events in (time, order of
    scheduling) order (_events), over the model's state (`net` its Wire, `free`). Returns the time of the
    last event. At most one event is pending per message, per rank and per node of the program, so the
    heap is sized once; but for shared host processors' events (fastloop.CORE_EVENTS), stale ones
    included: one step schedules at most one per rank and one more, so the heap grows here before _events
    would lack room."""
    ranks = len(rank.stages)
    size = len(net.nbytes) + ranks + len(prog.kind) + 1
    heap = np.empty((size, fastloop.ROW))
    room = size + ranks + 1
    now = _events(0.0, True, net, rank, prog, messages, free, heap, st, out, sent_at, delivered_at, room)
    while st[fastloop.SIZE] > 0:
        heap = grow(heap, room + st[fastloop.CORE_EVENTS])
        now = _events(now, False, net, rank, prog, messages, free, heap, st, out, sent_at, delivered_at, room)
    return now


# -- the general path's steps (models/fifo.Fifo) ----------------------------------------------------
# Each runs one protocol call or one of the model's events on the state of model_state and a heap of its
# own (fastloop's, emptied by the caller after each step): the events the step schedules (a hop, a
# delivery) are left on it for Fifo to hand to the network's clock, in (time, order) order.


@uncounted
def inject_step(ids, now, mm, heap, st):  # pragma: no cover (compiled)
    """Fifo.inject: messages `ids` start now, in this order (_inject). The heap needs room for len(ids)
    events."""
    _inject(ids, 0, len(ids), now, mm.wire, mm.free, heap, st)


@uncounted
def hop_step(m, i, prev_end, now, mm, heap, st):  # pragma: no cover (compiled)
    """Fifo._hop: the head of message m reaches hop i now (its end on hop i - 1 `prev_end`). One event."""
    net = mm.wire
    _hop(m, i, prev_end, 0, now, net.routes, net.nbytes, net.capacity, net.latency, net.pad, mm.free, net.host, heap,
         st)
