"""What the compiled replays (zensim.net.fastfifo, zensim.net.fastmaxmin) share: the event heap that
stands for `Clock`, the ranks' stage program that stands for `LogReplay`, and the program that starts
the ranks of several clients (`Program`), compiled with numba.

They replay the message logs of one or several clients (LogReplay) of a network that carries nothing
else, and give the general path's times bit for bit: the same events scheduled in the same order (so
ties at one instant break the same way) and the same floating-point operations. A model's loop pops
events, runs its own (hops, departures, solves) and calls `advance` for the ranks and the program;
where `advance` returns a slot, the model injects that slot's sends (`Network.start`) and calls
`advance` again with `SENT` for the slot's rank.

Ranks are numbered across clients (client c's rank r is global rank base[c] + r) and so are their
(rank, stage) slots. A `Program` says when each rank starts: a graph of nodes, each a timer (a
`Network.schedule` of its seconds) or a client's rank (`LogReplay.start_rank`, done when the rank has
ended its last stage); a node starts once all its predecessors are done, and a node that is done
starts its successors in the order they were linked, each with everything that follows from it at
that instant before the next (the order of the general path's nested callbacks). Nodes without
predecessors start at time 0 in the order they were made. The one-log replay is the program of its
ranks, 0..n-1, each a node of its own; the training timeline's iterations are one program
(zensim.train.timeline).

An event row (float64): time, order, kind, three arguments. `order` is the scheduling sequence
number, plus 2**52 for a `late` event (Clock.LATE: after every ordinary event of its instant), so
one comparison of (time, order) gives Clock's (time, priority, sequence) order.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numba
import numpy as np

from zensim.net.clock import Clock
from zensim.net.cores import TOGETHER

if TYPE_CHECKING:
    from zensim.net.models.base import NetworkView, ReplayNetwork

# event kinds of the stage program and the program (models number theirs from MODEL on); START is an
# entry of `advance`, never an event
SEND, END, BEGIN, SENT, FINISH, NODE, START, POST, CORES, MODEL = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
# st: the loop's integer state (STATE of them): the heap's size, the scheduling sequence, events so far, the
# program's stack depth; the jobs of shared processors done at the last CORES event (those resumed so far,
# how many), the CORES events in the heap, and the messages not yet injected (`sends` counts them down)
SIZE, SEQ, EVENTS, DEPTH, RESUMED, DONE_JOBS, CORE_EVENTS, UNSENT = range(8)
STATE = 8
_LATE = float(2**52)
ROW = 6
TIMER, RANK = 0, 1  # node kinds
# message ids, (rank, stage) slots and per-slot message counts: int32, so a network of 2**31 messages or
# slots is refused (`schedule`); bytes, times and global event counts stay int64 / float64
IDS = np.int32
_WAIT, _DONE = -1, -2  # a rank waits for work or messages / has ended its last stage

# The decorator of the functions an event's common path calls (here and in the models' loops): compiled
# without numba's reference counts. A compiled function takes a reference (an atomic add, and drops it
# on return) on every array of every tuple argument it binds, at each call: for the state tuples of the
# loops, 30 to 80 arrays a call, that was most of the CPU of an event (docs/simulator.md, "floor per
# event"). Such a function allocates no array (numba refuses to compile it if it does) and returns no
# array to a caller that counts references (`sends` returns one of the schedule's arrays, to callers
# compiled this way only); the arrays it reads are kept alive by the loop that made them.
uncounted = numba.njit(cache=True, _nrt=False)
# The same, and inlined into its callers (numba's inlining, in their code, which must be uncounted too): a
# call passes every array of its tuple arguments as separate machine words, a few hundred for the
# loops' state, pushed on the stack at each call. For the per-event steps, each called from a few places.
inlined = numba.njit(cache=True, _nrt=False, inline="always")

# The ranks' stage program as the compiled loops take it (`schedule`), its arrays read by name: per network
# message id in stage order, slot by slot (`order`), and each slot's run of it (`bounds`); per slot the
# messages still to be delivered (`pending`, counted down), whether its sends are injected (`sent`), its
# pre, post and exchange-CPU seconds; per rank its stages, first slot and program node; per slot its rank;
# the rendezvous state (`held`) and the shared host processors' state (`cores`). A named tuple: numba
# compiles `rank.pending` as it does a position, and NUMBA_DISABLE_JIT=1 runs the same code as Python.
Ranks = namedtuple("Ranks", "order bounds pending sent pre post stages slot_base slot_rank node_of exchange held cores")
# With rendezvous (Costs.rendezvous) the messages held for their receiver's slot (`sends`): per message its
# receiver (`dst`) and the next message held for the same slot (`following`), per slot the first and last
# held, and room for one slot's injection (`group`); without, arrays of length 0.
Held = namedtuple("Held", "dst first last following group")
# With shared host processors (Costs.host_cores; zensim.net.cores.SharedCores, one per host): the cores and
# other processes (`setting`), per rank its host; per host the time of its last advance, the version of
# its last armed event, its jobs' count and their first place in `jobs`; the jobs (ranks, a run per host,
# in the order they came); per rank (its one job) the seconds of work `left`, the step (`then`) and stage
# to resume it at; the ranks whose jobs the last CORES event retired (`done`). Without, arrays of length 0.
Cores = namedtuple("Cores", "setting host time version count first jobs left then stage done")
# A Program as the compiled loops take it (Program.arrays): per node its kind, seconds (a timer) and
# target (a rank: its global number, else -1); its successors succ[succ_start[x]:succ_start[x + 1]] and
# its predecessors not yet done (`join`, counted down); the nodes without predecessors (`roots`); the
# stack of nodes done whose successors are being started (node and next position); per node when it
# began and when it was done.
Nodes = namedtuple("Nodes", "kind seconds target succ_start succ join roots stack_node stack_pos began ended")
# Per network message id its stage and its sender's and receiver's global ranks.
Messages = namedtuple("Messages", "stage src dst")


def alone(net: ReplayNetwork, model: str) -> bool:
    """Whether a compiled loop gives the general path's times on this network: the `model` model,
    nothing sent or scheduled yet, the network's own clock (not a SimPy environment's, which other
    processes share). Every cost a calibrated profile sets is covered: the exchange's own CPU
    (Costs.exchange), rendezvous (Costs.rendezvous), shared host processors (Costs.host_cores,
    host_others) and the NIC and host efficiency tables."""
    return isinstance(net.clock, Clock) and net.model.name == model and net.clock.events == 0


class Program:
    """When the ranks of a network's clients start (module docstring): nodes, timers or client ranks,
    and the links between them, as the compiled loops take them."""

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.seconds: list[float] = []
        self.client: list[int] = []  # RANK nodes: index of the client (in the list given to `arrays`)
        self.index: list[int] = []  # RANK nodes: the rank's number in its client
        self.links: list[list[int]] = []  # per node its successors, in the order linked
        self.join: list[int] = []  # per node its predecessors

    def _node(self, kind: int, seconds: float, client: int, rank: int) -> int:
        self.kind.append(kind)
        self.seconds.append(seconds)
        self.client.append(client)
        self.index.append(rank)
        self.links.append([])
        self.join.append(0)
        return len(self.kind) - 1

    def timer(self, seconds: float) -> int:
        """A node that is done `seconds` after it starts (at once for seconds <= 0); its id."""
        return self._node(TIMER, float(seconds), -1, -1)

    def rank(self, client: int, r: int) -> int:
        """A node that starts rank r of client `client` and is done when the rank has ended; its id."""
        return self._node(RANK, 0.0, client, r)

    def then(self, before: int, after: int) -> None:
        """Node `after` waits for node `before` (and its other predecessors)."""
        self.links[before].append(after)
        self.join[after] += 1

    def arrays(self, base: np.ndarray) -> Nodes:
        """The program as the compiled loop takes it (`Nodes`), with `base` per client its first global
        rank (and the number of ranks last). ValueError if a node names no rank of the clients, or a rank twice."""
        count = len(self.kind)
        target = np.full(count, -1, np.int64)
        ranks = np.array(self.kind, np.int64) == RANK
        client, index = np.array(self.client, np.int64)[ranks], np.array(self.index, np.int64)[ranks]
        if len(client) and (client.min() < 0 or client.max() >= len(base) - 1 or index.min() < 0
                            or (index >= base[client + 1] - base[client]).any()):
            raise ValueError("a program starts ranks of the clients it is given only")
        target[ranks] = base[client] + index
        if len(np.unique(target[ranks])) < ranks.sum():
            raise ValueError("a program starts each rank of its clients at most once")
        succ_start = np.zeros(count + 1, np.int64)
        succ_start[1:] = np.cumsum([len(x) for x in self.links])
        succ = np.array([y for x in self.links for y in x], np.int64)
        join = np.array(self.join, np.int64)
        roots = np.flatnonzero(join == 0).astype(np.int64)
        return Nodes(np.array(self.kind, np.int64), np.array(self.seconds, np.float64), target, succ_start, succ, join,
                     roots, np.zeros(count, np.int64), np.zeros(count, np.int64), np.full(count, np.nan),
                     np.full(count, np.nan))


def schedule(net: ReplayNetwork, clients: Sequence, program: Program) -> tuple[Ranks, Messages, dict, Nodes]:
    """The clients' schedules (LogReplay.arrays) as one, ranks and slots numbered across clients: `rank`
    (`Ranks`, its `held` a `Held`, its `cores` a `Cores`), `messages` (`Messages`) and `sizes` (ranks,
    slots, linked), with the program's arrays
    (`Nodes`). ValueError unless the clients' messages are all the network's. One client (a replay)
    lends its own arrays, read only, where no renumbering is needed: no copies per message but
    `pending`, which the loop counts down."""
    base = np.cumsum([0] + [c.log.n for c in clients]).astype(np.int64)
    slots = np.cumsum([0] + [c.log.n * c.stages for c in clients]).astype(np.int64)
    covered = 0
    for first, stop in sorted((c.first, c.ids.stop) for c in clients):
        if first != covered:
            break
        covered = stop
    if covered != net.count:
        raise ValueError("the compiled replay runs its clients alone on their network: it carries messages of "
                         "no client given")
    if max(net.count, int(slots[-1])) >= 2**31:
        raise ValueError(f"the compiled replay numbers messages and slots with int32: {net.count} messages, "
                         f"{int(slots[-1])} slots reach 2**31")
    alone = len(clients) == 1

    def by_message(field: str, shift: np.ndarray) -> np.ndarray:
        """Per network message id the clients' column `field` plus `shift[client]`."""
        if alone:
            return clients[0].arrays[field] + int(shift[0]) if shift[0] else clients[0].arrays[field]
        out = np.empty(net.count, IDS)
        for client, by in zip(clients, shift.tolist()):
            out[client.first: client.ids.stop] = client.arrays[field] + by
        return out

    def joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        """The parts end to end as a contiguous array of `dtype` (the one part itself if it is one)."""
        return np.ascontiguousarray(parts[0] if len(parts) == 1 else np.concatenate(parts + [np.zeros(0, dtype)]),
                                    dtype)

    stage_of = by_message("stage", np.zeros(len(clients), np.int64))
    src_of, dst_of = by_message("src", base), by_message("dst", base)
    order = joined([c.arrays["order"] + c.first if c.first else c.arrays["order"] for c in clients], IDS)
    offsets = np.cumsum([0] + [len(c.ids) for c in clients]).tolist()
    bounds = joined([np.zeros(1, IDS)] + [c.arrays["bounds"][1:] + at for c, at in zip(clients, offsets)]
                    if not alone else [clients[0].arrays["bounds"]], IDS)
    pending = np.array(joined([c.arrays["pending"] for c in clients], IDS))  # a copy: the loop counts down
    pre, post, exchange = (joined([c.arrays[name] for c in clients], np.float64)
                           for name in ("pre", "post", "exchange"))
    stages = joined([np.full(c.log.n, c.stages, np.int64) for c in clients], np.int64)
    slot_base = np.repeat(slots[:-1], [c.log.n for c in clients]) + np.concatenate(
        [np.arange(c.log.n) * c.stages for c in clients] + [np.zeros(0, np.int64)])
    slot_rank = np.repeat(np.arange(len(stages), dtype=IDS), stages)
    held = Held(np.zeros(0, IDS), np.zeros(0, IDS), np.zeros(0, IDS), np.zeros(0, IDS), np.zeros(0, IDS))
    if net.costs.rendezvous:  # a slot injects at most its own sends and the ones it receives
        held = Held(dst_of, np.full(int(slots[-1]), -1, IDS), np.full(int(slots[-1]), -1, IDS),
                    np.full(net.count, -1, IDS), np.empty(int(pending.max(initial=0)), IDS))
    prog = program.arrays(base)
    ranks = len(stages)
    cores = Cores(np.zeros(0), np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64),
                  np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64),
                  np.zeros(0, np.int64), np.zeros(0, np.int64))
    if net.costs.host_cores is not None:
        host = np.concatenate([np.asarray(c.host, np.int64) for c in clients] + [np.zeros(0, np.int64)])
        # per host its jobs (at most one per rank: a rank waits for its work) in a run of `jobs`
        on_host = np.bincount(host, minlength=1)
        first_job = np.concatenate(([0], np.cumsum(on_host)[:-1])).astype(np.int64)
        cores = Cores(np.array([net.costs.host_cores, net.costs.host_others], np.float64), host,
                      np.zeros(len(on_host)), np.zeros(len(on_host), np.int64), np.zeros(len(on_host), np.int64),
                      first_job, np.zeros(ranks, np.int64), np.zeros(ranks), np.zeros(ranks, np.int64),
                      np.zeros(ranks, np.int64), np.zeros(ranks, np.int64))
    node_of = np.full(len(stages), -1, np.int64)
    node_of[prog.target[prog.kind == RANK]] = np.flatnonzero(prog.kind == RANK)
    rank = Ranks(order, bounds, pending, np.zeros(int(slots[-1]), np.bool_), pre, post, stages,
                 slot_base.astype(np.int64), slot_rank, node_of, exchange, held, cores)
    sizes = {"ranks": len(stages), "slots": int(slots[-1]), "linked": len(prog.succ) > 0}
    return rank, Messages(stage_of, src_of, dst_of), sizes, prog


