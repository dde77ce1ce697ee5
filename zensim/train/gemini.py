"""Gemini's checkpoint traffic on the iteration timeline: a background client of the network model.

`zensim.train.background` has Gemini's algorithms on abstract idle spans; here they run on the
timeline of `zensim.train.timeline`, where the checkpoint's messages share the links with the
buckets' synchronizations (one `Network`, two kinds of clients):

1. **profile**: a run without checkpoints gives each machine's NIC busy intervals (every message
   whose route crosses the machine's NIC, from injection to delivery; gaps shorter than `min_gap`
   count as busy, as a profiler at that granularity sees them), hence the idle spans of one steady
   iteration, as offsets from that iteration's start on the machine's first GPU;
2. **partition**: Algorithm 6.2 (`background.partition`) over the spans of `every` consecutive
   iterations (a checkpoint taken every k iterations may use the idle time of the k iterations
   until the next one), f(s) = NIC latency + s / NIC bandwidth; the last span is open-ended;
3. **replay**: the checkpoint as a client (`CheckpointTraffic`), called as each GPU begins an
   iteration: a machine's chunk of s bytes is sent by its G GPUs, s/G each, to the same local rank
   of the peer holding that replica (placement: `background.holders`), the chunks of a GPU one after
   the other, none before its span's offset. *Blocking*: the whole checkpoint injected at once at the
   start of the iteration, ahead of that iteration's training traffic on FIFO links.

The overhead of a checkpoint is measured in steady state: checkpoints every k iterations, the second
period's extra length over the checkpoint-free run (it carries what the first checkpoint spilled into
it, where that delays training, and its own traffic). The
receiver's GPU-to-CPU copy is not on the network and is not modelled here (with Gemini's four
sub-buffers it pipelines behind the NIC at these speeds).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.links import LinkKind
from zensim.net.topology import ClusterSpec
from zensim.train.background import Checkpoint, Wire, holders, idle_spans, partition
from zensim.train.timeline import Run

MIN_GAP = 1e-3  # idle gaps shorter than this (a ring's stage-to-stage latency) are not offered to the checkpoint


def nic_busy(run: Run, machine: int) -> list[tuple[float, float]]:
    """(injection, delivery) of every message of the run whose route crosses `machine`'s NIC."""
    net = run.network
    topo = net.topology
    nics = topo.links_of_kind(LinkKind.NIC)
    mine = nics[topo.machine_of_link()[nics] == machine]
    crosses = np.isin(net.routes[:net.count], mine).any(axis=1)
    return list(zip(net.sent_at[:net.count][crosses].tolist(), net.delivered_at[:net.count][crosses].tolist()))


def iteration_spans(run: Run, machine: int, iteration: int, gpus_per_machine: int,
                    min_gap: float = MIN_GAP) -> tuple[list[tuple[float, float]], float]:
    """The NIC idle spans of one iteration of `run` on `machine` as offsets from the iteration's start
    on its first GPU (gaps shorter than `min_gap` dropped), and the iteration's length there."""
    gpu = machine * gpus_per_machine
    start = float(run.iteration_start[iteration, gpu])
    last = iteration + 1 >= len(run.iteration_start)
    end = float(run.iteration_end[iteration, gpu] if last else run.iteration_start[iteration + 1, gpu])
    spans = [(lo - start, hi - start) for lo, hi in idle_spans(nic_busy(run, machine), start, end) if hi - lo >= min_gap]
    return spans, end - start


@dataclass(frozen=True)
class Send:
    """One machine-level chunk: released `offset` seconds after the start of the period's `iteration`."""

    iteration: int
    offset: float
    nbytes: float
    copy: int  # which remote replica (0 .. m-2)


