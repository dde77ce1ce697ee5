"""The `maxmin` sharing model's one implementation, compiled (numba): its steps, and the event loop that
runs message logs alone on a `maxmin` network.

The model (what it does: models/maxmin.py's docstring): isolated flows with their own finish events
and promotion when company arrives, components of shared flows (union-find, merged on arrival, never
split), one solve per due component at the end of an instant (`late`), departures taken from the
heads of the solves' segments in (finish, segment) order, the batched re-solve allowance
(`--maxmin-batch`, 0 = exact) with deferred checks, arrivals given rates without a solve where
that is still max-min (`_warm`), in large components a link that runs out re-solved alone (`_patch`) and
other joins waiting for the next solve (`_hold`);
the solves are zensim.net.waterfill's. Its steps (`_inject`,
`_isolated_done`, `_depart`, `_check`, the flush: `_flush_join` then `_flush_solve`) schedule their
events on a fastloop heap.

Two drivers run the same steps over the same state (`model_state`):
- `run()`: one log alone (`replay()`: every rank starting at 0) or several logs started by a
  fastloop.Program (the training timeline: buckets in flight together), with the costs fastloop.alone
  lists: one compiled loop, `_loop`, pops the heap and runs the model's steps and the ranks' stage
  program (fastloop's) itself.
- models/maxmin.MaxMin (the general path: other clients, background traffic, a SimPy clock, a network
  that already ran): one compiled entry point per protocol call and per event (`inject_step`,
  `isolated_step`, `depart_step`, `check_step`, `flush_step`, at the end of this file), whose events
  MaxMin hands to the network's clock in the order they were scheduled; a flush grows the state
  where its solves need more room (`_held`, as _loop does for the flushes _events holds).
Both give the same times, bit for bit, as the frozen Python model kept as the tests' oracle
(tests/oracle_maxmin.py; tests/test_net_fastmaxmin.py asserts it for both). NUMBA_DISABLE_JIT=1 runs all
of it as Python, for debugging.

State, all arrays: per flow its bytes left, rate, segment, component, isolation stamp and the next
flow of its component (a component's flows are a linked list, in the order the oracle
concatenates them); per link the flows on it, its component, its isolated flow, the allowance and the last solve's
rates on it (waterfill.LinkState's arrays); per component its union-find parent, flow list, pieces,
flows alive, check time, solve count, due flag, segment list, its flows joined since its last solve
(the first, how many) and whether freed capacity or a merge made it due (then no _warm); per segment its flows and
finish times, the sorted head taken so far and the positions not yet sorted, in solve order (runs of one
arena, `Segments`); the solves' scratch (waterfill.Workspace). Every function of the loop but _loop and
_held is compiled without reference counts (fastloop.uncounted) and allocates nothing: _loop grows the heap
before a step, _held the segments and the workspace before a flush that needs more.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numba
import numpy as np

from zensim.jit import announce
from zensim.net import fastloop
from zensim.net.fastloop import (FINISH, IDS, MODEL, SENT, START, Program, advance, arrived, grow, inlined, pop, push,
                                 push_late, resume, sends, uncounted)
from zensim.net.efficiency import capacities
from zensim.net.keysort import lead, sort, spread
from zensim.net.waterfill import (LinkState, make_workspace, patch_compiled, route_ids, share_of_room,
                                  solve_compiled, warm_compiled)

if TYPE_CHECKING:
    from zensim.net.models.base import ReplayNetwork

TIE = 1e-12  # relative tolerance: flows finishing "now"
ROUNDOFF = 1e-9  # relative to a link's rates: capacity freed on it below this is the round-off of rises and falls
DEFER = 1 / 64  # the part of what is left of a link's allowance a departure may actually lose before its re-solve
LOCAL_DEFER = 1 / 8  # the same where the link is re-solved alone (_patch)
LOCAL_BUDGET = 1 / 2  # a component's link re-solves since its solve re-solve at most this part of its flows
REGION_ROUNDS = 2  # a link re-solve that does not stand is tried again with the links that held it back, so often
HEAD = 256  # a departure segment's sorted head: at least this many flows

_DELIVER, _ISOLATED, _DEPART, _CHECK, _FLUSH = MODEL, MODEL + 1, MODEL + 2, MODEL + 3, MODEL + 4
# ms: the model's integer state
_STAMP, _VERSION, _ARMED, _ACTIVE, _SOLVES, _COMPS, _JOINED, _HEADS, _DUE, _STACK, _WARM = range(11)
# ... the segment ids made, the arena's used length, the oldest segment id that may be live, the roots a
# flush solves (_flush_join), whether a flush waits for _loop to solve them and the most flows listed in one
_SEGS, _ARENA, _OLDEST, _ROOTS, _HELD, _MOST = range(11, 17)
# ... the local re-solves': the index arena's generation and used length, the link re-solves made, and what
# a flush's link re-solves need (_flush_join): arena entries and segments
_IGEN, _INDEX, _LOCAL, _PROOM, _PSEGS = range(17, 22)
_WAITS = 22  # ... the joins that waited for a solve (_hold)
_STATE = 23  # the integer state's length
COMPILE_S = 90  # about this many seconds of CPU compile _loop (zensim.jit.announce)
# Per component id (the module docstring's state): its union-find parent; its flow list (first, last,
# size) and pieces; its flows alive; its check time and solve count (`epoch`); whether it exists and is
# due; its segment list (seg_first, seg_last); its deferred departures' time; its flows joined since its
# last solve (the first, `fresh`, and how many, `nnew`); whether freed capacity or a merge made it due
# (`full`: then no _warm); its index (_index: its links' run in the index arena, `lfirst` and `nlinks`, the
# arena generation it was made in, `igen`, -1 for none, and its flows alive then, `iflows`), the flows its
# link re-solves re-solved since its last solve (`patched`) and this flush's links to re-solve (`pfirst`,
# `pcount` into scratch.due_links; -1: none, -2: listed once its index is made), and where flows wait for its
# next solve (_hold) the last of them (`held_last`, -1: none wait) and the earliest start of a busy period
# among their links (`wait_from`). Read by name (comp.due); NUMBA_DISABLE_JIT=1 runs the same code as Python.
Comps = namedtuple("Comps", "parent first last size nparts living check epoch exists due seg_first seg_last deferred "
                            "fresh nnew full lfirst nlinks igen iflows patched pfirst pcount held_last wait_from")
# The departure segments, arrays: per segment id (in solve order) where its run of the arena starts and its
# length, the end of its sorted head and how far it is taken (both counted from its start), whether it is
# live and the next segment of its component (`following`, -1 last), and the cut of its finish times'
# buckets (`lo`, `shift`: keysort.spread's; shift -1 until its positions are spread); the arena: per entry a
# flow's finish time and id in solve order, and each segment's positions (`order`: the head taken so far, the
# sorted head, then the positions not yet sorted, in solve order or, once spread, bucket by bucket); the
# scratch of a head's selection (`pick`, as long as the workspace's flows: keysort's spare); the heap of the
# segments' earliest finishes (`heads`: rows of (finish, segment)). A segment's run is packed away when it is
# dropped (_compact). Grown by _loop (_fit).
Segments = namedtuple("Segments", "base size head taken live following lo shift finish flows order pick heads")
# The model's arrays as the loop's functions take them (`mm`): the network's (`wire`), per flow, per link,
# per component (`Comps`), scratch arrays, the integer state (`ms`: _STAMP..), the time of the armed
# departure event (`fs`), the efficiency tables (`host`), the segments (`seg`) and the solves' scratch
# (`ws`: waterfill.Workspace). Arrays only, so that the functions of the loop can take it uncounted
# (fastloop.uncounted): they allocate nothing; _loop grows what a flush may fill before it (_fit). `index`:
# the index arena (_index: per large component its links, then per link its flows; int32, fastloop.IDS).
Model = namedtuple("Model", "wire flow link comp scratch ms fs host seg ws index")
# The network as the loop reads it: per message its route with the padding last (`croutes`) and as the
# network holds it, its route's id where the solves go by route (`route_id`: waterfill.route_ids; empty for
# none, as on the general path, whose messages come as it runs), its bytes and route latency; per link its
# capacity (and infinity for the padding link `pad`); the re-solve allowance (MaxMin.batch), the size of
# component solved exactly (MaxMin.exact_flows) and the size above which a link that runs out is re-solved
# alone (MaxMin.local_flows).
Wire = namedtuple("Wire", "croutes routes route_id nbytes capacity latency pad batch exact_flows local_flows")
# Per flow (network message id): its bytes left at `base_time`, its rate, segment and component (-1:
# none), whether it is alive (shared, not yet departed), its isolation stamp (0: not isolated) and an
# isolated flow's start and rate, the next flow of its component, its start (the network's sent_at).
Flows = namedtuple("Flows", "left base_time rate segment_of alive comp_of stamp iso_start iso_rate following born")
# Per link (and the padding link): its flows, its component, its isolated flow (-1: none),
# waterfill.LinkState's arrays (the allowance and the last solve's rates on it), its run of flows in the
# index arena (`ibase`, `icount`: _index) and its place in the region a link re-solve is trying (`region`,
# -1 for none: _patch; all -1 between flushes).
Links = namedtuple("Links", "nflows comp_on isolated_on busy_from room spent freed freed_t last slot used peak level "
                            "ibase icount region")
# Scratch arrays of one step: the flows joined this instant, the flows departing, the stack of due
# components, their roots, and the components one step works through (a flow's in _join, the ones
# waiting for a check in _depart) and the links a flush re-solves alone (`due_links`: _flush_join; its
# second half for a component whose index the flush makes first). In a flush's solves, after _flush_join,
# `joined` holds a region's flows and `gone` its links (_patch, _members). Per route id a solve's row of it
# (`route_slot`, int32, -1 between solves: solve_compiled's).
Scratch = namedtuple("Scratch", "joined gone stack roots comps due_links route_slot")
# The efficiency tables (MaxMin._capacities, zensim.net.efficiency): the host efficiency h(0..) (`table`)
# and the NIC efficiency eff(0..) (`eff`), each of length 0 without; per link whether it is a NIC's, its
# capacity for a flow alone on it (MaxMin.alone: x eff(1) on NICs) and the capacities of a solve
# (efficiency.capacities's `out`).
Host = namedtuple("Host", "table nic scaled eff alone")


def applies(net: ReplayNetwork) -> bool:
    """Whether the compiled loop gives the general path's times on this network: the maxmin model, with
    what fastloop.alone says the compiled loops cover."""
    return fastloop.alone(net, "maxmin")


def run(net: ReplayNetwork, clients: Sequence, program: Program) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run `program` (fastloop.Program) over the clients, the network's only ones, until nothing is left
    (compiled). Fills the network's sent_at, delivered_at and clock, and the model's solve counts;
    returns per slot (fastloop.schedule's numbering) the stage start, transfer start, transfer end and
    stage end times (4, slots), and per node of the program when it began and when it was done."""
    announce(_loop, "the maxmin network loop (zensim.net.fastmaxmin)", COMPILE_S)  # before route_ids compiles
    rank, messages, sizes, prog = fastloop.schedule(net, clients, program)
    count = net.count
    routes = net.routes[:count]  # int32, C-contiguous: not copied
    nbytes = np.ascontiguousarray(net.nbytes[:count], dtype=np.float64)
    latency = np.ascontiguousarray(net.route_latency[:count], dtype=np.float64)
    wire = Wire(fastloop.compact_routes(net), routes, route_ids(routes), nbytes, np.append(net.capacity, np.inf),
                latency, net.num_links, float(net.model.batch), int(net.model.exact_flows), int(net.model.local_flows))
    # a flow's start is the network's sent_at (NaN: nothing sent yet, applies), written in place
    sent_at, delivered_at = net.sent_at[:count], net.delivered_at[:count]
    mm = model_state(net, count, wire, sent_at)
    st = fastloop.state(count)
    out = np.zeros((4, sizes["slots"]))
    extra = sizes["ranks"] + len(prog.kind)  # the ranks' and the program's events a step may schedule
    now = _loop(*mm, rank, messages, prog, extra, st, out, sent_at, delivered_at)
    fastloop.finish(net, now, st, sent_at, delivered_at)
    net.model.ms = mm.ms  # the run's integer state: its solve counts (MaxMin.solves, MaxMin.warm)
    return out, prog.began, prog.ended