def compact_routes(net: ReplayNetwork, first: int = 0) -> np.ndarray:
    """Every message's route (from message `first` on) with the padding last (Network.route_tuples'
    order), in the network's dtype (int32): the network's own rows where they are so already (every
    fabric's routes are)."""
    routes = net.routes[first:net.count]
    pad = routes == net.num_links
    if not (pad[:, :-1] & ~pad[:, 1:]).any():
        return routes
    order = np.argsort(pad, axis=1, kind="stable")
    return np.ascontiguousarray(np.take_along_axis(routes, order, axis=1))


def grow_routes(net: ReplayNetwork, routes: np.ndarray | None, rows: int,
                size: int | None = None) -> tuple[np.ndarray, int]:
    """A general path adapter's compacted routes (compact_routes) brought up to the messages declared so far:
    `routes`, whose first `rows` rows hold those of the first `rows` messages, with the rows of the messages
    declared since written in place; with `size`, in a new array of `size` rows instead (the first `rows`
    copied from `routes`, None for none; the rows after the messages all padding). Returns the array and
    the rows it holds (net.count)."""
    count = net.count
    if size is not None:
        grown = np.full((size, net.routes.shape[1]), net.num_links, dtype=net.routes.dtype)
        if routes is not None:
            grown[:rows] = routes[:rows]
        routes = grown
    if count > rows:
        routes[rows:count] = compact_routes(net, rows)
    return routes, count


