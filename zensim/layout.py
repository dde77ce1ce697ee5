"""Place a scheme on a cluster: flat (every GPU an endpoint) or ZEN's multi-GPU layout.

ZEN layout, g GPUs per machine: (1) dense ring reduce-scatter inside each machine over NVLink, GPU
of local rank l ending with contiguous shard l of the machine's sum; (2) the sparse scheme across
machines among the GPUs of local rank l, one instance per shard, all g instances at once sharing the
NICs; the sparse data of (machine m, local rank l) is the sum of m's GPUs' gradients restricted to
shard l (the union of their indices; with values, the values summed); (3) dense ring all-gather
inside each machine. The dense intra-machine collectives are generated from sizes (fp32, 4 bytes
per element), with `merge`/`copy` work, each one fused collective kernel per GPU (NCCL's: one launch,
`MessageLog.fused`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from zensim.errors import ConfigError
from zensim.run import MessageLog, RunOutput, Tables, run_ranks
from zensim.run.log import Message, Work
from zensim.run.program import StageProgram
from zensim.sparse.chunk import SparseChunk, sum_chunks, union_marked
from zensim.sparse.partition import even_boundaries
from zensim.trace.format import Trace
from zensim.trace.values import worker_chunk

DENSE_BYTES = 4
LAYOUTS = ("zen", "flat")
PHASES = ("intra-machine reduce-scatter", "push", "pull", "intra-machine all-gather")
Builder = Callable[[int, int, Sequence[SparseChunk]], StageProgram]  # (n, numel, chunks) -> program


@dataclass
class Placed:
    """A cluster-wide message log (ranks = GPUs) and the per-group runs it was made of."""

    log: MessageLog
    runs: list[RunOutput]  # one scheme run per local rank (one in the flat layout); results empty when sized
    programs: list[StageProgram]


def machine_shards(chunks: Sequence[SparseChunk], numel: int, gpus: int) -> tuple[list[Shards], np.ndarray]:
    """Per local rank l, per machine m: the sum of m's GPUs' chunks inside shard l, shard-local ids."""
    machines = len(chunks) // gpus
    return stream_shards((chunks[m * gpus:(m + 1) * gpus] for m in range(machines)), numel, gpus)


class Shards(Sequence):
    """Chunks held compactly: ids as int32 where they fit (indices-only), handed out as int64 chunks one
    at a time. The machines' chunks of one shard in ZEN's layout (at 1024 x 8 GPUs about 600 million
    ids: 2.4 GB so, not 4.8), every GPU's chunk in the flat one (at 4096 ranks of 10M elements at 1%:
    1.6 GB, not 3.3)."""

    def __init__(self, size: int) -> None:
        self._dtype = np.int32 if size < 2**31 else np.int64
        self._chunks: list[SparseChunk] = []

    def append(self, chunk: SparseChunk) -> None:
        """Keep one machine's chunk (compacted when it carries no values)."""
        if chunk.values is None:
            chunk = SparseChunk(chunk.indices.astype(self._dtype), None)
        self._chunks.append(chunk)

    def __len__(self) -> int:
        return len(self._chunks)

    def __getitem__(self, m):  # type: ignore[no-untyped-def]
        if isinstance(m, slice):
            return [self[i] for i in range(len(self))[m]]
        chunk = self._chunks[m]
        return chunk if chunk.values is not None else SparseChunk(chunk.indices.astype(np.int64), None)


def stream_shards(machines: Iterable[Sequence[SparseChunk]], numel: int, gpus: int) -> tuple[list[Shards], np.ndarray]:
    """`machine_shards` of machines given one at a time (each machine's GPUs' chunks): only the
    shards are kept, never every GPU's chunk."""
    bounds = even_boundaries(numel, gpus)
    sizes = np.diff(bounds)
    shards = [Shards(int(size)) for size in sizes]
    seen = np.zeros(int(sizes.max(initial=0)), np.bool_)  # indices-only unions: marks, cleared after each
    for mine in machines:
        cuts = [np.searchsorted(c.indices, bounds) for c in mine]
        for local in range(gpus):
            parts = [SparseChunk(c.indices[cut[local]:cut[local + 1]] - bounds[local],
                                 None if c.values is None else c.values[cut[local]:cut[local + 1]])
                     for c, cut in zip(mine, cuts)]
            if any(p.values is not None for p in parts):
                shards[local].append(sum_chunks(parts))
            else:
                shards[local].append(SparseChunk(union_marked(parts, seen), None))
    return shards, bounds