def interleaved_plan(spans: Sequence[tuple[float, float]], ckpt: Checkpoint, wire: Wire,
                     every: int) -> tuple[list[Send], float]:
    """Algorithm 6.2 over the idle spans of `every` iterations (the same spans each iteration): each
    chunk released at the start of the span it was placed in; and the algorithm's own overhead
    estimate, the occupancy spilling past the real length of the open last span."""
    if not spans:
        raise ValueError("no idle spans on the NIC: nothing to interleave into")
    offsets = [lo for lo, _ in spans] * every
    lengths = [hi - lo for lo, hi in spans] * every
    chunks = partition(lengths, ckpt, wire)
    spill = sum(wire.occupancy(c.nbytes, ckpt.buffers) for c in chunks if c.span == len(lengths) - 1)
    sends = [Send(c.span // len(spans), offsets[c.span], c.nbytes, c.copy) for c in chunks]
    return sends, max(0.0, spill - lengths[-1])


def blocking_plan(ckpt: Checkpoint) -> list[Send]:
    """Every remote replica at once, at the start of the checkpoint's iteration."""
    return [Send(0, 0.0, ckpt.nbytes, copy) for copy in range(ckpt.replicas - 1)]


class CheckpointTraffic:
    """The checkpoint's messages as a client of the timeline's network (its `on_iteration` hook).

    Checkpoints start at iteration `first` and every `every` iterations after it, `count` of them.
    With `at_once` each GPU injects all its chunks of an iteration together (blocking); otherwise one
    after the other, each no earlier than its release."""

    def __init__(self, cluster: ClusterSpec, plan: Sequence[Send], every: int, *, replicas: int = 2, first: int = 0,
                 count: int = 1, at_once: bool = False) -> None:
        g = cluster.gpus_per_machine
        self.g, self.plan, self.every, self.first, self.count, self.at_once = g, list(plan), every, first, count, at_once
        peers = holders(cluster.machines, replicas)
        self.peers = [sorted(peers[m] - {m}) for m in range(cluster.machines)]
        self.queue: list[deque] = [deque() for _ in range(cluster.gpus)]
        self.busy = [False] * cluster.gpus
        self.waiting = [False] * cluster.gpus
        self.ids: list[int] = []  # the network's ids of the messages sent

    def __call__(self, net: Network, gpu: int, iteration: int) -> None:
        """GPU `gpu` begins `iteration`: queue (or inject) its share of this iteration's chunks."""
        k = iteration - self.first
        if k < 0 or k // self.every >= self.count:
            return
        machine, local = divmod(gpu, self.g)
        mine = [(net.now + s.offset, self.peers[machine][s.copy] * self.g + local, s.nbytes / self.g)
                for s in self.plan if s.iteration == k % self.every]
        if self.at_once:
            if mine:
                ids = net.add_messages([gpu] * len(mine), [d for _, d, _ in mine], [b for _, _, b in mine])
                self.ids += ids.tolist()
                net.start(ids)
            return
        self.queue[gpu].extend(mine)
        self._pump(net, gpu)

    def _pump(self, net: Network, gpu: int) -> None:
        """Send the GPU's next chunk when the previous one is delivered and its release has come."""
        q = self.queue[gpu]
        if self.busy[gpu] or self.waiting[gpu] or not q:
            return
        release, dst, nbytes = q[0]
        if release > net.now:
            self.waiting[gpu] = True
            net.schedule(release - net.now, self._released, net, gpu)
            return
        q.popleft()
        self.busy[gpu] = True
        self.ids.append(net.send(gpu, dst, nbytes, lambda _m: self._delivered(net, gpu)))

    def _released(self, net: Network, gpu: int) -> None:
        self.waiting[gpu] = False
        self._pump(net, gpu)

    def _delivered(self, net: Network, gpu: int) -> None:
        self.busy[gpu] = False
        self._pump(net, gpu)


@dataclass(frozen=True)
class CheckpointCost:
    """One checkpoint schedule measured on the timeline."""

    mode: str                # "interleaved" or "blocking"
    every: int               # iterations between checkpoints
    overhead_s: float        # extra seconds per checkpoint period in steady state (measure)
    iteration_s: float       # the checkpoint-free iteration
    predicted_s: float       # Algorithm 6.2's own estimate (what spills past the open last span), interleaved only
    chunks: int
    idle_s: float            # NIC idle seconds (machine 0, spans >= min_gap) per iteration without the checkpoint
    idle_after_s: float      # and with it, averaged over the `every` iterations

    @property
    def fraction(self) -> float:
        """Overhead per iteration as a fraction of the iteration time (one checkpoint every `every`)."""
        return self.overhead_s / (self.every * self.iteration_s)


def measure(simulate, costs: Costs, ckpt: Checkpoint, *, every: int, mode: str, baseline: Run,
            first: int = 1, min_gap: float = MIN_GAP) -> CheckpointCost:
    """Overhead per checkpoint (`mode` interleaved or blocking, one every `every` iterations) in steady state.

    `simulate(iterations, background)` runs the timeline (everything else fixed) and returns its Run;
    `baseline` is a checkpoint-free run of at least `first` + 2 `every` iterations. Checkpoints start
    at iteration `first` (whose idle spans the partition uses) and recur every `every` iterations; the
    overhead is how much longer the second period is than without checkpoints: it carries what the
    first checkpoint spilled into it and its own checkpoint, less what that one spills on, as every
    period does in steady state."""
    c = costs.cluster
    n = first + 2 * every
    if len(baseline.iteration_end) < n:
        raise ValueError(f"the baseline has {len(baseline.iteration_end)} iterations, {n} are needed")
    spans, length = iteration_spans(baseline, 0, first, c.gpus_per_machine, min_gap)
    wire = Wire(c.nic_bandwidth, alpha=c.nic_latency)
    if mode == "interleaved":
        plan, predicted = interleaved_plan(spans, ckpt, wire, every)
    elif mode == "blocking":
        plan, predicted = blocking_plan(ckpt), float("nan")
    else:
        raise ValueError(f"checkpoint mode {mode!r}: interleaved or blocking")
    traffic = CheckpointTraffic(c, plan, every, replicas=ckpt.replicas, first=first, count=2,
                                at_once=mode == "blocking")
    run = simulate(n, traffic)

    def period(r: Run) -> float:
        """The second period: from the end of iteration first + every - 1 to that of first + 2 every - 1."""
        return float(r.iteration_end[n - 1].max() - r.iteration_end[first + every - 1].max())

    idle = sum(hi - lo for lo, hi in spans)
    after = [sum(hi - lo for lo, hi in iteration_spans(run, 0, first + every + i, c.gpus_per_machine, min_gap)[0])
             for i in range(every)]
    return CheckpointCost(mode, every, period(run) - period(baseline), length, predicted, len(plan), idle,
                          float(np.mean(after)))


def first_period_under(cost_of, iteration_s: float, start: int = 1, budget: float = 0.01,
                       longest: int = 64) -> tuple[int, "CheckpointCost"] | None:
    """The smallest period k >= `start` whose measured overhead per iteration is under `budget`, and
    its measurement: `cost_of(k)` measures one (a CheckpointCost); k grows one at a time from `start`."""
    for k in range(start, longest + 1):
        cost = cost_of(k)
        if cost.overhead_s / (k * iteration_s) < budget:
            return k, cost
    return None