def state(messages: int) -> np.ndarray:
    """The loop's integer state (`st`) at the start: an empty heap, `messages` messages not yet injected."""
    st = np.zeros(STATE, np.int64)
    st[UNSENT] = messages
    return st


def hand_over(net: NetworkView, heap: np.ndarray, st: np.ndarray, deliver: int,
              steps: Mapping[int, tuple[Callable[..., None], int]]) -> None:
    """The events a model's compiled step left on `heap` (a general path's adapter: models/fifo.py,
    models/maxmin.py), taken off it and put on the network's clock in (time, order) order, the order a
    clock breaks ties in (the scheduling sequence, late events after the others): an event of kind
    `deliver` as net.deliver_after of its message (column a); one of kind k as steps[k] = (call, n): call
    at its time with the first n of its columns a, b (as int) and c, or at the end of this instant
    (clock.late) where n is -1."""
    count = int(st[SIZE])
    st[SIZE] = 0
    rows = heap[:count].tolist()
    if count > 1:
        rows.sort()
    clock = net.clock
    now = clock.now
    for t, _, kind, a, b, c in rows:
        if kind == deliver:
            net.deliver_after(t - now, int(a))
            continue
        call, n = steps[kind]
        if n < 0:
            clock.late(call)
        else:
            clock.at(t - now, call, *(int(a), int(b), c)[:n])