def model_state(net: ReplayNetwork, size: int, wire: Wire, born: np.ndarray, old: Model | None = None) -> Model:
    """The model's state (`Model`) for flows 0..size-1 on `net` (the compiled loop's, run(), and the
    general path's, models/maxmin.MaxMin): `wire` the network as the steps read it, `born` per flow its
    start (the network's sent_at, written in place). With `old` (the state of fewer flows) it is grown:
    its per-flow and per-component contents copied, its links, integer state and tables kept."""
    links = net.num_links + 1
    # segment, component and next-flow ids int32 (fastloop.IDS: fewer than 2**31 messages, so components;
    # a segment per solve: 2**31 solves would take days)
    flow = Flows(np.zeros(size), np.zeros(size), np.zeros(size), np.full(size, -1, IDS), np.zeros(size, np.bool_),
                 np.full(size, -1, IDS), np.zeros(size, np.int64), np.zeros(size), np.zeros(size),
                 np.full(size, -1, IDS), born)
    comps = size + 1
    # per component id: the fields not zero at its creation are set by _join when it makes the id, so no
    # page of these arrays is touched beyond the components made (a few per instant, not one per flow)
    comp = Comps(np.empty(comps, np.int64), np.empty(comps, np.int64), np.empty(comps, np.int64),
                 np.zeros(comps, np.int64), np.zeros(comps, np.int64), np.zeros(comps, np.int64), np.empty(comps),
                 np.zeros(comps, np.int64), np.zeros(comps, np.bool_), np.zeros(comps, np.bool_),
                 np.empty(comps, np.int64), np.empty(comps, np.int64), np.empty(comps), np.empty(comps, np.int64),
                 np.zeros(comps, np.int64), np.zeros(comps, np.bool_), np.empty(comps, np.int64),
                 np.empty(comps, np.int64), np.empty(comps, np.int64), np.empty(comps, np.int64),
                 np.empty(comps, np.int64), np.empty(comps, np.int64), np.empty(comps, np.int64),
                 np.empty(comps, np.int64), np.empty(comps))
    scratch = Scratch(np.empty(size, np.int64), np.empty(size, np.int64), np.empty(comps, np.int64),
                      np.empty(comps, np.int64), np.empty(comps, np.int64), np.empty(2 * links, np.int64),
                      np.full(int(wire.route_id.max()) + 1 if wire.route_id.size else 0, -1, np.int32))
    if old is not None:
        for new, was in zip(flow[:-1] + comp + scratch[:-1], old.flow[:-1] + old.comp + old.scratch[:-1]):
            new[:len(was)] = was
        return Model(wire, flow, old.link, comp, scratch, old.ms, old.fs, old.host, old.seg, old.ws, old.index)
    ls = LinkState(links)
    link = Links(np.zeros(links, np.int64), np.full(links, -1), np.full(links, -1), ls.busy_from, ls.room, ls.spent,
                 ls.freed, ls.freed_t, ls.last, ls.slot, ls.used, ls.peak, ls.level, np.zeros(links, np.int64),
                 np.zeros(links, np.int64), np.full(links, -1))
    nic = np.zeros(links, dtype=bool)
    nic[net.nic_links] = True
    nic_table = np.array(net.nic_efficiency or [], dtype=np.float64)
    # a link's capacity for a flow alone on it: eff(1) on NIC links (no flow is alone under a host efficiency)
    alone = (capacities(wire.capacity, nic, nic_table, np.ones(links, np.int64), np.empty(0), 0, np.empty(links))
             if len(nic_table) else wire.capacity.copy())
    host = Host(np.array(net.host_efficiency or [], dtype=np.float64), nic, np.empty(links), nic_table, alone)
    # the segments and the solves' workspace small: a log's first flushes grow them (and pack the arena) in
    # every combination, which the tests see (_fit)
    seg = Segments(np.empty(16, np.int64), np.empty(16, np.int64), np.empty(16, np.int64), np.empty(16, np.int64),
                   np.empty(16, np.bool_), np.empty(16, np.int64), np.empty(16, np.uint64), np.empty(16, np.int64),
                   np.empty(64), np.empty(64, np.int64), np.empty(64, np.int64), np.empty(16, np.int64),
                   np.empty((16, 2)))
    # built as Python (its py_func), so that nothing compiles before run() announces the loop's compile
    ws = getattr(make_workspace, "py_func", make_workspace)(16, len(wire.capacity), wire.routes.shape[1],
                                                          wire.route_id.size > 0)
    return Model(wire, flow, link, comp, scratch, np.zeros(_STATE, np.int64), np.full(1, np.inf), host, seg, ws,
                 np.empty(16, IDS))