def intra_ring(machines: int, gpus: int, sizes: np.ndarray, first_stage: int, gather: bool) -> MessageLog:
    """Dense ring reduce-scatter (local rank l ends with shard l) or all-gather inside every machine,
    one fused collective (one launch per GPU: NCCL's)."""
    msgs, work = [], []
    for s in range(gpus - 1):
        for m in range(machines):
            for local in range(gpus):
                shard = (local - s) % gpus if gather else (local - s - 1) % gpus
                src, dst = m * gpus + local, m * gpus + (local + 1) % gpus
                msgs.append(Message(first_stage + s, src, dst, int(sizes[shard]) * DENSE_BYTES, "dense"))
                work.append(Work(first_stage + s, dst, "post", "copy" if gather else "merge", int(sizes[shard])))
    return MessageLog(machines * gpus, gpus - 1, msgs, work).fused()


def doubling_log(n: int, numel: int) -> MessageLog:
    """The dense recursive-doubling all-reduce of `numel` fp32 elements among n ranks (the dense-doubling
    scheme's messages and the work its run records, zensim.schemes.workkinds), from sizes: with p the
    largest power of two <= n, rank r >= p sends its tensor to r - p, log2 p stages of exchanges with
    partner r ^ 2**k, then r - p sends the sum back to r. Every send encodes the whole tensor and every
    receive decodes it (`scan.dense`); a received tensor is added (`add.dense`) before the rank's next
    send, the last exchange's right after it is received. One fused collective: one launch per rank
    (`MessageLog.fused`), as the scheme's run records it (its messages are all dense)."""
    p = 1 << (n.bit_length() - 1)
    levels, folded = p.bit_length() - 1, n > p
    nbytes = numel * DENSE_BYTES
    msgs, work = [], []

    def send(stage: int, src: int, dst: int) -> None:
        msgs.append(Message(stage, src, dst, nbytes, "dense"))
        work.append(Work(stage, src, "pre", "scan.dense", numel))
        work.append(Work(stage, dst, "post", "scan.dense", numel))

    stage = 0
    if folded:
        for r in range(p, n):
            send(stage, r, r - p)
        stage += 1
    for k in range(levels):
        for r in range(p):
            if k or r < n - p:  # what it received at the stage before (the fold, or the last exchange)
                work.append(Work(stage, r, "pre", "add.dense", numel))
            send(stage, r, r ^ (1 << k))
        if k == levels - 1:
            work.extend(Work(stage, r, "post", "add.dense", numel) for r in range(p))
        stage += 1
    if folded:
        for r in range(p, n):
            send(stage, r - p, r)
        stage += 1
    return MessageLog(n, max(stage, 1), msgs, [w for w in work if w.elements]).fused()


def ring_log(n: int, numel: int) -> MessageLog:
    """The dense ring all-reduce of `numel` fp32 elements among n ranks (reduce-scatter, all-gather):
    the dense-allreduce scheme's messages and the work its run records when every rank's gradient is
    dense (zensim.schemes.workkinds), so that the reference is priced as that scheme is. Rank r splits
    its tensor into the n parts (`slice`, its elements); at reduce-scatter stage s it adds the part it
    got at stage s-1 to its own (`add.dense`, before sending it on) and encodes part r-1-s
    (`scan.dense`), decodes the part it gets (`scan.dense`) and after the last receive adds it (part r
    complete); at all-gather stage t it encodes part r-t and decodes part r-1-t (`scan.dense`). One
    fused collective kernel per rank, as NCCL runs it: one launch per rank in all (`MessageLog.fused`),
    as the scheme's run records it (its messages are all dense)."""
    parts = np.diff(even_boundaries(numel, n)).tolist()
    msgs, work = [], []
    for s in range(2 * (n - 1)):
        gather = s >= n - 1
        for r in range(n):
            sent = (r - s + n - 1) % n if gather else (r - 1 - s) % n
            got = (sent - 1) % n
            msgs.append(Message(s, r, (r + 1) % n, parts[sent] * DENSE_BYTES, "dense"))
            if s == 0:
                work.append(Work(s, r, "pre", "slice", numel))
            if 0 < s < n - 1:
                work.append(Work(s, r, "pre", "add.dense", parts[sent]))
            work.append(Work(s, r, "pre", "scan.dense", parts[sent]))
            work.append(Work(s, r, "post", "scan.dense", parts[got]))
            if s == n - 2:
                work.append(Work(s, r, "post", "add.dense", parts[r]))
    return MessageLog(n, 2 * (n - 1), msgs, [w for w in work if w.elements]).fused()