def finish(net: ReplayNetwork, now: float, st: np.ndarray, sent_at: np.ndarray, delivered_at: np.ndarray) -> None:
    """Hand a compiled run's message times, clock and event count back to the network."""
    net.sent_at[:net.count] = sent_at
    net.delivered_at[:net.count] = delivered_at
    net.clock.now = now
    net.clock.events = int(st[EVENTS])


@inlined
def _move(heap, to, row):  # pragma: no cover (compiled)
    """heap[to] = heap[row], column by column (an event row's six written out: 15% off a pop)."""
    if heap.shape[1] == ROW:
        heap[to, 0], heap[to, 1], heap[to, 2] = heap[row, 0], heap[row, 1], heap[row, 2]
        heap[to, 3], heap[to, 4], heap[to, 5] = heap[row, 3], heap[row, 4], heap[row, 5]
    else:
        for j in range(heap.shape[1]):
            heap[to, j] = heap[row, j]


@uncounted
def sift_up(heap, i, key, order):  # pragma: no cover (compiled)
    """Make room for a row keyed (key, order) at the end `i` of a heap (rows ordered by their first two
    columns); returns the index where it goes."""
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent, 0] < key or (heap[parent, 0] == key and heap[parent, 1] < order):
            break
        _move(heap, i, parent)
        i = parent
    return i