# -- components and segments ------------------------------------------------------------------


@uncounted
def _find(parent, c):  # pragma: no cover (compiled)
    """The component id c was merged into (path compression as MaxMin._find)."""
    root = c
    while parent[root] != root:
        root = parent[root]
    while parent[c] != root:
        up = parent[c]
        parent[c] = root
        c = up
    return root


@uncounted
def _concat(first, last, following, a, b):  # pragma: no cover (compiled)
    """Linked list b appended to linked list a (first/last per list, `following` per item)."""
    if first[b] < 0:
        return
    if first[a] < 0:
        first[a] = first[b]
    else:
        following[last[a]] = first[b]
    last[a] = last[b]


@uncounted
def _due(c, comp, scratch, ms):  # pragma: no cover (compiled)
    """Component c is to be re-solved at the end of this instant (MaxMin.due.add)."""
    due = comp.due
    if not due[c]:
        due[c] = True
        ms[_DUE] += 1
        scratch.stack[ms[_STACK]] = c
        ms[_STACK] += 1


@uncounted
def _all_due(comp, scratch, ms):  # pragma: no cover (compiled)
    """Every component is due (MaxMin.due.update(comps)): a host efficiency's flow count changed."""
    exists = comp.exists
    for c in range(ms[_COMPS]):
        if exists[c]:
            _due(c, comp, scratch, ms)


@uncounted
def _undue(c, comp, ms):  # pragma: no cover (compiled)
    """MaxMin.due.discard(c)."""
    due = comp.due
    if due[c]:
        due[c] = False
        ms[_DUE] -= 1


@uncounted
def _tables(host):  # pragma: no cover (compiled)
    """Whether an efficiency table is set (a host or a NIC one): then every component is solved whole."""
    return len(host.table) > 0 or len(host.eff) > 0


@uncounted
def _refill(s, seg):  # pragma: no cover (compiled)
    """The next sorted head of segment s (_Segment._refill): at least `HEAD` flows, earliest first, ties to
    the first in solve order. A segment of more spreads its positions into buckets of finish time once, at
    its first head (keysort.spread), and each head takes the next buckets whole (keysort.lead: O(the head),
    not a pass over the positions left). The first head is made when a departure first needs it, not at the
    solve as the Python model does (the order taken is the same): a segment replaced by the next solve before
    any departure costs no sort."""
    base, size, start = seg.base[s], seg.size[s], seg.head[s]
    left = size - start
    if left <= HEAD:  # all of it (most segments: a small component's), without spread's set-up
        sort(seg.order, base + start, base + size, seg.finish, base)
        head = left
    else:
        order, finish = seg.order[base + start:base + size], seg.finish[base:base + size]
        if seg.shift[s] < 0:  # its first head (start 0): no position taken yet
            seg.lo[s], shift = spread(order, left, finish)
            seg.shift[s] = np.int64(shift)
        head = lead(order, seg.pick, left, HEAD, finish, seg.lo[s], np.uint64(seg.shift[s]))
    seg.head[s] = start + head
    seg.taken[s] = start


@uncounted
def _next(s, seg, flow):  # pragma: no cover (compiled)
    """The earliest finish of segment s not yet taken (-1 when all are), passing over the flows no longer
    in it (re-solved alone since: _patch) or gone, so that no departure event waits for them."""
    base, segment_of, alive = seg.base[s], flow.segment_of, flow.alive
    while True:
        if seg.taken[s] == seg.head[s]:
            if seg.head[s] == seg.size[s]:
                return -1.0
            _refill(s, seg)
        p = seg.order[base + seg.taken[s]]
        m = seg.flows[base + p]
        if segment_of[m] == s and alive[m]:
            return seg.finish[base + p]
        seg.taken[s] += 1


@uncounted
def _take(s, horizon, seg, flow, gone, count):  # pragma: no cover (compiled)
    """Append to gone[count:] the flows of segment s finishing by `horizon`, in time order, that are
    still alive and in it (_Segment.take and MaxMin._depart's filter); the new count."""
    segment_of, alive = flow.segment_of, flow.alive
    finish, flows, order = seg.finish, seg.flows, seg.order
    base = seg.base[s]
    while True:
        first = _next(s, seg, flow)
        if first < 0 or first > horizon:
            return count
        pos, head = seg.taken[s], seg.head[s]
        while pos < head and finish[base + order[base + pos]] <= horizon:
            m = flows[base + order[base + pos]]
            if segment_of[m] == s and alive[m]:
                gone[count] = m
                count += 1
            pos += 1
        seg.taken[s] = pos


@uncounted
def _drop(s, seg):  # pragma: no cover (compiled)
    """Segment s is gone (used up, or its component re-solved): its run is packed away (_compact)."""
    seg.live[s] = False


@uncounted
def _compact(seg, ms):  # pragma: no cover (compiled)
    """The live segments' runs moved to the arena's start, in id order (their runs' order)."""
    oldest = ms[_OLDEST]
    while oldest < ms[_SEGS] and not seg.live[oldest]:
        oldest += 1
    ms[_OLDEST] = oldest
    base, size, finish, flows, order = seg.base, seg.size, seg.finish, seg.flows, seg.order
    at = 0
    for s in range(oldest, ms[_SEGS]):
        if seg.live[s]:
            b = base[s]
            if b != at:
                for i in range(size[s]):
                    finish[at + i], flows[at + i], order[at + i] = finish[b + i], flows[b + i], order[b + i]
                base[s] = at
            at += size[s]
    ms[_ARENA] = at


@uncounted
def _push_head(seg, ms, finish, s):  # pragma: no cover (compiled)
    """heappush(heads, (finish, s)) (_fit leaves room)."""
    heads = seg.heads
    size = ms[_HEADS]
    i = fastloop.sift_up(heads, size, finish, s)
    heads[i, 0] = finish
    heads[i, 1] = s
    ms[_HEADS] = size + 1


@uncounted
def _pop_head(seg, ms):  # pragma: no cover (compiled)
    """heappop(heads): the earliest (finish, segment)."""
    heads = seg.heads
    finish, s = heads[0, 0], int(heads[0, 1])
    ms[_HEADS] -= 1
    fastloop.sift_down(heads, ms[_HEADS])
    return finish, s


# -- arrivals ---------------------------------------------------------------------------------


@uncounted
def _later(now, heap, st, ms):  # pragma: no cover (compiled)
    """Ask for a solve at the end of this instant."""
    if ms[_ARMED] == 0:
        ms[_ARMED] = 1
        push_late(heap, st, now, _FLUSH, 0)


