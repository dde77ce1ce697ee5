"""Place a scheme on a cluster: flat (every GPU an endpoint) or ZEN's multi-GPU layout.

ZEN layout, g GPUs per machine: (1) dense ring reduce-scatter inside each machine over NVLink, GPU
of local rank l ending with contiguous shard l of the machine's sum; (2) the sparse scheme across
machines among the GPUs of local rank l, one instance per shard, all g instances at once sharing the
NICs; the sparse data of (machine m, local rank l) is the sum of m's GPUs' gradients restricted to
shard l (the union of their indices; with values, the values summed); (3) dense ring all-gather
inside each machine. The dense intra-machine collectives are generated from sizes (fp32, 4 bytes
per element), with `merge`/`copy` work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from zensim.run import MessageLog, RunOutput, Tables, run_ranks
from zensim.run.log import Message, Work
from zensim.sparse.chunk import SparseChunk, sum_chunks
from zensim.sparse.partition import even_boundaries

DENSE_BYTES = 4
LAYOUTS = ("zen", "flat")
PHASES = ("intra-machine reduce-scatter", "push", "pull", "intra-machine all-gather")
Builder = Callable[[int, int, Sequence[SparseChunk]], object]  # (n, numel, chunks) -> program


@dataclass
class Placed:
    """A cluster-wide message log (ranks = GPUs) and the per-group runs it was made of."""

    log: MessageLog
    runs: list[RunOutput]  # one scheme run per local rank (one in the flat layout)
    programs: list[object]


def machine_shards(chunks: Sequence[SparseChunk], numel: int, gpus: int) -> tuple[list[list[SparseChunk]], np.ndarray]:
    """Per local rank l, per machine m: the sum of m's GPUs' chunks inside shard l, shard-local ids."""
    bounds = even_boundaries(numel, gpus)
    machines = len(chunks) // gpus
    shards: list[list[SparseChunk]] = [[] for _ in range(gpus)]
    for m in range(machines):
        mine = chunks[m * gpus:(m + 1) * gpus]
        cuts = [np.searchsorted(c.indices, bounds) for c in mine]
        for local in range(gpus):
            parts = [SparseChunk(c.indices[cut[local]:cut[local + 1]] - bounds[local],
                                 None if c.values is None else c.values[cut[local]:cut[local + 1]])
                     for c, cut in zip(mine, cuts)]
            shards[local].append(sum_chunks(parts))
    return shards, bounds


def intra_ring(machines: int, gpus: int, sizes: np.ndarray, first_stage: int, gather: bool) -> MessageLog:
    """Dense ring reduce-scatter (local rank l ends with shard l) or all-gather inside every machine."""
    msgs, work = [], []
    for s in range(gpus - 1):
        for m in range(machines):
            for local in range(gpus):
                shard = (local - s) % gpus if gather else (local - s - 1) % gpus
                src, dst = m * gpus + local, m * gpus + (local + 1) % gpus
                msgs.append(Message(first_stage + s, src, dst, int(sizes[shard]) * DENSE_BYTES, "dense"))
                work.append(Work(first_stage + s, dst, "post", "copy" if gather else "merge", int(sizes[shard])))
    return MessageLog(machines * gpus, gpus - 1, msgs, work)


def dense_ring_log(machines: int, gpus: int, numel: int, layout: str) -> MessageLog:
    """The dense ring all-reduce of `numel` fp32 elements, from sizes alone (no data, no driver): across
    all GPUs (flat, or one GPU per machine), or in ZEN's layout: ring reduce-scatter inside each machine,
    a ring all-reduce of shard l across machines per local rank l, ring all-gather inside each machine.
    Work: a merge of each received shard (reduce-scatter), a copy (all-gather)."""
    n = machines * gpus
    if layout == "flat" or gpus == 1:
        parts = np.diff(even_boundaries(numel, n))
        return MessageLog.concat([intra_ring(1, n, parts, 0, gather=False),
                                  intra_ring(1, n, parts, n - 1, gather=True)], n, 2 * (n - 1))
    shards = np.diff(even_boundaries(numel, gpus))
    offset, middle = gpus - 1, 2 * (machines - 1)
    stages = 2 * offset + middle
    logs = [intra_ring(machines, gpus, shards, 0, gather=False).placed(np.arange(n), 0, n, stages)]
    for local, size in enumerate(shards.tolist()):
        inter = dense_ring_log(machines, 1, size, "flat")
        logs.append(inter.placed(np.arange(machines) * gpus + local, offset, n, stages))
    logs.append(intra_ring(machines, gpus, shards, offset + middle, gather=True).placed(np.arange(n), 0, n, stages))
    return MessageLog.concat(logs, n, stages)


@dataclass
class Prepared:
    """The chunks each scheme instance runs on, computed once per trace x cluster x layout."""

    machines: int
    gpus: int
    numel: int
    groups: list[list[SparseChunk]]  # per local rank (one group in the flat layout)
    sizes: np.ndarray  # elements of each group's tensor (its shard)


def prepare(chunks: Sequence[SparseChunk], numel: int, machines: int, gpus: int, layout: str) -> Prepared:
    """Flat: one group of all GPUs' chunks. ZEN: per local rank, the machines' sums on its shard."""
    if layout == "flat" or gpus == 1:
        return Prepared(machines, gpus, numel, [list(chunks)], np.array([numel]))
    shards, bounds = machine_shards(chunks, numel, gpus)
    return Prepared(machines, gpus, numel, shards, np.diff(bounds))


def place(prep: Prepared, build: Builder, tables: Tables | None = None, check: bool = False) -> Placed:
    """Run the scheme (via `build`) on every group and assemble the cluster-wide message log."""
    programs = [build(len(group), int(size), group) for group, size in zip(prep.groups, prep.sizes)]
    runs = [run_ranks(p, c, check=check, tables=tables) for p, c in zip(programs, prep.groups)]
    return Placed(assemble(prep.machines, prep.gpus, prep.sizes, [run.log for run in runs]), runs, programs)


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
    push (step 1) before its `step2_start`, pull after (a program without a second step: all push)."""
    offset = len(placed.programs) - 1 if len(placed.programs) > 1 else 0
    program = placed.programs[0]
    step2 = getattr(program, "step2_start", program.num_stages)
    middle = placed.log.num_stages - 2 * offset
    return ([PHASES[0]] * offset + [PHASES[1] if s < step2 else PHASES[2] for s in range(middle)]
            + [PHASES[3]] * offset)