@uncounted
def sift_down(heap, size):  # pragma: no cover (compiled)
    """Remove row 0 of a heap of `size` + 1 rows: its last row (index `size`) takes the place. Floyd's way,
    as C++'s std::pop_heap: the hole goes down to a leaf by the earlier child (one comparison a level),
    then the last row up from there (rarely far: it is among the latest)."""
    if size == 0:
        return
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and (heap[right, 0] < heap[child, 0]
                             or (heap[right, 0] == heap[child, 0] and heap[right, 1] < heap[child, 1])):
            child = right
        _move(heap, i, child)
        i = child
    i = sift_up(heap, i, heap[size, 0], heap[size, 1])
    _move(heap, i, size)


@uncounted
def _schedule(heap, st, time, late, kind, a, b, c):  # pragma: no cover (compiled)
    seq = st[SEQ]
    st[SEQ] = seq + 1
    st[EVENTS] += 1
    order = seq + late
    i = sift_up(heap, st[SIZE], time, order)
    st[SIZE] += 1
    heap[i, 0], heap[i, 1], heap[i, 2], heap[i, 3], heap[i, 4], heap[i, 5] = time, order, kind, a, b, c


@uncounted
def push(heap, st, time, kind, a, b, c):  # pragma: no cover (compiled)
    """Schedule an event at `time` (after those already scheduled for that time): Clock.at. Arguments:
    two integers and a float."""
    _schedule(heap, st, time, 0.0, kind, a, b, c)