# dense all-reduce algorithms from sizes: name -> (ranks, elements) -> log, and the scheme each one's messages are
DENSE_ALGORITHMS = {"ring": ring_log, "doubling": doubling_log}
DENSE_SCHEMES = {"ring": "dense-allreduce", "doubling": "dense-doubling"}


def dense_log(machines: int, gpus: int, numel: int, layout: str, algorithm: str = "ring") -> MessageLog:
    """A dense all-reduce of `numel` fp32 elements by `algorithm` (DENSE_ALGORITHMS), from sizes alone (no
    data, no driver): across all GPUs (flat, or one GPU per machine), or hierarchical in ZEN's layout as
    NCCL runs it: a ring reduce-scatter inside each machine over NVLink, the algorithm's all-reduce of
    shard l across machines per local rank l, a ring all-gather inside each machine. Work: the ring's
    is the dense-allreduce scheme's (`ring_log`: array additions, `add.dense`), recursive doubling's
    the dense-doubling scheme's (`doubling_log`); the intra-machine rings' a merge of each received
    part, a copy of each gathered one (`intra_ring`, as for every scheme placed). Each collective is
    fused: a rank pays one launch per collective it takes part in (one flat; three in ZEN's layout:
    the reduce-scatter, the all-reduce across machines, the all-gather), and its per-element costs."""
    inter = DENSE_ALGORITHMS[algorithm]
    n = machines * gpus
    if layout == "flat" or gpus == 1:
        return inter(n, numel)
    shards = np.diff(even_boundaries(numel, gpus))
    across = [inter(machines, size) for size in shards.tolist()]
    offset, middle = gpus - 1, max(log.num_stages for log in across)
    stages = 2 * offset + middle
    logs = [intra_ring(machines, gpus, shards, 0, gather=False).placed(np.arange(n), 0, n, stages)]
    logs += [log.placed(np.arange(machines) * gpus + local, offset, n, stages) for local, log in enumerate(across)]
    logs.append(intra_ring(machines, gpus, shards, offset + middle, gather=True).placed(np.arange(n), 0, n, stages))
    return MessageLog.concat(logs, n, stages)


def dense_ring_log(machines: int, gpus: int, numel: int, layout: str) -> MessageLog:
    """`dense_log` by the ring (the synchronization level's dense baseline)."""
    return dense_log(machines, gpus, numel, layout, "ring")


@dataclass
class Prepared:
    """The chunks each scheme instance runs on, computed once per trace x cluster x layout."""

    machines: int
    gpus: int
    numel: int
    groups: list[Sequence[SparseChunk]]  # per local rank (one group in the flat layout)
    sizes: np.ndarray  # elements of each group's tensor (its shard)


def prepare(chunks: Sequence[SparseChunk], numel: int, machines: int, gpus: int, layout: str) -> Prepared:
    """Flat: one group of all GPUs' chunks. ZEN: per local rank, the machines' sums on its shard."""
    if layout == "flat" or gpus == 1:
        return Prepared(machines, gpus, numel, [list(chunks)], np.array([numel]))
    shards, bounds = machine_shards(chunks, numel, gpus)
    return Prepared(machines, gpus, numel, shards, np.diff(bounds))


def load_chunks(trace: Trace, iteration: int, gpus: int, values: bool = False) -> list[SparseChunk]:
    """The first `gpus` workers' flat chunks at `iteration`: indices only, or with values (the trace's,
    or synthetic ones for an indices-only trace: zensim.trace.values)."""
    _check_workers(trace, iteration, gpus)
    return [worker_chunk(trace, iteration, w, values) for w in range(gpus)]


