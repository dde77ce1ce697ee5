"""The in-memory driver: all n ranks of a stage program in one process, payloads passed as objects.

`run_scheme(prog, chunks)` runs the stages in order (every rank's sends, then every rank's
receives), logs one `Message` per (stage, src, dst) with the exact bytes the format gives and one
`Work` per (stage, rank, phase, kind), and, for lossless schemes, checks that every rank ended
with the dense sum: the same indices exactly, values within float tolerance.
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from zensim.errors import ConfigError
from zensim.schemes.log import Message, MessageLog, Work
from zensim.schemes.program import StageProgram
from zensim.sparse.bits import bit_positions, pack_positions
from zensim.sparse.chunk import SparseChunk, sum_chunks


@dataclass
class RunResult:
    """Every rank's aggregated chunk and the message log of the run."""

    results: list[SparseChunk]
    log: MessageLog


class AggregationMismatch(AssertionError):
    """A lossless scheme ended with a result different from the dense sum (a bug, not user error)."""


class WorkMeter:
    """Accumulates work per (stage, rank, phase, kind) for the current position of the driver."""

    def __init__(self) -> None:
        self.counts: dict[tuple[int, int, str, str], int] = defaultdict(int)
        self.at = (0, 0, "pre")

    def add(self, kind: str, elements: int) -> None:
        """Count `elements` (> 0) of work `kind` at the current (stage, rank, phase)."""
        if elements:
            self.counts[(*self.at, kind)] += int(elements)

    def records(self) -> list[Work]:
        """The work log in the order it was done: by stage, `pre` of every rank, then `post`."""
        return [Work(s, r, ph, kind, count) for (s, r, ph, kind), count in self.counts.items()]


def run_scheme(prog: StageProgram, chunks: Sequence[SparseChunk], check: bool = True) -> RunResult:
    """Run `prog` on one chunk per rank; check lossless results against the dense sum if `check`.

    The cyclic garbage collector is paused meanwhile: a 128-rank run creates millions of small
    acyclic objects (groups, payloads, log records) that would trigger full collections."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(prog, chunks, check)
    finally:
        if enabled:
            gc.enable()


def _run(prog: StageProgram, chunks: Sequence[SparseChunk], check: bool) -> RunResult:
    """run_scheme's body."""
    n = prog.n
    if len(chunks) != n:
        raise ConfigError(f"{prog.name}: {len(chunks)} chunks for {n} ranks")
    if len({c.values is None for c in chunks}) > 1:
        raise ConfigError(f"{prog.name}: chunks mix values and indices-only")
    for r, c in enumerate(chunks):
        if c.nnz and (c.indices[0] < 0 or c.indices[-1] >= prog.numel):
            raise ConfigError(f"{prog.name}: rank {r}'s chunk has ids outside [0, {prog.numel})")
    meter = WorkMeter()
    log = MessageLog(n, prog.num_stages)
    states = []
    for r in range(n):
        meter.at = (0, r, "pre")
        states.append(prog.start(r, chunks[r], meter))
    for s in range(prog.num_stages):
        outboxes = []
        for r in range(n):
            meter.at = (s, r, "pre")
            out = prog.sends(s, r, states[r], meter)
            if list(out) != prog.destinations(s, r):
                raise RuntimeError(f"{prog.name}: stage {s} rank {r} sent to {list(out)}, "
                                   f"plan says {prog.destinations(s, r)}")
            log.messages.extend(Message(s, r, dst, int(m.nbytes), m.fmt.name) for dst, m in out.items())
            outboxes.append(out)
        for r in range(n):
            meter.at = (s, r, "post")
            inbox = {src: outboxes[src][r] for src in prog.sources(s, r)}
            states[r] = prog.receive(s, r, states[r], inbox, meter)
        del outboxes
    log.work = meter.records()
    results = [prog.result(r, states[r]) for r in range(n)]
    if check and prog.lossless:
        check_results(prog.name, chunks, results, prog.numel, prog.push.value.name)
    return RunResult(results, log)


EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


_EXPECTED: list[tuple[tuple[SparseChunk, ...], int, SparseChunk]] = []


def dense_sum(chunks: Sequence[SparseChunk], numel: int) -> SparseChunk:
    """The aggregate every rank must end with (a bitset union when indices-only: fast at scale).
    The last one is kept: checking several schemes on the same chunk objects computes it once."""
    key = tuple(chunks)
    if _EXPECTED and _EXPECTED[0][1] == numel and len(_EXPECTED[0][0]) == len(key) \
            and all(a is b for a, b in zip(_EXPECTED[0][0], key)):
        return _EXPECTED[0][2]
    if chunks and all(c.values is None for c in chunks):
        words = np.zeros((numel + 63) // 64, np.uint64)
        for c in chunks:
            np.bitwise_or(words, pack_positions(c.indices, numel), out=words)
        expected = SparseChunk(bit_positions(words), None)
    else:
        expected = sum_chunks(list(chunks))
    _EXPECTED[:] = [(key, numel, expected)]
    return expected


def check_results(name: str, chunks: Sequence[SparseChunk], results: Sequence[SparseChunk], numel: int,
                  value_dtype: str = "float32") -> None:
    """AggregationMismatch unless every result equals the dense sum of `chunks` (values within
    4 n eps of the summed magnitudes, eps of the wire value dtype)."""
    expected = dense_sum(chunks, numel)
    scale = max((float(np.abs(c.values).sum()) for c in chunks if c.values is not None and c.nnz), default=1.0)
    tol = 4 * len(chunks) * EPS[value_dtype] * scale
    seen: set[int] = set()
    for rank, got in enumerate(results):
        if id(got) in seen:
            continue
        seen.add(id(got))
        if not np.array_equal(got.indices, expected.indices):
            missing = np.setdiff1d(expected.indices, got.indices)
            extra = np.setdiff1d(got.indices, expected.indices)
            raise AggregationMismatch(f"{name}: rank {rank} has {len(got.indices)} indices, expected "
                                      f"{len(expected.indices)} ({len(missing)} missing, {len(extra)} extra)")
        if expected.values is not None and got.values is not None:
            err = np.abs(got.values.astype(np.float64) - expected.values.astype(np.float64))
            if len(err) and err.max() > tol:
                raise AggregationMismatch(f"{name}: rank {rank} values differ from the dense sum by {err.max():.3g}")