@uncounted
def push_late(heap, st, time, kind, a):  # pragma: no cover (compiled)
    """Schedule an event at the end of instant `time`, after every ordinary one: Clock.late."""
    _schedule(heap, st, time, _LATE, kind, a, 0, 0.0)


@uncounted
def pop(heap, st):  # pragma: no cover (compiled)
    """Remove the earliest event (ties: the first scheduled) and return it: time, kind, a, b, c."""
    event = (heap[0, 0], int(heap[0, 2]), int(heap[0, 3]), int(heap[0, 4]), heap[0, 5])
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


# -- shared host processors (zensim.net.cores.SharedCores, one per host); `cores`: a `Cores`

@uncounted
def _speed(h, cores):  # pragma: no cover (compiled)
    """SharedCores._speed of host h."""
    setting, count = cores.setting, cores.count
    if count[h] == 0:
        return 0.0
    speed = setting[0] / (count[h] + setting[1])
    return speed if speed < 1.0 else 1.0


@uncounted
def _advance(h, now, cores):  # pragma: no cover (compiled)
    """SharedCores._advance: charge host h's jobs the work done since its last change."""
    time, count, first, jobs, left = cores.time, cores.count, cores.first, cores.jobs, cores.left
    done = (now - time[h]) * _speed(h, cores)
    if done > 0:
        for i in range(first[h], first[h] + count[h]):
            left[jobs[i]] -= done
    time[h] = now


@uncounted
def _least(h, cores):  # pragma: no cover (compiled)
    """max(least work left of host h's jobs, 0) (it has jobs)."""
    count, first, jobs, left = cores.count, cores.first, cores.jobs, cores.left
    least = np.inf
    for i in range(first[h], first[h] + count[h]):
        if left[jobs[i]] < least:
            least = left[jobs[i]]
    return least if least >= 0.0 else 0.0


@uncounted
def _arm(h, now, cores, heap, st):  # pragma: no cover (compiled)
    """SharedCores._arm: one CORES event at host h's next completion; older ones become stale."""
    version = cores.version
    version[h] += 1
    if cores.count[h] == 0:
        return
    st[CORE_EVENTS] += 1
    push(heap, st, now + _least(h, cores) / _speed(h, cores), CORES, h, version[h], 0.0)


@uncounted
def _run(r, seconds, then, s, now, cores, heap, st):  # pragma: no cover (compiled)
    """SharedCores.run: rank r's `seconds` of work on its host, then resume it at step `then`, stage s."""
    h = cores.host[r]
    count, first, jobs, left = cores.count, cores.first, cores.jobs, cores.left
    then_of, stage_of = cores.then, cores.stage
    _advance(h, now, cores)
    jobs[first[h] + count[h]] = r
    count[h] += 1
    left[r], then_of[r], stage_of[r] = seconds, then, s
    _arm(h, now, cores, heap, st)