@inlined
def _inject(b0, b1, order, now, mm, heap, st, sent_at):  # pragma: no cover (compiled)
    """Network.start and MaxMin.inject of the sends order[b0:b1] (fastloop.sends): flows alone on their links isolated,
    the others (and the isolated flows they meet, promoted) shared from the end of this instant."""
    wire, flow, link, scratch, ms, host = mm.wire, mm.flow, mm.link, mm.scratch, mm.ms, mm.host
    croutes, nbytes, capacity, latency, pad = wire.croutes, wire.nbytes, wire.capacity, wire.latency, wire.pad
    left, base_time, rate, stamp, iso_start = flow.left, flow.base_time, flow.rate, flow.stamp, flow.iso_start
    iso_rate = flow.iso_rate
    nflows, isolated_on, busy_from, spent = link.nflows, link.isolated_on, link.busy_from, link.spent
    freed, freed_t, used, peak, level = link.freed, link.freed_t, link.used, link.peak, link.level
    joined = scratch.joined
    width = croutes.shape[1]
    for j in range(b0, b1):
        sent_at[order[j]] = now
    for j in range(b0, b1):
        m = np.int64(order[j])
        if croutes[m, 0] == pad or nbytes[m] == 0:
            push(heap, st, now + latency[m], _DELIVER, m, 0, 0.0)
            continue
        idle = len(host.table) == 0  # with a host efficiency no flow is isolated
        for i in range(width):
            k = croutes[m, i]
            if k == pad:
                break
            if nflows[k]:
                idle = False
                break
        if idle:  # MaxMin._isolate
            fastest = np.inf
            for i in range(width):
                k = croutes[m, i]
                if k == pad:
                    break
                if host.alone[k] < fastest:
                    fastest = host.alone[k]
            ms[_STAMP] += 1
            stamp[m], iso_start[m], iso_rate[m] = ms[_STAMP], now, fastest
            for i in range(width):
                k = croutes[m, i]
                if k == pad:
                    break
                isolated_on[k] = m
            push(heap, st, now + nbytes[m] / fastest, _ISOLATED, m, ms[_STAMP], 0.0)
        else:
            for i in range(width):
                k = croutes[m, i]
                if k == pad:
                    break
                p = isolated_on[k]
                if p >= 0:  # MaxMin._promote
                    stamp[p] = 0
                    for h in range(width):
                        q = croutes[p, h]
                        if q == pad:
                            break
                        isolated_on[q] = -1
                    left[p] = max(nbytes[p] - iso_rate[p] * (now - iso_start[p]), 0.0)
                    base_time[p] = now
                    rate[p] = 0.0
                    joined[ms[_JOINED]] = p
                    ms[_JOINED] += 1
            left[m] = nbytes[m]
            base_time[m] = now
            joined[ms[_JOINED]] = m
            ms[_JOINED] += 1
        for i in range(width):
            k = croutes[m, i]
            if k == pad:
                break
            if nflows[k] == 0:
                busy_from[k] = now
                spent[k] = freed[k] = freed_t[k] = used[k] = peak[k] = 0.0
                level[k] = np.inf
            nflows[k] += 1
    if ms[_JOINED]:
        _later(now, heap, st, ms)


@inlined
def _isolated_done(m, mark, now, mm, heap, st):  # pragma: no cover (compiled)
    """An isolated flow finished (unless it was promoted meanwhile)."""
    wire, flow, link = mm.wire, mm.flow, mm.link
    croutes, pad, latency = wire.croutes, wire.pad, wire.latency
    stamp, nflows, isolated_on = flow.stamp, link.nflows, link.isolated_on
    if stamp[m] != mark:
        return
    stamp[m] = 0
    for i in range(croutes.shape[1]):
        k = croutes[m, i]
        if k == pad:
            break
        isolated_on[k] = -1
        nflows[k] -= 1
    push(heap, st, now + latency[m], _DELIVER, m, 0, 0.0)


@inlined
def _join(mm):  # pragma: no cover (compiled)
    """MaxMin._join: the flows that became shared this instant into components, merging the ones each
    touches into the one with the most pieces (ties: the lowest id), the others in id order."""
    wire, flow, link, comp, scratch, ms = mm.wire, mm.flow, mm.link, mm.comp, mm.scratch, mm.ms
    croutes, pad = wire.croutes, wire.pad
    comp_of, alive, following = flow.comp_of, flow.alive, flow.following
    comp_on = link.comp_on
    parent, first, last, size, nparts, living = comp.parent, comp.first, comp.last, comp.size, comp.nparts, comp.living
    check, exists, seg_first, seg_last, deferred = comp.check, comp.exists, comp.seg_first, comp.seg_last, comp.deferred
    fresh, nnew, full = comp.fresh, comp.nnew, comp.full
    seg_next = mm.seg.following
    joined, touched = scratch.joined, scratch.comps
    width = croutes.shape[1]
    root = -1
    for j in range(ms[_JOINED]):
        m = joined[j]
        known = False  # only links of `root` or of no component
        if root >= 0:
            for i in range(width):
                k = croutes[m, i]
                if k == pad:
                    break
                c = comp_on[k]
                if c == root:
                    known = True
                elif c >= 0:
                    known = False
                    break
        if not known:
            count = 0
            for i in range(width):
                k = croutes[m, i]
                if k == pad:
                    break
                if comp_on[k] >= 0:
                    c = _find(parent, comp_on[k])
                    new = True
                    for t in range(count):
                        if touched[t] == c:
                            new = False
                    if new:
                        touched[count] = c
                        count += 1
            if count:
                sort(touched, 0, count, mm.fs[:0], 0)
                root = touched[0]
                for t in range(1, count):
                    if nparts[touched[t]] > nparts[root]:
                        root = touched[t]
                for t in range(count):
                    c = touched[t]
                    if c != root:  # MaxMin._merge
                        parent[c] = root
                        exists[c] = False
                        _concat(first, last, following, root, c)
                        _concat(seg_first, seg_last, seg_next, root, c)
                        size[root] += size[c]
                        nparts[root] += nparts[c]
                        living[root] += living[c]
                        full[root] = True
                        _undue(c, comp, ms)
            else:
                root = ms[_COMPS]
                ms[_COMPS] += 1
                exists[root] = True
                parent[root], check[root], deferred[root] = root, np.inf, np.inf
                first[root] = last[root] = seg_first[root] = seg_last[root] = fresh[root] = -1
                comp.patched[root], comp.pcount[root], comp.igen[root], comp.held_last[root] = 0, -1, -1, -1
            _due(root, comp, scratch, ms)
        following[m] = -1
        comp.igen[root] = -1  # its index lists its flows as of its last solve: it lapses
        if nnew[root] == 0:
            fresh[root] = m
        nnew[root] += 1
        if first[root] < 0:
            first[root] = m
        else:
            following[last[root]] = m
        last[root] = m
        size[root] += 1
        nparts[root] += 1
        living[root] += 1
        comp_of[m] = root
        alive[m] = True
        for i in range(width):
            k = croutes[m, i]
            if k == pad:
                break
            comp_on[k] = root
    ms[_ACTIVE] += ms[_JOINED]
    ms[_JOINED] = 0


# -- solves -----------------------------------------------------------------------------------


@inlined
def _solve(c, now, mm):  # pragma: no cover (compiled)
    """MaxMin._solve: max-min rates of component c's flows from now on; a new departure segment."""
    wire, flow, link, comp, ms, host, seg, ws = mm.wire, mm.flow, mm.link, mm.comp, mm.ms, mm.host, mm.seg, mm.ws
    routes, capacity, batch = wire.routes, wire.capacity, wire.batch
    left, base_time, rate, alive, following = flow.left, flow.base_time, flow.rate, flow.alive, flow.following
    born = flow.born
    busy_from, room, spent, freed, freed_t = link.busy_from, link.room, link.spent, link.freed, link.freed_t
    last, slot, used, peak, level = link.last, link.slot, link.used, link.peak, link.level
    first, tail, size, nparts, nnew = comp.first, comp.last, comp.size, comp.nparts, comp.nnew
    check, epoch, seg_first = comp.check, comp.epoch, comp.seg_first
    seg_next = seg.following
    flows = ws.flows
    m = first[c]
    for i in range(size[c]):
        flows[i] = m
        m = following[m]
    s = seg_first[c]
    tables = _tables(host)
    # one segment and no link re-solved alone since: MaxMin._solve's partial re-solve
    partial = s >= 0 and s == comp.seg_last[c] and not tables and comp.patched[c] == 0
    while s >= 0:
        _drop(s, seg)
        s = seg_next[s]
    if tables:  # MaxMin._capacities, set by _loop for this flush
        capacity = host.scaled
    count = solve_compiled(flows, size[c], alive, left, base_time, rate, born, routes, wire.route_id,
                           mm.scratch.route_slot, capacity, now, batch, busy_from,
                           room, spent, freed, freed_t, last, slot, used, peak, level, partial, ws)
    keep = ws.keep
    for i in range(count - 1):
        following[keep[i]] = keep[i + 1]
    following[keep[count - 1]] = -1
    first[c], tail[c], size[c], nparts[c], nnew[c] = keep[0], keep[count - 1], count, 1, 0
    comp.held_last[c] = -1
    check[c] = np.inf
    epoch[c] += 1
    ms[_SOLVES] += 1
    seg_first[c] = -1
    comp.patched[c] = 0
    if 2 * count < comp.iflows[c]:  # its index (made since its last join: a join lapses it) stands, with
        comp.igen[c] = -1  # the flows that left since in it, until they are half; then made anew (_flush_solve)
    _segment(c, keep, count, ws.finish, mm)