def _check_workers(trace: Trace, iteration: int, gpus: int) -> None:
    """ConfigError unless the trace has `gpus` workers and the iteration."""
    if trace.workers < gpus:
        raise ConfigError(f"{trace.path}: trace has {trace.workers} workers, the cluster asks for {gpus} GPUs")
    if not 0 <= iteration < trace.iterations:
        raise ConfigError(f"--iteration {iteration}: trace {trace.path} has iterations 0..{trace.iterations - 1}")


def prepare_trace(trace: Trace, iteration: int, machines: int, gpus: int, layout: str,
                  values: bool = False) -> Prepared:
    """`prepare` on the trace's first machines x gpus workers at `iteration`, read a worker at a time
    into `Shards` (flat: one group of every worker's chunk; ZEN's layout: a machine at a time, what is
    held is the shards, not every worker's chunk as well)."""
    _check_workers(trace, iteration, machines * gpus)
    if layout == "flat" or gpus == 1:
        group = Shards(trace.numel)
        for w in range(machines * gpus):
            group.append(worker_chunk(trace, iteration, w, values))
        return Prepared(machines, gpus, trace.numel, [group], np.array([trace.numel]))
    per_machine = ([worker_chunk(trace, iteration, m * gpus + g, values) for g in range(gpus)] for m in range(machines))
    shards, bounds = stream_shards(per_machine, trace.numel, gpus)
    return Prepared(machines, gpus, trace.numel, shards, np.diff(bounds))


def place(prep: Prepared, build: Builder, tables: Tables | None = None, check: bool = False) -> Placed:
    """Run the scheme (via `build`) on every group and assemble the cluster-wide message log."""
    programs = [build(len(group), int(size), group) for group, size in zip(prep.groups, prep.sizes)]
    runs = [_run(p, c, tables, check) for p, c in zip(programs, prep.groups)]
    return Placed(assemble(prep.machines, prep.gpus, prep.sizes, [run.log for run in runs]), runs, programs)


def _run(program: StageProgram, chunks: Sequence[SparseChunk], tables: Tables | None, check: bool) -> RunOutput:
    """The driver's run, or unchecked its log from counts where the program's messages follow from
    them (the program's `sized_log`: the same log, no aggregate made, so `results` is empty)."""
    sized = None if check else program.sized_log(chunks, tables)
    if sized is None:
        return run_ranks(program, chunks, check=check, tables=tables)
    log, ctx = sized
    return RunOutput(list(range(program.n)), [], log, ctx)


def assemble(machines: int, gpus: int, sizes: np.ndarray, logs: Sequence[MessageLog]) -> MessageLog:
    """The cluster-wide log of the group logs: the one log in the flat layout; in ZEN's layout the
    intra-machine reduce-scatter, group l's log on the GPUs of local rank l, the all-gather."""
    if len(logs) == 1:
        return logs[0]
    n, offset = machines * gpus, gpus - 1
    middle = max(log.num_stages for log in logs)
    stages = 2 * offset + middle
    out = [intra_ring(machines, gpus, sizes, 0, gather=False).placed(np.arange(n), 0, n, stages)]
    out += [log.placed(np.arange(machines) * gpus + local, offset, n, stages) for local, log in enumerate(logs)]
    out.append(intra_ring(machines, gpus, sizes, offset + middle, gather=True).placed(np.arange(n), 0, n, stages))
    return MessageLog.concat(out, n, stages)


def stage_phases(placed: Placed) -> list[str]:
    """The phase of each stage of the cluster-wide log (PHASES): in ZEN's layout the intra-machine
    reduce-scatter, then the scheme's stages, then the intra-machine all-gather; the scheme's stages are
    push (step 1) before its `step2_start`, pull after (a program without a second step declares
    `num_stages`: all push)."""
    offset = len(placed.programs) - 1 if len(placed.programs) > 1 else 0
    program = placed.programs[0]
    step2 = program.step2_start
    middle = placed.log.num_stages - 2 * offset
    return ([PHASES[0]] * offset + [PHASES[1] if s < step2 else PHASES[2] for s in range(middle)]
            + [PHASES[3]] * offset)
