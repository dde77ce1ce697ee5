"""The one rank-step loop: every driver of a stage program is `run_ranks` with a transport.

The timing contract (every network model and the emulator follow it, docs/architecture.md): rank
r's stage s starts when its stage s-1 ended; its `pre` step does its local work and hands its
stage-s messages to the transport (stage 0's `pre` includes `start`); its `comm` step waits until
all its stage-s messages have arrived and its own stage-s sends have completed; its `post` step
decodes and receives them; that ends stage s. There is no global barrier. A run ends with the
last stage: `result()` (one sorted chunk of the aggregate, for checks) is not part of it.

In one process with every rank (the in-memory transports) the loop runs all ranks' `pre` steps
of a stage, then all `post` steps; with one rank per process (torch.distributed) each process
runs its rank's steps and the exchange happens in `comm`. The loop is the same.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zensim.errors import ConfigError, ValueRangeError
from zensim.run.check import check_results, check_sum_range
from zensim.run.context import COMM, POST, PRE, Meter, RunContext, Tables
from zensim.run.log import LogBuilder, MessageLog
from zensim.run.program import StageProgram
from zensim.run.transports import InMemory, Transport
from zensim.sparse import xp as backend
from zensim.sparse.chunk import SparseChunk


@dataclass
class RunOutput:
    """What a run produced for the ranks of this process: their results (in `ranks` order; empty
    for a log computed from counts, zensim.layout.place), the message log of their sends and
    work, and the run's context (meter with step times when timed, discarded values, values flushed
    to zero, statistics)."""

    ranks: list[int]
    results: list[SparseChunk]
    log: MessageLog
    context: RunContext


def run_ranks(program: StageProgram, chunks: Sequence[SparseChunk] | Mapping[int, SparseChunk], transport: Transport | None = None,
              *, check: bool = True, timed: bool = False, tables: Tables | None = None) -> RunOutput:
    """Run `program` on one chunk per rank through `transport` (default: in memory, objects).

    `chunks[r]` is rank r's input (a list of all n, or a mapping holding at least the local ranks).
    With `check`, a lossless program run with every rank here is checked: the dense sum on every
    rank, bit-identical replicas where the program promises them (AggregationMismatch otherwise).
    A program that is one collective kernel (`caps.collective`) has its log `fused`.
    `timed` records each step's wall and CPU seconds in `context.meter` (and `meter.finished_at`,
    the clock when the last stage ended). `tables` shares derived
    tables (hash domains, expected sums) with other runs. The cyclic garbage collector is paused
    meanwhile: a 128-rank run makes millions of small acyclic objects."""
    transport = transport if transport is not None else InMemory()
    ranks = transport.local_ranks(program.n)
    values = _check_inputs(program, chunks, ranks)
    ctx = RunContext(Meter(program.n, program.num_stages, timed), tables, values, _like(chunks, ranks))
    enabled = gc.isenabled()
    gc.disable()
    try:
        if values:
            check_sum_range([chunks[r] for r in ranks], program.numel, program.value_dtype, ctx.tables)
        log, results = _loop(program, chunks, transport, ranks, ctx)
    except ValueRangeError as exc:
        raise ValueRangeError(f"{program.name}: {exc}") from None
    finally:
        if enabled:
            gc.enable()
    if check and program.caps.lossless and len(ranks) == program.n:
        check_results(program.name, [chunks[r] for r in ranks], results, program.numel,
                      value_dtype=program.value_dtype, keeps_zeros=program.caps.keeps_zeros,
                      replicas_identical=program.caps.replicas_identical, tables=ctx.tables)
    return RunOutput(ranks, results, log.fused() if program.caps.collective else log, ctx)


def _loop(program: StageProgram, chunks: Sequence[SparseChunk] | Mapping[int, SparseChunk], transport: Transport, ranks: list[int],
          ctx: RunContext) -> tuple[MessageLog, list[SparseChunk]]:
    """The stages: every local rank's pre step, comm step, post step (see the module docstring).
    Untimed runs skip the meter's clocks, and the comm step of transports that need no exchange."""
    meter, builder = ctx.meter, LogBuilder(program.n, program.num_stages)
    timed, exchanges = meter.timed, transport.exchanges or meter.timed
    post, take, add = transport.post, transport.take, builder.add
    states: dict[int, object] = {}
    for s in range(program.num_stages):
        for r in ranks:
            meter.step(s, r, PRE)
            if s == 0:
                states[r] = program.start(r, chunks[r], ctx)
            out = program.sends(s, r, states[r], ctx)
            if list(out) != program.destinations(s, r):
                raise RuntimeError(f"{program.name}: stage {s} rank {r} sent to {list(out)}, "
                                   f"plan says {program.destinations(s, r)}")
            for dst, message in out.items():
                add(s, r, dst, post(s, r, dst, message), message.fmt.name)
            if timed:
                meter.done(s, r, PRE)
        if exchanges:
            for r in ranks:
                meter.step(s, r, COMM)
                transport.deliver(s, r, program.sources(s, r))
                meter.done(s, r, COMM)
        for r in ranks:
            meter.step(s, r, POST)
            inbox = {src: take(s, r, src, program, ctx) for src in program.sources(s, r)}
            states[r] = program.receive(s, r, states[r], inbox, ctx)
            if timed:
                meter.done(s, r, POST)
    if timed:
        meter.finished_at = time.monotonic()
    log = builder.build(meter.counts)
    return log, [program.result(r, states[r], ctx) for r in ranks]


def _like(chunks: Sequence[SparseChunk] | Mapping[int, SparseChunk], ranks: list[int]) -> Any:
    """An array of the library and device of the local ranks' chunks (None without local ranks)."""
    return chunks[ranks[0]].indices if ranks else None


def _check_inputs(program: StageProgram, chunks: Sequence[SparseChunk] | Mapping[int, SparseChunk], ranks: list[int]) -> bool:
    """ConfigError on chunks that do not fit the program; whether they carry values."""
    if not isinstance(chunks, Mapping) and len(chunks) != program.n:
        raise ConfigError(f"{program.name}: {len(chunks)} chunks for {program.n} ranks")
    missing = [r for r in ranks if r not in chunks] if isinstance(chunks, Mapping) else []
    if missing:
        raise ConfigError(f"{program.name}: no chunk for rank(s) {missing}")
    mine = [chunks[r] for r in ranks]
    if len({c.values is None for c in mine}) > 1:
        raise ConfigError(f"{program.name}: chunks mix values and indices-only")
    for r, c in zip(ranks, mine):
        ends = backend.host(c.indices[[0, -1]]).tolist() if c.nnz else []  # one read from the device
        if ends and (ends[0] < 0 or ends[1] >= program.numel):
            raise ConfigError(f"{program.name}: rank {r}'s chunk has ids outside [0, {program.numel})")
    values = bool(mine) and mine[0].values is not None
    if program.caps.needs_values and not values:
        raise ConfigError(f"{program.name}: needs values, the chunks carry indices only (give values, "
                          "or synthetic values for an indices-only trace)")
    return values