@inlined
def _warm(c, now, mm):  # pragma: no cover (compiled)
    """MaxMin._warm: rates for component c's flows that joined this instant, the others kept, where that
    is still max-min (waterfill.warm_compiled); a departure segment of their own. False: solve c."""
    wire, flow, link, comp, ms, ws = mm.wire, mm.flow, mm.link, mm.comp, mm.ms, mm.ws
    routes, capacity, batch = wire.routes, wire.capacity, wire.batch
    left, base_time, rate, following = flow.left, flow.base_time, flow.rate, flow.following
    busy_from, room, spent, freed, freed_t = link.busy_from, link.room, link.spent, link.freed, link.freed_t
    last, slot, used, peak, level = link.last, link.slot, link.used, link.peak, link.level
    fresh, nnew = comp.fresh, comp.nnew
    new = ws.flows
    m = fresh[c]
    for i in range(nnew[c]):
        new[i] = m
        m = following[m]
    if not warm_compiled(new, nnew[c], left, base_time, rate, routes, capacity, now, batch, busy_from, room, spent,
                         freed, freed_t, last, slot, used, peak, level, ws):
        return False
    _segment(c, new, nnew[c], ws.finish, mm)
    comp.nparts[c], nnew[c] = 1, 0
    ms[_WARM] += 1
    return True


@inlined
def _segment(c, flows, count, finish, mm):  # pragma: no cover (compiled)
    """A departure segment of flows[:count] (finishing at finish[:count]) appended to component c's, its
    run at the arena's end (_fit leaves room)."""
    ms, seg, segment_of = mm.ms, mm.seg, mm.flow.segment_of
    seg_first, seg_last = mm.comp.seg_first, mm.comp.seg_last
    sid = ms[_SEGS]
    ms[_SEGS] += 1
    base = ms[_ARENA]
    ms[_ARENA] += count
    seg.base[sid], seg.size[sid], seg.head[sid], seg.taken[sid], seg.shift[sid] = base, count, 0, 0, -1
    seg.live[sid] = True
    seg.following[sid] = -1
    earliest = finish[0]  # finish[:count].min(), as numpy takes it (a NaN first)
    for i in range(count):
        seg.finish[base + i], seg.flows[base + i], seg.order[base + i] = finish[i], flows[i], i
        segment_of[flows[i]] = sid
        if not np.isnan(earliest) and (np.isnan(finish[i]) or finish[i] < earliest):
            earliest = finish[i]
    if seg_first[c] < 0:
        seg_first[c] = sid
    else:
        seg.following[seg_last[c]] = sid
    seg_last[c] = sid
    _push_head(seg, ms, earliest, sid)  # its first head is sorted when a departure first needs it


@inlined
def _flush_join(now, mm):  # pragma: no cover (compiled)
    """End of an instant, first part: place new shared flows; the components to solve (every due one,
    with a host efficiency every one) into scratch.roots[:ms[_ROOTS]] in id order (repeats side by
    side), and of those that re-solve only their links that ran out (_local) those links (_due_links).
    Returns the most flows listed in one of them or on one such link (what a solve's workspace must
    hold)."""
    comp, scratch, ms, host = mm.comp, mm.scratch, mm.ms, mm.host
    parent, exists, due, size = comp.parent, comp.exists, comp.due, comp.size
    ms[_ARMED] = 0
    _join(mm)
    if len(host.table) > 0 and ms[_ACTIVE]:
        _all_due(comp, scratch, ms)
    stack, roots = scratch.stack, scratch.roots
    count = 0
    for i in range(ms[_STACK]):
        if due[stack[i]]:
            roots[count] = _find(parent, stack[i])
            count += 1
    sort(roots, 0, count, mm.fs[:0], 0)
    ms[_ROOTS] = count
    ms[_PROOM] = ms[_PSEGS] = 0
    most = 0
    for i in range(count):
        c = roots[i]
        if exists[c] and (i == 0 or c != roots[i - 1]):
            if not _local(c, mm):
                most = max(most, size[c])
            elif comp.igen[c] == ms[_IGEN]:
                most = max(most, _due_links(c, now, mm, ms[_PSEGS]))
                ms[_PSEGS] += comp.pcount[c]
            else:  # its index first (_flush_solve): room for it and for re-solving every link
                comp.pcount[c] = -2
                most = max(most, size[c])
                ms[_PROOM] += mm.wire.croutes.shape[1] * comp.living[c]
                ms[_PSEGS] += len(mm.wire.capacity)
    return most


@uncounted
def _flush_solve(now, mm, heap, st):  # pragma: no cover (compiled)
    """End of an instant, second part: solve the components _flush_join chose, in id order: where it
    listed links that ran out, only those (_patch); else where only flows joined one and no component
    merged into it, first try _warm where no link of it was re-solved alone since its solve and no flow
    waits for its next solve (then the new flows wait with them: a _warm of them all, retried at each
    join, gave none rates on the growth logs), then _hold (neither with an efficiency table)."""
    comp, scratch, ms, batch, host = mm.comp, mm.scratch, mm.ms, mm.wire.batch, mm.host
    tables = _tables(host)
    living, exists, due, nnew, full = comp.living, comp.exists, comp.due, comp.nnew, comp.full
    stack, roots = scratch.stack, scratch.roots
    for i in range(ms[_ROOTS]):
        c = roots[i]
        if (i == 0 or c != roots[i - 1]) and exists[c]:
            if comp.pcount[c] == -2:  # its links listed after its index (the second half of due_links)
                _index(c, mm)
                _due_links(c, now, mm, len(mm.wire.capacity))
            if comp.pcount[c] >= 0:
                _patch(c, now, mm, heap, st)
            elif (batch == 0 or living[c] <= mm.wire.exact_flows or tables or full[c] or not 0 < nnew[c] < living[c]
                    or not (comp.patched[c] == 0 and comp.held_last[c] < 0 and _warm(c, now, mm))
                    and not _hold(c, now, mm, heap, st)):
                _solve(c, now, mm)
    for i in range(ms[_STACK]):
        due[stack[i]] = full[stack[i]] = False
    ms[_STACK] = ms[_DUE] = 0
    _arm(now, mm, heap, st)


@uncounted
def _large(c, mm):  # pragma: no cover (compiled)
    """Whether component c is large: more than exact_flows and local_flows flows alive (its joins wait,
    _hold; its links that run out are re-solved alone, _local)."""
    return mm.comp.living[c] > max(mm.wire.exact_flows, mm.wire.local_flows)


@uncounted
def _hold(c, now, mm, heap, st):  # pragma: no cover (compiled)
    """Where component c is large (_large), its flows joined since its solve wait for the next one (rate
    0, no segment: as if sent later) until at most batch x the longest busy period among their links from
    now; a check then solves c whole, unless a solve comes first. False: solve c now (their links' busy
    periods all began now). Only the flows joined this instant are read: those waiting already are
    summed up in comp.wait_from (their links' busy periods cannot restart while they wait: they are on
    them, and no solve of c comes between), and they are the list's tail from comp.fresh[c] on, the new
    ones after comp.held_last[c]."""
    comp, wire, following = mm.comp, mm.wire, mm.flow.following
    croutes, pad, busy_from = wire.croutes, wire.pad, mm.link.busy_from
    if not _large(c, mm):
        return False
    if comp.held_last[c] < 0:
        start, m = now, comp.fresh[c]
    else:
        start, m = comp.wait_from[c], following[comp.held_last[c]]
    while m >= 0:
        for h in range(croutes.shape[1]):
            k = croutes[m, h]
            if k == pad:
                break
            start = min(start, busy_from[k])
        m = following[m]
    when = now + wire.batch * (now - start)
    if when <= now * (1 + TIE):
        return False
    comp.held_last[c], comp.wait_from[c] = comp.last[c], start
    if when < comp.check[c]:
        comp.check[c] = when
        push(heap, st, now + (when - now), _CHECK, c, comp.epoch[c], 0.0)
    mm.ms[_WAITS] += 1
    return True