@uncounted
def _cores_due(h, version, now, cores, heap, st):  # pragma: no cover (compiled)
    """SharedCores._due: unless stale, retire host h's jobs finished now and re-arm; the ranks to resume,
    in the order their jobs came, go to the `done` list that `advance` works through."""
    st[CORE_EVENTS] -= 1
    if version != cores.version[h]:
        return
    count, first, jobs, left, done = cores.count, cores.first, cores.jobs, cores.left, cores.done
    _advance(h, now, cores)
    least = _least(h, cores)
    kept, finished = first[h], 0
    for i in range(first[h], first[h] + count[h]):
        r = jobs[i]
        if left[r] <= least + TOGETHER:
            done[finished] = r
            finished += 1
        else:
            jobs[kept] = r
            kept += 1
    count[h] = kept - first[h]
    st[RESUMED], st[DONE_JOBS] = 0, finished
    _arm(h, now, cores, heap, st)


@inlined
def _work(heap, st, out, column, slot, now, seconds, then, r, s, cores):  # pragma: no cover (compiled)
    """Stamp out[column, slot] now; with local work to do, resume at `then` after it (True): an event, or
    a job on the host's shared processors (Network.compute)."""
    out[column, slot] = now
    if seconds > 0:
        if len(cores.setting):
            _run(r, seconds, then, s, now, cores, heap, st)
        else:
            push(heap, st, now + seconds, then, r, s, 0.0)
        return True
    return False


@inlined
def _stages(r, s, step, now, rank, heap, st, out):  # pragma: no cover (compiled)
    """Rank r at stage s from `step` on (BEGIN: the stage begins; POST: its pre work done, the exchange's
    own CPU begins; SEND: that done; SENT: its sends injected; FINISH: its messages all delivered; END:
    its post work done) until it waits for work or messages (_WAIT), has ended its last stage (_DONE),
    or has sends to inject now: their slot, after marking it sent (LogReplay._begin/_post/_send/_finish/
    _end)."""
    pending, sent, pre, post = rank.pending, rank.sent, rank.pre, rank.post
    stages_of, slot_base, exchange, cores = rank.stages, rank.slot_base, rank.exchange, rank.cores
    stages = stages_of[r]
    while True:
        slot = slot_base[r] + s
        if step == BEGIN:
            if _work(heap, st, out, 0, slot, now, pre[slot], POST, r, s, cores):
                return _WAIT
            step = POST
        if step == POST:
            if _work(heap, st, out, 1, slot, now, exchange[slot], SEND, r, s, cores):
                return _WAIT
            step = SEND
        if step == SEND:
            sent[slot] = True
            return slot
        if step == SENT:
            if pending[slot] != 0:
                return _WAIT
            step = FINISH
        if step == FINISH:
            if _work(heap, st, out, 2, slot, now, post[slot], END, r, s, cores):
                return _WAIT
            step = END
        out[3, slot] = now
        if s + 1 < stages:
            s += 1
            step = BEGIN
            continue
        return _DONE


@uncounted
def _done(x, now, prog, st):  # pragma: no cover (compiled)
    """Node x is done now: its successors are to be started next (a frame on the stack)."""
    stack_node, stack_pos, ended = prog.stack_node, prog.stack_pos, prog.ended
    ended[x] = now
    stack_node[st[DEPTH]] = x
    stack_pos[st[DEPTH]] = prog.succ_start[x]
    st[DEPTH] += 1


@uncounted
def _start(x, now, rank, prog, heap, st):  # pragma: no cover (compiled)
    """Node x starts now: a timer is scheduled (or done at once); a client rank that has stages is
    returned, to run (else -1)."""
    kind, seconds, target, began = prog.kind, prog.seconds, prog.target, prog.began
    began[x] = now
    if kind[x] == TIMER:
        if seconds[x] > 0:
            push(heap, st, now + seconds[x], NODE, x, 0, 0.0)
        else:
            _done(x, now, prog, st)
        return -1
    r = target[x]
    if rank.stages[r] == 0:
        _done(x, now, prog, st)
        return -1
    return r


