"""Checks every scheme must pass (as scikit-learn's `check_estimator`): `check_scheme(name)`.

tests/test_conformance.py runs it over the catalog and the design space; run it on a new scheme
while writing it. It runs the scheme for several n through the one loop of zensim.run, with values
and indices only, in memory and through bytes, and checks what the scheme's capabilities promise;
with values, it runs again on torch tensors (the emulator's and the DDP hook's backend: one kernel,
zensim.sparse.xp) and checks the same log and the same bits.
"""

from __future__ import annotations

import numpy as np

from zensim.errors import ConfigError
from zensim.run import InBytes, RunOutput, run_ranks
from zensim.run.program import StageProgram
from zensim.schemes.closed import measure
from zensim.schemes.registry import build_scheme, lookup, scheme_options
from zensim.sparse.chunk import SparseChunk, same_bits
from zensim.sparse.conformance import on_torch, sample_chunks


def _build(name: str, n: int, numel: int, chunks, **options):
    """Build `name`, with every rank's chunks as its profile where it chooses from data."""
    return build_scheme(name, n, numel, profile=chunks if lookup(name).needs_profile else None, **options)


def check_torch(name: str, n: int, numel: int, chunks: list[SparseChunk], reference) -> None:  # type: ignore[no-untyped-def]
    """`name` on torch tensors (CPU; the same code runs on a GPU), in memory and through bytes, logs
    exactly the numpy run `reference`'s messages and work and ends with its bits, in torch tensors."""
    tensors = on_torch(chunks)
    for transport in (None, InBytes()):
        out = run_ranks(_build(name, n, numel, chunks), tensors, transport)
        how = "in memory" if transport is None else "through bytes"
        assert out.log.messages == reference.log.messages, f"{name}: torch {how} logs other bytes than numpy"
        assert out.log.work == reference.log.work, f"{name}: torch {how} logs other work than numpy"
        for rank, (a, b) in enumerate(zip(reference.results, out.results)):
            assert not isinstance(b.indices, type(a.indices)), f"{name}: torch {how}: rank {rank}'s result left torch"
            assert same_bits(a, b), f"{name}: torch {how}: rank {rank}'s result differs from numpy's bits"


def check_sized(name: str, program: StageProgram, chunks: list[SparseChunk], driven: RunOutput) -> None:
    """The program's counted log (`sized_log`), where it has one, is the driver's run `driven` of the
    same indices-only chunks: the same messages, work and statistics."""
    sized = program.sized_log(chunks)
    if sized is None:
        return
    log, ctx = sized
    assert log.messages == driven.log.messages, f"{name}: the counted log has other messages than the driver's"
    assert log.work == driven.log.work, f"{name}: the counted log has other work than the driver's"
    assert set(ctx.stats) == set(driven.context.stats), f"{name}: the counted log keeps other statistics"
    for key, value in driven.context.stats.items():
        assert np.array_equal(ctx.stats[key], value), f"{name}: the counted log's {key} statistic differs"


def check_scheme(name: str, sizes: tuple[int, ...] = (1, 2, 5, 8), numel: int = 701) -> None:
    """For every n in `sizes`: lossless schemes end with the dense sum (and bit-identical replicas
    where promised: the driver checks both); the bytes transport logs exactly the in-memory bytes
    and ends with the same bits; indices-only runs log the same bytes (unless the scheme needs
    values, which it must then refuse in one line) and the program's counted log, where it has one,
    is the driver's (`check_sized`); the program is a StageProgram; on torch tensors the same log and the same bits
    (`check_torch`: a scheme's local work is written once over zensim.sparse.xp); the closed
    form, if any, gives a time; every declared option's default builds and an undeclared option is
    refused."""
    for n in sizes:
        for case in ("random", "one-empty"):
            chunks = sample_chunks(case, n, numel, 0.1, n, values=True)
            prog = _build(name, n, numel, chunks)
            assert isinstance(prog, StageProgram), f"{name}: its program lacks a StageProgram member"
            memory = run_ranks(prog, chunks)
            wire = run_ranks(_build(name, n, numel, chunks), chunks, InBytes())
            assert memory.log.messages == wire.log.messages, f"{name}: bytes transport logs other bytes"
            assert all(same_bits(a, b) for a, b in zip(memory.results, wire.results)), f"{name}: bytes change results"
            check_torch(name, n, numel, chunks, memory)
            bare = [SparseChunk(c.indices) for c in chunks]
            if prog.caps.needs_values:
                try:
                    run_ranks(prog, bare)
                except ConfigError:
                    pass
                else:
                    raise AssertionError(f"{name}: needs values but ran indices-only")
            else:
                driven = run_ranks(_build(name, n, numel, chunks), bare)
                assert driven.log.messages == memory.log.messages, f"{name}: indices-only run logs other bytes"
                check_sized(name, _build(name, n, numel, chunks), bare, driven)
        if prog.caps.closed_form is not None and n > 1:
            assert prog.caps.closed_form(measure(chunks, numel), 1e9) >= 0
    declared = scheme_options(name)
    assert "value_dtype" in {o.name for o in declared}, f"{name}: no value_dtype option"
    chunks = sample_chunks("random", 3, 100, 0.1, 0, values=False)
    for option in declared:
        if option.default is not None:
            _build(name, 3, 100, chunks, **{option.name: option.default})
    try:
        _build(name, 3, 100, chunks, no_such_option=1)
    except ConfigError as exc:
        assert "unknown option" in str(exc)
    else:
        raise AssertionError(f"{name}: accepted an option no part declares")