@uncounted
def _fits(mm, most):  # pragma: no cover (compiled)
    """Whether a flush's solves fit in the model's arrays as they are: a workspace for `most` flows, a
    segment and a head per root and per link re-solved alone, an arena run per flow alive and per flow
    of those links, an index arena for `most` flows (_fit grows them)."""
    seg, ms = mm.seg, mm.ms
    segs = ms[_ROOTS] + ms[_PSEGS]
    return (most <= len(mm.ws.flows) and ms[_SEGS] + segs <= len(seg.live) and ms[_HEADS] + segs <= seg.heads.shape[0]
            and ms[_ARENA] + ms[_ACTIVE] + ms[_PROOM] <= len(seg.finish) and _indexed(mm, most) <= len(mm.index))


@numba.njit(cache=True)
def _larger(a, need):  # pragma: no cover (compiled)
    """Array a (one axis) with room for at least `need` items (twice its length, or more)."""
    bigger = np.empty(max(need, 2 * a.size), a.dtype)
    bigger[:a.size] = a
    return bigger


@numba.njit(cache=True)
def _fit(mm, most):  # pragma: no cover (compiled)
    """The model with room for a flush's solves (_fits): the workspace and the selection's scratch for
    `most` flows, the per-segment arrays and the heads for a segment per root and per link re-solved
    alone, the arena for a run per flow alive and per flow of those links (packed first: _compact, then
    grown where it stays over half full), the index arena (its contents kept)."""
    seg, ms, ws = mm.seg, mm.ms, mm.ws
    finish, flows, order = seg.finish, seg.flows, seg.order
    entries = ms[_ACTIVE] + ms[_PROOM]
    packed = ms[_ARENA] + entries > len(finish)
    if packed:  # in place, before any per-segment array is copied
        _compact(seg, ms)
    pick, heads = seg.pick, seg.heads
    if most > len(ws.flows):
        ws = make_workspace(max(most, 2 * len(ws.flows)), len(ws.links), ws.sub.shape[1], ws.row_of.size > 0)
        pick = np.empty(len(ws.flows), np.int64)
    need = ms[_SEGS] + ms[_ROOTS] + ms[_PSEGS]
    base, size, head, taken, live, following = seg.base, seg.size, seg.head, seg.taken, seg.live, seg.following
    lo, shift = seg.lo, seg.shift
    if need > len(live):
        base, size, head, taken = _larger(base, need), _larger(size, need), _larger(head, need), _larger(taken, need)
        live, following = _larger(live, need), _larger(following, need)
        lo, shift = _larger(lo, need), _larger(shift, need)
    if ms[_HEADS] + ms[_ROOTS] + ms[_PSEGS] > heads.shape[0]:
        heads = grow(heads, ms[_HEADS] + ms[_ROOTS] + ms[_PSEGS])
    if packed and (ms[_ARENA] + entries > len(finish) or 2 * ms[_ARENA] > len(finish)):
        need = ms[_ARENA] + entries
        finish, flows, order = _larger(finish, need), _larger(flows, need), _larger(order, need)
    seg = Segments(base, size, head, taken, live, following, lo, shift, finish, flows, order, pick, heads)
    index = mm.index
    if _indexed(mm, most) > len(index):
        index = _larger(index, _indexed(mm, most))
    return Model(mm.wire, mm.flow, mm.link, mm.comp, mm.scratch, ms, mm.fs, mm.host, seg, ws, index)


# -- local re-solves --------------------------------------------------------------------------
# Where a link of a large component (more than wire.local_flows flows alive) runs out of allowance and no
# flow joined the component this instant, only that link's flows are re-solved (_patch), every other flow
# keeping its rate; the component is solved whole when its link re-solves since its last solve have
# re-solved LOCAL_BUDGET of its flows, or when flows join it. Its index of flows by link (_index) is made
# at its first link re-solve after a join, in one pass over its flows: a solve's cost follows the links
# that ran out, not the component (docs/simulator.md, "Local re-solves"). A whole solve keeps it (the
# flows that left since stay in it, passed over) until half the flows it lists have left.


@uncounted
def _runs_out(k, exact, defer, link):  # pragma: no cover (compiled)
    """When link k will have lost `defer` of what is left of its allowance to the capacity freed on it
    since its last solve, where its projected loss exceeds the allowance (`exact`: none, on a saturated
    link); inf where it does not, or (not `exact`) where what is freed is round-off (ROUNDOFF of its
    rates: link re-solves raise and lower rates on other links, and their sums leave ~1e-10 B/s behind,
    which a link whose allowance is spent would re-solve for at once, over and over at one instant)."""
    free, free_t, lost = link.freed[k], link.freed_t[k], link.spent[k]
    allowance = share_of_room(link.room[k], link.used[k], free)
    if exact and allowance < np.inf:  # a saturated link: its freed capacity is taken up at once
        allowance = 0.0
    if free > (0.0 if exact else ROUNDOFF * link.used[k]) and lost + free * link.last[k] - free_t > allowance:
        return ((allowance - lost) * defer + free_t) / free
    return np.inf


@uncounted
def _local(c, mm):  # pragma: no cover (compiled)
    """Whether due component c re-solves only its links that ran out (_patch): batched, no efficiency
    table, large (_large), no flow joined it since its solve (this instant, or waiting: _hold), and its
    link re-solves since its solve re-solved fewer than LOCAL_BUDGET of its flows."""
    comp, wire, host = mm.comp, mm.wire, mm.host
    return (comp.nnew[c] == 0 and _large(c, mm) and wire.batch > 0
            and not _tables(host) and comp.patched[c] < LOCAL_BUDGET * comp.living[c])


@uncounted
def _due_links(c, now, mm, at):  # pragma: no cover (compiled)
    """Component c's links that ran out by now (_runs_out), into scratch.due_links from `at` (comp.pfirst,
    pcount), their flows added to what this flush needs (ms[_PROOM]); the earliest time another of its
    links runs out into comp.check (_patch's next check). Returns the most flows on one of them."""
    comp, link, ms, index, due = mm.comp, mm.link, mm.ms, mm.index, mm.scratch.due_links
    comp.pfirst[c] = at
    most = 0
    rest = np.inf
    for i in range(comp.lfirst[c], comp.lfirst[c] + comp.nlinks[c]):
        k = np.int64(index[i])
        if link.nflows[k] > 0:
            when = _runs_out(k, False, LOCAL_DEFER, link)
            if when <= now * (1 + TIE):
                due[at] = k
                at += 1
                ms[_PROOM] += link.icount[k]
                most = max(most, link.icount[k])
            else:
                rest = min(rest, when)
    comp.pcount[c] = at - comp.pfirst[c]
    comp.check[c] = rest
    return most


