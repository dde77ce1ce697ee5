"""The training iteration on a simulated cluster: wait-free backpropagation, buckets sharing one network.

Every GPU runs the layer profile's compute: forward, then backward, during which bucket b's
gradients are all ready `ready_s` after backward starts. Each GPU has one communication stream:
bucket b's synchronization (its parts, each the cluster-wide message log of zensim.train.syncs)
starts on a GPU when the bucket is ready there and the GPU's stream has finished bucket b-1 (DDP
launches buckets in order); the GPU's ranks of a log step through its stages under the timing
contract of docs/architecture.md (zensim.net.replay.LogReplay), so a synchronization ends on each
GPU when that GPU's part of it has. The scheme's local work (hashing, encoding, merging: the
compression) runs on the stream with it, costed by the same `Costs` as every simulation; the work of
dense collectives (dense parts, and the intra-machine rings of ZEN's layout) by `dense_work` if
given, else by the same costs, a dense collective's log being fused (one kernel per rank, as NCCL's
ring: one launch per rank, not one per piece; zensim.run.log.MessageLog.fused). A dense part runs the dense
all-reduce algorithm zensim.train.tuner picks for its size (`dense_algorithm`: auto, or one forced). The
optimizer step starts when backward is over and the GPU's last bucket is synchronized; the next
iteration's forward follows it. All buckets of all iterations are clients of one Network, so
buckets in flight at once (on GPUs that drifted apart) share the links.

With `dense_above` (zensim_hook's option; its buckets are one sparse part each, zensim.train.syncs)
a bucket is all-reduced densely in an iteration where its previous sum was denser than that: the
sum at the trace iteration before the one the iteration replays (cycling), as the hook decides by
the bucket's last sum. The timeline's iterations are steady-state ones (DDP's rebuilt buckets), so
the hook's first iteration, always through the scheme, is not among them.

With `hosts` (GPU -> host), compute runs on the hosts' processors instead: forward, backward (as
segments between bucket-ready points) and optimizer are local work sharing `Costs.host_cores`
processors with the schemes' local work, as ranks training on CPUs do (the emulator: every rank a
process of one host).

The profile's `step_other_s` (the step outside forward, backward and optimizer: the data loader's
batch, zero_grad) runs before each forward, as compute. A bucket synchronized by a scheme (a sparse
part, not turned dense by `dense_above`, without a fusion strategy's compression) has `zensim_hook`'s own host work around the scheme's run on
the communication stream: the profile's `hook_work_s` of its sparse parts' elements before the run
(selecting the non-zeros) and after it (writing the sum back), as compute of the GPU (its host's
processors with `hosts`). Profiles without these figures have 0 of them. `hook_run_s` (an input, not
a profile figure: it depends on the scheme and the world, not the model) is the hook's host work in the
scheme's run outside its stages (`run_ranks`' checks, message log and result; measured by
benchmarks/hook_run_overhead.py), run before the scheme's run with the selection, on the same buckets.

Background traffic (Gemini's checkpoints, zensim.train.gemini) is another client of the same
Network: `on_iteration(net, gpu, iteration)` is called as each GPU begins an iteration, and what it
sends shares the links with the buckets.

A fusion strategy's selection (BucketSync.compress) runs on the compute stream at its points of
backward, delaying the rest of it, as in Cupcake's timeline (thesis Fig. 5.1c); the bucket is ready
when its last compression is done.

The whole run (every GPU, bucket and iteration) is one zensim.net.fastloop.Program where a compiled
loop applies to the network (fifo or maxmin; a calibrated profile's costs and a NIC efficiency
table included) and neither `hosts` nor background traffic is given: the same times, bit
for bit, as the callbacks of the general path (`_run_general`), which runs everything else.

Limits: the scheme's local work on the communication stream does not slow the backward kernels (no
contention between the streams on a GPU); every GPU runs the same profile (no stragglers); the
forward does not wait for parameters by bucket.
"""

from __future__ import annotations

import time
from typing import Any
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.profile import WorkCost
from zensim.net import replay
from zensim.net.fastloop import Program
from zensim.memo import Memo
from zensim.net.replay import LogReplay
from zensim.train.layers import LayerProfile
from zensim.train.syncs import BucketSync, Part, Step, SyncLogs
from zensim.train.tuner import DenseTuner