@inlined
def advance(r, s, step, now, rank, prog, heap, st, out):  # pragma: no cover (compiled)
    """Run the ranks and the program from one step until all wait, or a rank has sends to inject now:
    their (rank, stage) slot (then call again with SENT for that rank and stage). Steps: those of
    `_stages` for rank r at stage s; NODE: timer node r is done; START: node r starts (a root); CORES:
    host r's shared processors' event of version s (their finished jobs' ranks resumed in turn, each
    with all that follows from it first, as SharedCores._due's continuations). `rank`:
    fastloop.schedule's; out: per slot the stage start, transfer start, transfer end and stage end
    times; prog: Program.arrays (`Nodes`)."""
    succ_start, succ, join = prog.succ_start, prog.succ, prog.join
    stack_node, stack_pos = prog.stack_node, prog.stack_pos
    node_of, cores = rank.node_of, rank.cores
    while True:
        if step == NODE:
            _done(r, now, prog, st)
        elif step == CORES:
            _cores_due(r, s, now, cores, heap, st)
        elif step == START:
            r = _start(r, now, rank, prog, heap, st)
            if r >= 0:
                s, step = 0, BEGIN
                continue
        else:
            slot = _stages(r, s, step, now, rank, heap, st, out)
            if slot >= 0:
                return slot
            if slot == _DONE:
                _done(node_of[r], now, prog, st)
        r = -1
        while r < 0 and st[DEPTH] > 0:  # the successors of the nodes done, depth first
            top = st[DEPTH] - 1
            x, i = stack_node[top], stack_pos[top]
            if i == succ_start[x + 1]:
                st[DEPTH] = top
                continue
            stack_pos[top] = i + 1
            y = succ[i]
            join[y] -= 1
            if join[y] == 0:
                r = _start(y, now, rank, prog, heap, st)
        if r >= 0:
            s, step = 0, BEGIN
        elif st[RESUMED] < st[DONE_JOBS]:  # the next job done at this CORES event
            r = cores.done[st[RESUMED]]
            st[RESUMED] += 1
            s, step = cores.stage[r], cores.then[r]
        else:
            return -1


@inlined
def sends(slot, rank, st):  # pragma: no cover (compiled)
    """The messages that the slot `advance` returned injects now, in order, as (ids, first, stop): its
    own sends, order[bounds[slot]:bounds[slot + 1]]; with rendezvous (LogReplay._send) those of them
    whose receiver has injected its own sends of the stage, then the ones held for this slot, while
    the others are held for their receiver's slot. Counts them off st[UNSENT]."""
    order, bounds, sent, slot_base = rank.order, rank.bounds, rank.sent, rank.slot_base
    held = rank.held
    dst, first, last, following, group = held.dst, held.first, held.last, held.following, held.group
    if len(group) == 0:
        st[UNSENT] -= bounds[slot + 1] - bounds[slot]
        return order, bounds[slot], bounds[slot + 1]
    s = slot - slot_base[rank.slot_rank[slot]]
    size = 0
    for j in range(bounds[slot], bounds[slot + 1]):
        m = order[j]
        to = slot_base[dst[m]] + s
        if sent[to]:
            group[size] = m
            size += 1
        else:  # held for its receiver's slot, after the ones held before it
            if first[to] < 0:
                first[to] = m
            else:
                following[last[to]] = m
            last[to] = m
    m = first[slot]
    while m >= 0:
        group[size] = m
        size += 1
        m = following[m]
    first[slot] = -1
    st[UNSENT] -= size
    return group, 0, size


@inlined
def arrived(r, s, rank):  # pragma: no cover (compiled)
    """A message of rank r's stage s was delivered (LogReplay._delivered): whether the stage now has
    all its messages and its own sends injected (then advance it from FINISH)."""
    pending, sent = rank.pending, rank.sent
    slot = rank.slot_base[r] + s
    pending[slot] -= 1
    return pending[slot] == 0 and sent[slot]


@inlined
def resume(slot, rank):  # pragma: no cover (compiled)
    """The (rank, stage) of a slot `advance` returned."""
    r = np.int64(rank.slot_rank[slot])
    return r, slot - rank.slot_base[r]
