"""Replay a stage program's message log on a Network: the timing semantics of docs/architecture.md.

Rank r's stage s starts when its stage s-1 ended; it does its `pre` work, then the exchange's own
CPU (`costs.exchange`: posting, copying, receipts; it counts as waiting for messages), injects its stage-s sends
(in rotated order dst = src+1, src+2, ... so that an all-to-all has no hot spot in `fifo`), waits for
all its stage-s messages to arrive and its own stage-s sends to be delivered, then does its `post`
work; that ends stage s. No global barrier. Zero-byte messages cost their route's latency. With
`costs.rendezvous` a message moves only once its receiver has injected its own stage-s sends (the
point where it posts the stage's receives, as the emulator's exchange does): gloo, and NCCL and MPI
for large messages, move nothing before the receive is posted, so a sender that runs ahead waits
for its receiver instead of using the receiver's link early.

`LogReplay` is one client of zensim.net.network.Network: several of them (buckets of an iteration,
started at different times) can share one network, and other clients (background traffic) with
them. `replay(log, costs, model)` is the one-log case: a network of its own, every rank starting at 0.
Where a compiled loop applies (COMPILED: fifo and maxmin, with the costs zensim.net.fastloop.alone
lists) `run_compiled` runs clients that are the network's only ones,
their ranks started by a zensim.net.fastloop.Program, with the same times: `replay()` and the
training timeline take it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from zensim.net import fastfifo, fastmaxmin
from zensim.net.costs import Costs
from zensim.net.fastloop import IDS, RANK, Program
from zensim.net.network import Network
from zensim.net.profile import WorkCost
from zensim.run.log import PHASES, MessageLog


@dataclass
class Timing:
    """When everything happened (seconds): per rank x stage, per message, per link; and what the network
    carried: bytes per link and between machines."""

    stage_start: np.ndarray  # (n, S)
    stage_end: np.ndarray  # (n, S)
    msg_start: np.ndarray  # injection time per message (log order)
    msg_end: np.ndarray  # delivery time per message
    link_bytes: np.ndarray  # bytes carried per link (topology link ids)
    events: int
    transfer_start: np.ndarray | None = None  # (n, S): the rank's pre work done, its sends injected
    transfer_end: np.ndarray | None = None  # (n, S): its messages of the stage all delivered, post work begins
    machine_bytes: np.ndarray | None = None  # (machines, machines): bytes from machine i to j (i == j: inside)
    msg_links: np.ndarray | None = None  # (messages, width): each message's route, padded with len(link_bytes)
    msg_bytes: np.ndarray | None = None  # bytes per message (log order)

    @property
    def makespan(self) -> float:
        """Time at which the last rank finished its last stage."""
        return float(self.stage_end[:, -1].max()) if self.stage_end.size else 0.0

    @property
    def comm_wait(self) -> np.ndarray:
        """(n, S) seconds each rank waited for its stage's messages: from injecting its sends to the
        delivery of the last message it sends or receives (the emulator's `comm_s`)."""
        return self.transfer_end - self.transfer_start


def piece_seconds(log: MessageLog, work: WorkCost) -> np.ndarray:
    """Seconds of each work record of `log` under `work`: its elements x the kind's per-element cost
    plus the kind's fixed cost per launch it pays (one per piece; one per rank in a fused collective,
    zensim.run.log.MessageLog.fused; every piece one with `work.per_piece`). ValueError naming an
    unknown kind."""
    cols = log.work_arrays()
    if not len(cols["kind"]):
        return np.zeros(0)
    try:
        fixed, per_element = work.costs(log.kind_names)
    except ValueError as exc:
        raise ValueError(f"message log: {exc}") from None
    kind = cols["kind"]
    launches = 1 if work.per_piece else cols["launches"]
    return cols["elements"] * per_element[kind] + fixed[kind] * launches


def work_seconds(log: MessageLog, costs: Costs, work: WorkCost | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pre and post local-work seconds per (rank, stage): each piece priced by `costs.work` (or `work`,
    when given; `piece_seconds`), or with `costs.measured_work` = f the seconds the log measured x f
    (ValueError if it measured none)."""
    if costs.measured_work is not None:
        if log.measured is None:
            raise ValueError("this message log has no measured local work (make it with emulate.stepcost)")
        return costs.measured_work * log.measured[:, :, 0], costs.measured_work * log.measured[:, :, 1]
    seconds = piece_seconds(log, costs.work if work is None else work)
    cols = log.work_arrays()
    phases = len(PHASES)
    # each (rank, stage, phase)'s pieces summed from 0 in the log's order (as np.add.at would, faster)
    total = np.bincount((cols["rank"].astype(np.int64) * log.num_stages + cols["stage"]) * phases + cols["phase"], seconds,
                        minlength=log.n * log.num_stages * phases).reshape(log.n, log.num_stages, phases)
    return np.ascontiguousarray(total[:, :, 0]), np.ascontiguousarray(total[:, :, 1])


def exchange_seconds(log: MessageLog, costs: Costs) -> np.ndarray:
    """CPU seconds per (rank, stage) of the exchange itself (`costs.exchange`): per stage a rank sends
    or receives in, per message and per byte it sends; zeros without exchange costs."""
    out = np.zeros((log.n, log.num_stages))
    x = costs.exchange
    if x is None:
        return out
    cols = log.arrays()
    src, dst, stage = cols["src"], cols["dst"], cols["stage"]
    np.add.at(out, (src, stage), x.per_message + x.per_byte * cols["nbytes"])
    busy = np.zeros(out.shape, np.bool_)
    busy[src, stage] = busy[dst, stage] = True
    return out + x.per_stage * busy


class LogReplay:
    """A message log as a client of a Network: its ranks step through their stages (module docstring).

    Rank r runs on GPU `gpu_of_rank[r]` (identity by default) and does its local work on host
    `host_of_rank[r]` (default: the machine of its GPU). Nothing happens until `start()` (all ranks,
    now) or `start_rank(r)`; `on_rank_done(r)` is called when rank r has ended its last stage (at once
    by `start_rank` for a log without stages), `on_done()` when the last rank has. `work` prices this
    log's local work instead of the network's `costs.work` (a fused collective's, say).
    """

    def __init__(self, net: Network, log: MessageLog, gpu_of_rank: np.ndarray | None = None,
                 host_of_rank: np.ndarray | None = None, on_done: Callable[[], None] | None = None,
                 on_rank_done: Callable[[int], None] | None = None, work: WorkCost | None = None) -> None:
        n, stages = log.n, log.num_stages
        self.net, self.log, self.on_done, self.on_rank_done = net, log, on_done, on_rank_done
        self.gpu = np.arange(n) if gpu_of_rank is None else np.asarray(gpu_of_rank, dtype=np.int64)
        host = self.gpu // net.topology.spec.gpus_per_machine if host_of_rank is None else np.asarray(host_of_rank)
        self.host = host.tolist()
        cols = log.arrays()
        stage, src, dst, nbytes = cols["stage"], cols["src"], cols["dst"], cols["nbytes"]
        pre, post = work_seconds(log, net.costs, work)
        exchange = exchange_seconds(log, net.costs)
        self.first = net.count
        net.add_messages(self.gpu[src], self.gpu[dst], nbytes, self._delivered)
        self.ids = range(self.first, net.count)  # its messages' ids on the network
        # sends of (rank, stage) as slices of one ordering (by slot, then dst - src mod n: the rotated
        # order); pending = messages a (rank, stage) waits for. Message ids, slots and counts of messages
        # are int32 (fastloop.IDS; fastloop.schedule refuses a network of 2**31 messages or more)
        slot = src * stages + stage  # < 2**31: MessageLog refuses more slots
        sends = np.bincount(slot, minlength=n * stages)
        order = np.argsort(slot.astype(np.int64) * max(n, 1) + (dst - src) % max(n, 1), kind="stable").astype(IDS)
        # the schedule as arrays (message ids relative to `first`), for the compiled loops (COMPILED)
        self.arrays = {"order": order, "bounds": np.concatenate(([0], np.cumsum(sends))).astype(IDS),
                       "pending": (sends + np.bincount(dst * stages + stage, minlength=n * stages)).astype(IDS),
                       "stage": stage, "src": src, "dst": dst, "pre": pre.ravel(), "post": post.ravel(),
                       "exchange": exchange.ravel()}
        self.stages = stages
        self.stage_start = np.zeros((n, stages))
        self.stage_end = np.zeros((n, stages))
        self.transfer_start = np.zeros((n, stages))
        self.transfer_end = np.zeros((n, stages))
        self.running = n if stages else 0
        self._lists = False

    def _as_lists(self) -> None:
        """The schedule as Python lists, what the callbacks index (made on the first start)."""
        if self._lists:
            return
        a = self.arrays
        self.bounds, self.order, self.pending = a["bounds"].tolist(), (a["order"] + self.first).tolist(), a["pending"].tolist()
        self.stage_of, self.src_of, self.dst_of = a["stage"].tolist(), a["src"].tolist(), a["dst"].tolist()
        self.pre, self.post, self.exchange = a["pre"].tolist(), a["post"].tolist(), a["exchange"].tolist()
        self.sent = [False] * len(self.pending)
        self.held: dict[int, list[int]] = {}  # rendezvous: (receiver, stage) slot -> messages waiting for it
        self._lists = True

    def start(self) -> None:
        """Every rank begins its first stage now."""
        for r in range(self.log.n):
            self.start_rank(r)

    def start_rank(self, r: int) -> None:
        """Rank r begins its first stage now."""
        self._as_lists()
        if self.stages:
            self._begin(r, 0)
        elif self.on_rank_done is not None:
            self.on_rank_done(r)

    def run_compiled(self) -> None:
        """`start()` and run the network to the end in one compiled loop (the one of COMPILED that
        `applies`, ValueError if none): the same times, this log the network's only client."""
        program = Program()
        for r in range(self.log.n):
            program.rank(0, r)
        run_compiled(self.net, [self], program)

    def timing(self) -> Timing:
        """Times so far (complete once the network has run out of work)."""
        ids = slice(self.first, self.first + len(self.ids))
        routes = self.net.routes[ids]
        nbytes = self.net.nbytes[ids]
        links = self.net.num_links
        link_bytes = np.bincount(routes.ravel(), weights=np.repeat(nbytes, routes.shape[1]),
                                 minlength=links + 1)[:links]
        machines, g = self.net.topology.spec.machines, self.net.topology.spec.gpus_per_machine
        pair = self.gpu[self.log.src] // g * machines + self.gpu[self.log.dst] // g
        machine_bytes = np.bincount(pair, weights=nbytes, minlength=machines * machines).reshape(machines, machines)
        return Timing(self.stage_start, self.stage_end, self.net.sent_at[ids].copy(),
                      self.net.delivered_at[ids].copy(), link_bytes, self.net.events, self.transfer_start,
                      self.transfer_end, machine_bytes, routes, nbytes)

    def _begin(self, r: int, s: int) -> None:
        self.stage_start[r, s] = self.net.now
        self._work(r, s, self.pre[r * self.stages + s], self._post)

    def _post(self, r: int, s: int) -> None:
        """Pre work done: the wait for messages begins with the exchange's own CPU, then the sends go."""
        self.transfer_start[r, s] = self.net.now
        self._work(r, s, self.exchange[r * self.stages + s], self._send)

    def _work(self, r: int, s: int, seconds: float, then: Callable[[int, int], None]) -> None:
        """Local work of rank r at stage s, then then(r, s) (at once when there is none)."""
        if seconds > 0:
            self.net.compute(self.host[r], seconds, then, r, s)
        else:
            then(r, s)

    def _send(self, r: int, s: int) -> None:
        slot = r * self.stages + s
        self.sent[slot] = True
        ids = self.order[self.bounds[slot]: self.bounds[slot + 1]]
        if self.net.costs.rendezvous:
            ready = []
            for m in ids:
                to = self.dst_of[m - self.first] * self.stages + s
                (ready if self.sent[to] else self.held.setdefault(to, [])).append(m)
            ids = ready + self.held.pop(slot, [])
        self.net.start(ids)
        if self.pending[slot] == 0:
            self._finish(r, s)

    def _delivered(self, m: int) -> None:
        i = m - self.first
        s = self.stage_of[i]
        for r in (self.src_of[i], self.dst_of[i]):
            slot = r * self.stages + s
            self.pending[slot] -= 1
            if self.pending[slot] == 0 and self.sent[slot]:
                self._finish(r, s)

    def _finish(self, r: int, s: int) -> None:
        self.transfer_end[r, s] = self.net.now
        self._work(r, s, self.post[r * self.stages + s], self._end)

    def _end(self, r: int, s: int) -> None:
        self.stage_end[r, s] = self.net.now
        if s + 1 < self.stages:
            self._begin(r, s + 1)
            return
        if self.on_rank_done is not None:
            self.on_rank_done(r)
        self.running -= 1
        if self.running == 0 and self.on_done is not None:
            self.on_done()


COMPILED = (fastfifo, fastmaxmin)  # one log alone on a network: these loops give the Python path's times


def compiled(net: Network) -> ModuleType | None:
    """The compiled loop (of COMPILED) that applies to this network, or None."""
    return next((loop for loop in COMPILED if loop.applies(net)), None)


def run_compiled(net: Network, clients: Sequence[LogReplay], program: Program) -> tuple[np.ndarray, np.ndarray]:
    """Run `program` (zensim.net.fastloop.Program: when each rank of each client starts, its client
    given by its index in `clients`) and the network to the end in one compiled loop: the times the
    general path gives with the same starts (each client's stage times, the network's message times,
    clock, event count, solves). The clients must be the network's only ones; ValueError if no
    compiled loop applies. Returns per node of the program when it began and when it was done (NaN:
    never)."""
    loop = compiled(net)
    if loop is None:
        raise ValueError(f"no compiled replay for this {net.model.name} network")
    out, began, ended = loop.run(net, clients, program)
    ranks = np.array(program.kind, np.int64) == RANK
    done = np.bincount(np.array(program.client, np.int64)[ranks & np.isfinite(ended)], minlength=len(clients))
    slot = 0
    for client, ended_ranks in zip(clients, done.tolist()):
        size, shape = client.log.n * client.stages, (client.log.n, client.stages)
        rows = out[:, slot:slot + size]  # the client's times are views of the loop's, not copies
        client.stage_start, client.transfer_start, client.transfer_end, client.stage_end = (
            row.reshape(shape) for row in rows)
        client.running = client.log.n - ended_ranks if client.stages else 0
        slot += size
    return began, ended


def replay(log: MessageLog, costs: Costs, model: str = "fifo", *, gpu_of_rank: np.ndarray | None = None,
           host_of_rank: np.ndarray | None = None, options: Mapping[str, object] | None = None) -> Timing:
    """Time `log` alone on a network of its own: rank r on GPU `gpu_of_rank[r]` (identity by default),
    local work on host `host_of_rank[r]` (default its machine), sharing model `model` with `options`."""
    net = Network(costs, model, options)
    client = LogReplay(net, log, gpu_of_rank, host_of_rank)
    if compiled(net) is not None:
        client.run_compiled()
    else:
        client.start()
        net.run()
    return client.timing()