@dataclass
class Run:
    """Raw times of a simulated run: per iteration x GPU, and per iteration x bucket x GPU (seconds)."""

    iteration_start: np.ndarray  # (I, G)
    backward_start: np.ndarray  # (I, G)
    backward_end: np.ndarray  # (I, G)
    optimizer_start: np.ndarray  # (I, G)
    iteration_end: np.ndarray  # (I, G)
    bucket_ready: np.ndarray  # (I, B, G)
    bucket_start: np.ndarray  # (I, B, G)
    bucket_end: np.ndarray  # (I, B, G)
    compression: np.ndarray  # (I, G): seconds of compression on the compute stream (BucketSync.compress)
    clients: dict = field(repr=False)  # (iteration, bucket, step) -> LogReplay
    network: Network = field(repr=False)
    events: int = 0
    wall_s: float = 0.0
    dense_algorithms: dict = field(default_factory=dict)  # dense part elements -> the algorithm it ran
    densely: np.ndarray | None = None  # (I, B): the bucket was all-reduced densely (dense_above)
    timeline: Any = field(default=None, repr=False)  # the Timeline that ran it (its buckets and steps: exports)

    def __getstate__(self) -> dict:
        """Pickled (a sweep point's record sent back by a Dask worker) without the Timeline, which holds
        the open trace."""
        return {**self.__dict__, "timeline": None}

    @property
    def makespan(self) -> float:
        """When the last GPU finished its last iteration."""
        return float(self.iteration_end[-1].max())


