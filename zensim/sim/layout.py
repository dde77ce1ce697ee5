"""Place a scheme on a cluster: flat (every GPU an endpoint) or ZEN's multi-GPU layout.

ZEN layout, g GPUs per machine: (1) dense ring reduce-scatter inside each machine over NVLink, GPU
of local rank l ending with contiguous shard l of the machine's sum; (2) the sparse scheme across
machines among the GPUs of local rank l, one instance per shard, all g instances at once sharing the
NICs; the sparse data of (machine m, local rank l) is the union (sum) of m's GPUs' gradients
restricted to shard l; (3) dense ring all-gather inside each machine. The dense intra-machine
collectives are generated from sizes (fp32, 4 bytes per element), with `merge`/`copy` work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from zensim.schemes.driver import run_scheme
from zensim.schemes.log import Message, MessageLog, Work
from zensim.schemes.program import StageProgram
from zensim.sparse.chunk import SparseChunk, unique_sorted
from zensim.sparse.partition import even_boundaries

DENSE_BYTES = 4
LAYOUTS = ("zen", "flat")
Builder = Callable[[int, int, Sequence[SparseChunk]], StageProgram]  # (n, numel, chunks) -> program


@dataclass
class Placed:
    """A cluster-wide message log (ranks = GPUs) and the per-group scheme logs it was made of."""

    log: MessageLog
    groups: list[MessageLog]  # one scheme log per local rank (one in the flat layout)
    programs: list[StageProgram]


def machine_shards(chunks: Sequence[SparseChunk], numel: int, gpus: int) -> tuple[list[list[SparseChunk]], np.ndarray]:
    """Per local rank l, per machine m: the union of m's GPUs' indices inside shard l, shard-local ids."""
    bounds = even_boundaries(numel, gpus)
    machines = len(chunks) // gpus
    shards: list[list[SparseChunk]] = [[] for _ in range(gpus)]
    for m in range(machines):
        mine = [chunks[m * gpus + i].indices for i in range(gpus)]
        cuts = [np.searchsorted(idx, bounds) for idx in mine]
        for local in range(gpus):
            parts = [idx[c[local]: c[local + 1]] for idx, c in zip(mine, cuts)]
            union = unique_sorted(np.concatenate(parts)) - bounds[local]
            shards[local].append(SparseChunk(union.astype(np.int64), None))
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


@dataclass
class Prepared:
    """The chunks each scheme instance runs on, computed once per trace x cluster x layout."""

    machines: int
    gpus: int
    numel: int
    groups: list[list[SparseChunk]]  # per local rank (one group in the flat layout)
    sizes: np.ndarray  # elements of each group's tensor (its shard)


def prepare(chunks: Sequence[SparseChunk], numel: int, machines: int, gpus: int, layout: str) -> Prepared:
    """Flat: one group of all GPUs' chunks. ZEN: per local rank, the machines' unions on its shard."""
    if layout == "flat" or gpus == 1:
        return Prepared(machines, gpus, numel, [list(chunks)], np.array([numel]))
    shards, bounds = machine_shards(chunks, numel, gpus)
    return Prepared(machines, gpus, numel, shards, np.diff(bounds))


def place(prep: Prepared, build: Builder) -> Placed:
    """Run the scheme (via `build`) on every group and assemble the cluster-wide message log."""
    programs = [build(len(group), int(size), group) for group, size in zip(prep.groups, prep.sizes)]
    logs = [run_scheme(p, c, check=False).log for p, c in zip(programs, prep.groups)]
    if len(logs) == 1:
        return Placed(logs[0], logs, programs)
    machines, gpus = prep.machines, prep.gpus
    offset = gpus - 1
    middle = max(lg.num_stages for lg in logs)
    total = MessageLog(machines * gpus, 2 * offset + middle)
    scatter = intra_ring(machines, gpus, prep.sizes, 0, gather=False)
    total.messages += scatter.messages
    total.work += scatter.work
    for local, lg in enumerate(logs):
        total.messages += [Message(m.stage + offset, m.src * gpus + local, m.dst * gpus + local, m.nbytes, m.fmt)
                           for m in lg.messages]
        total.work += [Work(w.stage + offset, w.rank * gpus + local, w.phase, w.kind, w.elements) for w in lg.work]
    gather = intra_ring(machines, gpus, prep.sizes, offset + middle, gather=True)
    total.messages += gather.messages
    total.work += gather.work
    return Placed(total, logs, programs)