@uncounted
def _patch(c, now, mm, heap, st):  # pragma: no cover (compiled)
    """Re-solve component c's links that _due_links listed, each alone (waterfill.patch_compiled: a
    departure segment of its flows whose rate changed), or where that does not stand with the links that
    held it back, then theirs, up to REGION_ROUNDS times (_members); where none stands, c whole (its
    workspace holds its flows since its last solve: flows only join it through one). Then check c again
    when its next link runs out: the earliest of the others' (_due_links) and of the links whose flows'
    rates changed."""
    link, comp, ms, ws, index = mm.link, mm.comp, mm.ms, mm.ws, mm.index
    due, members, region, rlinks = mm.scratch.due_links, mm.scratch.joined, link.region, mm.scratch.gone
    when = comp.check[c]
    for i in range(comp.pfirst[c], comp.pfirst[c] + comp.pcount[c]):
        k = due[i]
        region[k], rlinks[0], nreg = 0, k, 1
        b, n = link.ibase[k], link.icount[k]
        count, moved, nused = _re_solve(index[b:b + n], n, k, now, mm)
        for _ in range(REGION_ROUNDS):
            if moved >= 0 or nused == 0 or nreg + nused > len(rlinks):
                break
            for h in range(nused):  # the links that held it back join the region
                region[ws.saturated[h]], rlinks[nreg] = nreg, ws.saturated[h]
                nreg += 1
            n = _members(rlinks, nreg, comp.living[c] // 2, mm)
            if n == 0:
                break
            count, moved, nused = _re_solve(members, n, k, now, mm)
        for r in range(nreg):
            region[rlinks[r]] = -1
        if moved < 0:  # none stands (waterfill._held_back): the component whole
            comp.pcount[c] = -1
            _solve(c, now, mm)
            return
        if moved:  # a segment of the flows whose rate changed (the others' finish times stand)
            _segment(c, ws.flows, moved, ws.part, mm)
        if count:
            comp.patched[c] += count
            for u in range(nused):  # the links of its flows (the region among them), as patch_compiled numbered them
                if link.nflows[ws.links[u]] > 0:
                    when = min(when, _runs_out(ws.links[u], False, LOCAL_DEFER, link))
        ms[_LOCAL] += 1
    comp.pcount[c] = -1
    comp.epoch[c] += 1
    comp.check[c] = when
    if when < np.inf:
        push(heap, st, now + max(when - now, 0.0), _CHECK, c, comp.epoch[c], 0.0)


@uncounted
def _re_solve(flows, n, k, now, mm):  # pragma: no cover (compiled)
    """waterfill.patch_compiled of flows[:n], the flows of the region marked in link.region (k the link that
    ran out), on the model's arrays."""
    wire, flow, link = mm.wire, mm.flow, mm.link
    return patch_compiled(flows, n, k, link.region, flow.alive, flow.left, flow.base_time, flow.rate, flow.born,
                          wire.routes, wire.capacity, now, wire.batch, link.busy_from, link.room, link.spent,
                          link.freed, link.freed_t, link.last, link.slot, link.used, link.peak, link.level, mm.ws)


@uncounted
def _members(rlinks, nreg, most, mm):  # pragma: no cover (compiled)
    """The flows of a region's links rlinks[:nreg] (marked in link.region by their place there) into
    scratch.joined, each once (under the first of the region's links it uses). Returns how many; 0 where
    they are more than `most` (then a whole solve costs little more) or would not leave the arena room
    for the rest of the flush."""
    link, ms, index, croutes, region, members = mm.link, mm.ms, mm.index, mm.wire.croutes, mm.link.region, mm.scratch.joined
    need = 0
    for r in range(nreg):
        need += link.icount[rlinks[r]]
    if need > len(members) or ms[_ARENA] + need + ms[_ACTIVE] + ms[_PROOM] > len(mm.seg.finish):
        return 0
    count = 0
    for r in range(nreg):
        j = rlinks[r]
        for at in range(link.ibase[j], link.ibase[j] + link.icount[j]):
            f = index[at]
            first = True
            for h in range(croutes.shape[1]):
                if 0 <= region[croutes[f, h]] < r:
                    first = False
            if first:
                members[count] = f
                count += 1
    return count if count <= most else 0


@uncounted
def _indexed(mm, most):  # pragma: no cover (compiled)
    """The index arena a solve of `most` flows needs (none at most wire.local_flows): its links and a
    run per incidence, at most 2 x most x the route width."""
    return 2 * most * mm.wire.croutes.shape[1] if most > mm.wire.local_flows and mm.wire.batch > 0 else 0


@uncounted
def _index(c, mm):  # pragma: no cover (compiled)
    """Component c's index: its flows alive listed in ws.keep, then its links (comp.lfirst, nlinks) and
    per link its flows (link.ibase, icount) at the index arena's end; the arena is started over where it
    has no room (a new generation, ms[_IGEN]: the other components' indexes lapse)."""
    croutes, pad = mm.wire.croutes, mm.wire.pad
    keep, index, ibase, icount, ms = mm.ws.keep, mm.index, mm.link.ibase, mm.link.icount, mm.ms
    width = croutes.shape[1]
    count = 0
    m = mm.comp.first[c]
    for _ in range(mm.comp.size[c]):
        if mm.flow.alive[m]:
            keep[count] = m
            count += 1
        m = mm.flow.following[m]
    if ms[_INDEX] + _indexed(mm, count) > len(index):
        ms[_INDEX] = 0
        ms[_IGEN] += 1
    at = ms[_INDEX]
    for i in range(count):
        for h in range(width):
            k = croutes[keep[i], h]
            if k == pad:
                break
            icount[k] = 0
    nlinks = 0
    for i in range(count):
        for h in range(width):
            k = croutes[keep[i], h]
            if k == pad:
                break
            if icount[k] == 0:
                index[at + nlinks] = k
                nlinks += 1
            icount[k] += 1
    pos = at + nlinks
    for j in range(nlinks):
        k = index[at + j]
        ibase[k] = pos
        pos += icount[k]
        icount[k] = 0
    for i in range(count):
        for h in range(width):
            k = croutes[keep[i], h]
            if k == pad:
                break
            index[ibase[k] + icount[k]] = keep[i]
            icount[k] += 1
    mm.comp.lfirst[c], mm.comp.nlinks[c], mm.comp.igen[c], mm.comp.iflows[c] = at, nlinks, ms[_IGEN], count
    ms[_INDEX] = pos


# -- departures -------------------------------------------------------------------------------


@uncounted
def _arm(now, mm, heap, st):  # pragma: no cover (compiled)
    """One event at the earliest finish among the segments (older events become stale)."""
    ms, fs, seg = mm.ms, mm.fs, mm.seg
    live = seg.live
    while ms[_HEADS] and not live[int(seg.heads[0, 1])]:
        _pop_head(seg, ms)
    if not ms[_HEADS]:
        return
    due = seg.heads[0, 0]
    if due != fs[0]:
        fs[0] = due
        ms[_VERSION] += 1
        push(heap, st, now + max(due - now, 0.0), _DEPART, ms[_VERSION], 0, 0.0)


@inlined
def _depart(version, now, mm, heap, st):  # pragma: no cover (compiled)
    """MaxMin._depart: retire the shared flows that finish now; mark their components due where freed
    capacity exceeds the allowance, or schedule a check when it will; deliver them."""
    wire, flow, link, comp = mm.wire, mm.flow, mm.link, mm.comp
    scratch, ms, fs, host = mm.scratch, mm.ms, mm.fs, mm.host
    croutes, latency, pad, batch = wire.croutes, wire.latency, wire.pad, wire.batch
    left, rate, alive, comp_of = flow.left, flow.rate, flow.alive, flow.comp_of
    nflows, comp_on, freed, freed_t = link.nflows, link.comp_on, link.freed, link.freed_t
    parent, living, check, epoch = comp.parent, comp.living, comp.check, comp.epoch
    exists, due, deferred = comp.exists, comp.due, comp.deferred
    gone, waiting, seg = scratch.gone, scratch.comps, mm.seg
    if version != ms[_VERSION]:
        return
    fs[0] = np.inf
    horizon = now * (1 + TIE)
    count = 0
    while ms[_HEADS] and seg.heads[0, 0] <= horizon:
        _, s = _pop_head(seg, ms)
        if not seg.live[s]:
            continue
        count = _take(s, horizon, seg, flow, gone, count)
        upcoming = _next(s, seg, flow)
        if upcoming < 0:
            _drop(s, seg)
        else:
            _push_head(seg, ms, upcoming, s)
    for i in range(count):
        alive[gone[i]] = False
    ms[_ACTIVE] -= count
    nwait = 0
    width = croutes.shape[1]
    for i in range(count):
        m = gone[i]
        r = rate[m]
        c = _find(parent, np.int64(comp_of[m]))
        living[c] -= 1
        if not living[c]:  # its last flow: nothing left to re-solve
            exists[c] = False
            _undue(c, comp, ms)
        exact = batch == 0 or living[c] <= wire.exact_flows
        for h in range(width):
            k = croutes[m, h]
            if k == pad:
                break
            nflows[k] -= 1
            if nflows[k] == 0:
                comp_on[k] = -1
                continue
            freed[k] += r
            freed_t[k] += r * now
            when = _runs_out(k, exact, LOCAL_DEFER if comp.igen[c] == ms[_IGEN] else DEFER, link)
            if when < np.inf and living[c]:
                if exact or when <= now:
                    _due(c, comp, scratch, ms)
                    comp.full[c] = True
                else:
                    if deferred[c] == np.inf:
                        waiting[nwait] = c
                        nwait += 1
                    deferred[c] = min(deferred[c], when)
    for i in range(nwait):
        c = waiting[i]
        when = deferred[c]
        deferred[c] = np.inf
        if exists[c] and not due[c] and when < check[c]:
            check[c] = when
            push(heap, st, now + (when - now), _CHECK, c, epoch[c], 0.0)
    if len(host.table) and count and ms[_ACTIVE]:
        _all_due(comp, scratch, ms)
    if ms[_DUE]:
        _later(now, heap, st, ms)
    else:
        _arm(now, mm, heap, st)
    for i in range(count):
        push(heap, st, now + latency[gone[i]], _DELIVER, gone[i], 0, 0.0)


@uncounted
def _check(c, mark, now, mm, heap, st):  # pragma: no cover (compiled)
    """A deferred departure's idle capacity has used up its allowance: re-solve component c, unless it
    was solved (or merged into another) since."""
    comp, scratch, ms = mm.comp, mm.scratch, mm.ms
    if comp.exists[c] and comp.epoch[c] == mark:
        _due(c, comp, scratch, ms)
        comp.full[c] = True
        _later(now, heap, st, ms)


# -- the loop ---------------------------------------------------------------------------------


@inlined
def _rank(r, s, step, now, rank, prog, mm, heap, st, out, sent_at):  # pragma: no cover (compiled)
    """Advance the ranks and the program from rank r's (or node r's) `step`, injecting where they send.
    Schedules at most one event per message injected, rank and node, and two more. (Inlined: one call
    of advance, of _inject.)"""
    while True:
        slot = advance(r, s, step, now, rank, prog, heap, st, out)
        if slot < 0:
            return
        ids, first, stop = sends(slot, rank, st)
        _inject(first, stop, ids, now, mm, heap, st, sent_at)
        r, s = resume(slot, rank)
        step = SENT


@uncounted
def _room(st, ms, extra):  # pragma: no cover (compiled)
    """The heap rows the next event's step may need: a model's step schedules at most two events per
    shared flow and eight more, a rank's step (_rank, twice for a delivery) one per message not yet
    injected, one per rank and node (`extra`) and two more."""
    return st[fastloop.SIZE] + max(2 * ms[_ACTIVE] + 8, st[fastloop.UNSENT] + 2 * extra + 4)


@uncounted
def _events(now, rank, prog, messages, mm, extra, heap, st, out, sent_at, delivered_at):  # pragma: no cover (compiled)
    """Run the heap's events (the ranks', isolated flows' ends, departures, flushes, deliveries, checks)
    until it is empty, the heap is too small for the next step (_room) or a flush's solves need more room
    (_fits) or an efficiency table's capacities: then that flush is held (ms[_HELD], after _flush_join)
    for _loop to finish. Returns the time of the last event run."""
    stage_of, src_of, dst_of = messages.stage, messages.src, messages.dst
    ms, host = mm.ms, mm.host
    tables = _tables(host)
    while st[fastloop.SIZE] > 0:
        if _room(st, ms, extra) > heap.shape[0]:
            break
        now, kind, a, b, c = pop(heap, st)
        if kind == _FLUSH:
            most = _flush_join(now, mm)
            if tables or not _fits(mm, most):
                ms[_HELD], ms[_MOST] = 1, most
                break
            _flush_solve(now, mm, heap, st)
        elif kind == _DEPART:
            _depart(a, now, mm, heap, st)
        elif kind == _ISOLATED:
            _isolated_done(a, b, now, mm, heap, st)
        elif kind == _CHECK:
            _check(a, b, now, mm, heap, st)
        else:  # a rank's step, or a delivery (Network._delivered, LogReplay._delivered): then the sender's
            s, step, count = b, kind, 1  # stage, then the receiver's, each where it has all its messages now
            if kind == _DELIVER:
                delivered_at[a] = now
                s, step, count = np.int64(stage_of[a]), FINISH, 2  # int32 columns (fastloop.IDS), read as int64
            for i in range(count):  # one call of _rank (inlined)
                r = a if kind != _DELIVER else np.int64(src_of[a]) if i == 0 else np.int64(dst_of[a])
                if kind != _DELIVER or arrived(r, s, rank):
                    _rank(r, s, step, now, rank, prog, mm, heap, st, out, sent_at)
    return now


@uncounted
def _root(x, rank, prog, mm, heap, st, out, sent_at):  # pragma: no cover (compiled)
    """Start node x of the program at time 0 (a root)."""
    _rank(x, 0, START, 0.0, rank, prog, mm, heap, st, out, sent_at)


@numba.njit(cache=True)
def _held(now, mm, most, heap, st):  # pragma: no cover (compiled)
    """A flush's solves after _flush_join (`most`: its largest component's flows), where _events held it:
    the model grown first where they need more room (_fits, _fit), the capacities of the efficiency tables
    set (MaxMin._capacities: h counts the active and isolated flows; no flow is isolated under a table h).
    Returns the model (grown or not)."""
    if not _fits(mm, most):
        mm = _fit(mm, most)
    host = mm.host
    if _tables(host):
        capacities(mm.wire.capacity, host.nic, host.eff, mm.link.nflows, host.table, mm.ms[_ACTIVE], host.scaled)
    _flush_solve(now, mm, heap, st)
    return mm


@numba.njit(cache=True)
def _loop(wire, flow, link, comp, scratch, ms, fs, host, seg, ws, index, rank, messages, prog, extra, st, out,
          sent_at, delivered_at):  # pragma: no cover (compiled)
    """The program's roots start at time 0, in order, then Clock.run(): events in (time, priority, order
    of scheduling) order. Returns the time of the last event. wire..ws: the model's arrays (model_state, a
    `Model`'s fields); the segments and the solves' workspace are grown here before a flush that needs
    more (_fits, _fit), as the heap is before a step (_room). The events run in _events (uncounted), which
    leaves here only for that and the efficiency tables' flushes."""
    mm = Model(wire, flow, link, comp, scratch, ms, fs, host, seg, ws, index)
    heap = np.empty((len(sent_at) + 3 * extra + 16, fastloop.ROW))
    now = 0.0
    for x in prog.roots:
        need = st[fastloop.SIZE] + st[fastloop.UNSENT] + extra + 2
        if need > heap.shape[0]:
            heap = grow(heap, need)
        _root(x, rank, prog, mm, heap, st, out, sent_at)
    while True:
        if ms[_HELD]:  # a flush that needs more room or the tables' capacities
            ms[_HELD] = 0
            mm = _held(now, mm, ms[_MOST], heap, st)
        if st[fastloop.SIZE] == 0:
            return now
        need = _room(st, ms, extra)
        if need > heap.shape[0]:
            heap = grow(heap, need)
        now = _events(now, rank, prog, messages, mm, extra, heap, st, out, sent_at, delivered_at)


# -- the general path's steps (models/maxmin.MaxMin) ------------------------------------------------
# Each runs one protocol call or one of the model's events on the state of model_state and a heap of
# its own (fastloop's, emptied by the caller after each step): the events the step schedules (deliveries,
# isolated flows' ends, departures, checks, the end-of-instant flush) are left on it for MaxMin to hand
# to the network's clock, in (time, order) order.


@uncounted
def inject_step(ids, now, mm, heap, st):  # pragma: no cover (compiled)
    """MaxMin.inject: flows `ids` start now (_inject). The heap needs room for len(ids) + 1 events."""
    _inject(0, len(ids), ids, now, mm, heap, st, mm.flow.born)


@uncounted
def isolated_step(m, mark, now, mm, heap, st):  # pragma: no cover (compiled)
    """MaxMin._isolated_done: isolated flow m's end (stamp `mark`). One event at most."""
    _isolated_done(m, mark, now, mm, heap, st)


@uncounted
def check_step(c, mark, now, mm, heap, st):  # pragma: no cover (compiled)
    """MaxMin._check: component c's deferred check (epoch `mark`). One event at most."""
    _check(c, mark, now, mm, heap, st)


@uncounted
def depart_step(version, now, mm, heap, st):  # pragma: no cover (compiled)
    """MaxMin._depart: the departure event `version`. Two events per shared flow and one more at most."""
    _depart(version, now, mm, heap, st)


@numba.njit(cache=True)
def flush_step(now, mm, heap, st):  # pragma: no cover (compiled)
    """MaxMin._flush: the end of an instant (joins, solves; _held). Returns the model, grown where its
    solves needed more room. One event at most."""
    return _held(now, mm, _flush_join(now, mm), heap, st)