class Timeline:
    """One scheme's iterations on one cluster (see the module docstring); `run()` simulates them."""

    def __init__(self, profile: LayerProfile, syncs: Sequence[BucketSync], logs: SyncLogs, costs: Costs,
                 model: str = "fifo", iterations: int = 1, trace_iterations: Sequence[int] = (0,),
                 model_options: Mapping[str, object] | None = None, dense_work: WorkCost | None = None,
                 hosts: Sequence[int] | None = None, on_iteration: Callable[[Network, int, int], None] | None = None,
                 dense_algorithm: str = "auto", dense_above: float | None = None,
                 dense_times: Memo[dict[str, float]] | None = None, hook_run_s: float = 0.0) -> None:
        self.profile = profile
        self.hook_run_s = hook_run_s
        self.dense_above = dense_above
        self.tuner = DenseTuner(logs, costs, dense_work, dense_algorithm, dense_times)
        self.on_iteration = on_iteration
        self.hosts = None if hosts is None else list(hosts)
        self.dense_work = dense_work
        self.syncs = list(syncs)
        self.logs = logs
        self.costs = costs
        self.model = model
        self.model_options = dict(model_options or {})
        self.iterations = iterations
        self.trace_iterations = list(trace_iterations)
        self.gpus = costs.cluster.gpus

    def _steps(self, part: Part, iteration: int) -> list[Step]:
        """The steps of a bucket's part: a sparse one's at the trace iteration, a dense one's by the
        algorithm the tuner picks for its size."""
        if part.sparse:
            return self.logs.steps(part, iteration)
        return self.logs.steps(part, iteration, self.tuner(part.numel))

    def bucket_steps(self, i: int, b: int) -> list[Step]:
        """The steps of bucket b in iteration i: its parts' at the trace iteration i replays, or its
        dense all-reduce where `dense_above` says so."""
        t_it = self.trace_iterations[i % len(self.trace_iterations)]
        parts = self.syncs[b].parts
        if self.densely(i, b):
            parts = tuple(part.densely() for part in parts)
        return [st for part in parts for st in self._steps(part, t_it)]

    def densely(self, i: int, b: int) -> bool:
        """Whether `dense_above` all-reduces bucket b densely in iteration i: its sum at the trace
        iteration before i's was denser than it."""
        if self.dense_above is None:
            return False
        t_it = self.trace_iterations[i % len(self.trace_iterations)]
        before = (t_it - 1) % (self.logs.trace.iterations if self.logs.trace is not None else 1)
        return any(self.logs.density(part, before) > self.dense_above for part in self.syncs[b].parts if part.sparse)

    def hook_work(self, i: int, b: int) -> tuple[float, float]:
        """zensim_hook's host seconds around bucket b's scheme run in iteration i, (before, after): the
        profile's `hook_work_s` over its sparse parts' elements, and `hook_run_s` before; none when
        `dense_above` all-reduces it or a fusion strategy's compression (priced on its own) selects it."""
        if self.syncs[b].compress or self.densely(i, b):
            return 0.0, 0.0
        numel = sum(part.numel for part in self.syncs[b].parts if part.sparse)
        if not numel:
            return 0.0, 0.0
        before, after = self.profile.hook_work_s(numel)
        return before + self.hook_run_s, after

    def run(self, compiled: bool = True) -> Run:
        """Simulate every iteration on every GPU; returns the raw times. The whole schedule runs as one
        compiled loop (zensim.net.replay.run_compiled) where one applies to the run's network and
        neither `hosts` nor `on_iteration` is given (the same times, bit for bit); otherwise, or with
        `compiled` False, on the general path (the network's Python event loop)."""
        start = time.perf_counter()
        net = Network(self.costs, self.model, self.model_options)
        nb, n_it, g = len(self.syncs), self.iterations, self.gpus
        shape = (n_it, g)
        run = Run(np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros((n_it, nb, g)),
                  np.zeros((n_it, nb, g)), np.zeros((n_it, nb, g)), np.zeros(shape), {}, net)
        steps = None
        if compiled and self.hosts is None and self.on_iteration is None and replay.compiled(net) is not None:
            steps = self._all_steps()
        hooks = [[self.hook_work(i, b) for b in range(nb)] for i in range(n_it)]  # the same for every GPU
        if steps is not None and all(step and all(st.log.n == g for st in step) for step in steps.values()):
            self._run_compiled(run, steps, hooks)
        else:
            self._run_general(run, hooks)
        run.events = net.events
        run.dense_algorithms = dict(self.tuner.chosen)
        run.densely = np.array([[self.densely(i, b) for b in range(nb)] for i in range(n_it)], bool).reshape(n_it, nb)
        run.timeline = self
        run.wall_s = time.perf_counter() - start
        return run

    def _marks(self) -> list[tuple[float, int, int, float]]:
        """Backward's stops: (seconds into backward, bucket, 0 = a compression of `seconds` / 1 = the
        bucket ready), in time order."""
        syncs = self.syncs
        return sorted([(at, b, 0, seconds) for b in range(len(syncs)) for at, seconds in syncs[b].compress]
                      + [(syncs[b].ready_s, b, 1, 0.0) for b in range(len(syncs))])

    def _all_steps(self) -> dict[tuple[int, int], list[Step]]:
        """Per (iteration, bucket) the steps of its parts, in order."""
        out = {}
        for i in range(self.iterations):
            for b in range(len(self.syncs)):
                out[(i, b)] = self.bucket_steps(i, b)
        return out

    def _run_compiled(self, run: Run, steps: dict[tuple[int, int], list[Step]],
                      hooks: list[list[tuple[float, float]]]) -> None:
        """The general path's schedule (`_run_general`) as one fastloop.Program: per GPU and iteration the
        forward, backward's stops and compressions and its tail as timers, each part of each bucket a
        rank of its client (made in the general path's order, so with the same message ids), the
        optimizer step a timer after backward and the last bucket; the next iteration's forward after
        it; `hooks[i][b]`: `hook_work(i, b)`. Fills `run` from the times the nodes began and were done."""
        net, prof, nb, n_it, g = run.network, self.profile, len(self.syncs), self.iterations, self.gpus
        clients: list[LogReplay] = []
        first: dict[tuple[int, int], int] = {}  # (iteration, bucket) -> index of its first part's client
        for (i, b), mine in steps.items():
            first[(i, b)] = len(clients)
            for k, step in enumerate(mine):
                client = run.clients[(i, b, k)] = LogReplay(net, step.log,
                                                            work=None if step.compression else self.dense_work)
                clients.append(client)
        marks = self._marks()
        program = Program()
        first_compute = prof.step_other_s + prof.forward_s
        forward = np.array([[program.timer(first_compute) for _ in range(g)]] + [[-1] * g] * (n_it - 1), np.int64)
        ready, start, end = (np.zeros((n_it, nb, g), np.int64) for _ in range(3))
        backward_end, optimizer = (np.zeros((n_it, g), np.int64) for _ in range(2))
        for i in range(n_it):
            for r in range(g):
                if i:
                    forward[i, r] = program.timer(first_compute)
                    program.then(optimizer[i - 1, r], forward[i, r])
                last = -1
                for b in range(nb):  # the communication stream: buckets in order, parts in order
                    c0 = first[(i, b)]
                    nodes = [program.rank(c0 + k, r) for k in range(len(steps[(i, b)]))]
                    before, after = hooks[i][b]
                    if before > 0:
                        nodes.insert(0, program.timer(before))
                    if after > 0:
                        nodes.append(program.timer(after))
                    if last >= 0:
                        program.then(last, nodes[0])
                    for x, y in zip(nodes, nodes[1:]):
                        program.then(x, y)
                    start[i, b, r], end[i, b, r] = nodes[0], nodes[-1]
                    last = nodes[-1]
                prev, done = forward[i, r], 0.0
                for at, b, is_ready, seconds in marks:  # backward, stop by stop
                    mark = program.timer(at - done)
                    program.then(prev, mark)
                    if is_ready:
                        ready[i, b, r] = prev = mark
                        program.then(mark, start[i, b, r])
                    else:
                        prev = program.timer(seconds)
                        program.then(mark, prev)
                    done = at
                backward_end[i, r] = program.timer(prof.backward_s - done)
                program.then(prev, backward_end[i, r])
                optimizer[i, r] = program.timer(prof.optimizer_s)
                program.then(backward_end[i, r], optimizer[i, r])
                if last >= 0:
                    program.then(last, optimizer[i, r])
        began, ended = replay.run_compiled(net, clients, program)
        run.iteration_start[:], run.backward_start[:] = began[forward], ended[forward]
        run.bucket_ready[:], run.bucket_start[:], run.bucket_end[:] = ended[ready], began[start], ended[end]
        run.backward_end[:], run.optimizer_start[:], run.iteration_end[:] = (
            ended[backward_end], began[optimizer], ended[optimizer])
        compression = 0.0
        for _, _, is_ready, seconds in marks:
            if not is_ready:
                compression += seconds
        run.compression[:] = compression

    def _run_general(self, run: Run, hooks: list[list[tuple[float, float]]]) -> None:
        """Every iteration on every GPU as callbacks of the network's event loop (`hooks[i][b]`:
        `hook_work(i, b)`)."""
        net = run.network
        prof, syncs = self.profile, self.syncs
        nb, n_it, g = len(syncs), self.iterations, self.gpus
        backward = prof.backward_s
        marks = self._marks()
        hosts = self.hosts
        # per GPU: current iteration, next bucket to synchronize, buckets ready, stream busy, backward done
        it = [0] * g
        nxt = [0] * g
        ready = [[False] * nb for _ in range(g)]
        busy = [False] * g
        bwd_done = [False] * g

        def compute(r: int, seconds: float, then, *args) -> None:
            """Compute of GPU r: a timer, or on a CPU host processor-shared work (`hosts`)."""
            if seconds <= 0:
                then(r, *args)
            elif hosts is None:
                net.schedule(seconds, then, r, *args)
            else:
                net.compute(hosts[r], seconds, then, r, *args)

        def begin(r: int) -> None:
            i = it[r]
            run.iteration_start[i, r] = net.now
            if self.on_iteration is not None:
                self.on_iteration(net, r, i)
            compute(r, prof.step_other_s + prof.forward_s, backward_start)

        def backward_start(r: int) -> None:
            run.backward_start[it[r], r] = net.now
            backward_step(r, 0, 0.0)

        def backward_step(r: int, j: int, done: float) -> None:
            """Backward from `done` seconds in to the next stop (or to its end)."""
            if j < len(marks):
                compute(r, marks[j][0] - done, reached, j)
            else:
                compute(r, backward - done, backward_done)

        def reached(r: int, j: int) -> None:
            at, b, ready_, seconds = marks[j]
            if ready_:
                bucket_ready(r, b)
                backward_step(r, j + 1, at)
            else:  # compression on the compute stream: the rest of backward waits for it
                run.compression[it[r], r] += seconds
                compute(r, seconds, backward_step, j + 1, at)

        def bucket_ready(r: int, b: int) -> None:
            run.bucket_ready[it[r], b, r] = net.now
            ready[r][b] = True
            try_sync(r)

        def try_sync(r: int) -> None:
            b = nxt[r]
            if busy[r] or b >= nb or not ready[r][b]:
                return
            busy[r] = True
            run.bucket_start[it[r], b, r] = net.now
            compute(r, hooks[it[r]][b][0], start_part, it[r], b, 0)

        steps: dict[tuple[int, int], list] = {}  # (iteration, bucket) -> its parts' steps, in order

        def start_part(r: int, i: int, b: int, k: int) -> None:
            mine = steps.get((i, b))
            if mine is None:
                mine = steps[(i, b)] = self.bucket_steps(i, b)
            key = (i, b, k)
            client = run.clients.get(key)
            if client is None:
                step = mine[k]
                client = run.clients[key] = LogReplay(net, step.log, host_of_rank=None if hosts is None else np.array(hosts),
                                                      on_rank_done=lambda rr: part_done(rr, i, b, k),
                                                      work=None if step.compression else self.dense_work)
            client.start_rank(r)

        def part_done(r: int, i: int, b: int, k: int) -> None:
            if k + 1 < len(steps[(i, b)]):
                start_part(r, i, b, k + 1)
                return
            compute(r, hooks[i][b][1], bucket_done, i, b)

        def bucket_done(r: int, i: int, b: int) -> None:
            run.bucket_end[i, b, r] = net.now
            busy[r] = False
            nxt[r] += 1
            try_sync(r)
            maybe_step(r)

        def backward_done(r: int) -> None:
            run.backward_end[it[r], r] = net.now
            bwd_done[r] = True
            maybe_step(r)

        def maybe_step(r: int) -> None:
            if bwd_done[r] and nxt[r] == nb and not busy[r]:
                run.optimizer_start[it[r], r] = net.now
                bwd_done[r] = False  # the step is scheduled once
                compute(r, prof.optimizer_s, end)

        def end(r: int) -> None:
            run.iteration_end[it[r], r] = net.now
            if it[r] + 1 < n_it:
                it[r] += 1
                nxt[r] = 0
                ready[r] = [False] * nb
                begin(r)

        for r in range(g):
            begin(r)
        net.run()
