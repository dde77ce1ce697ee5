"""Checks every scheme must pass (as scikit-learn's `check_estimator`): `check_scheme(name)`.

tests/test_conformance.py runs it over the catalog and the design space; run it on a new scheme
while writing it. It runs the scheme for several n through the one loop of zensim.run, with values
and indices only, in memory and through bytes, and checks what the scheme's capabilities promise;
with values, it runs again on torch tensors (the emulator's and the DDP hook's backend: one kernel,
zensim.sparse.xp) and checks the same log and the same bits.
"""

from __future__ import annotations

from zensim.errors import ConfigError
from zensim.run import InBytes, run_ranks, same_bits
from zensim.schemes.closed import measure
from zensim.schemes.registry import build_scheme, lookup, scheme_options
from zensim.sparse.chunk import SparseChunk
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


def check_scheme(name: str, sizes: tuple[int, ...] = (1, 2, 5, 8), numel: int = 701) -> None:
    """For every n in `sizes`: lossless schemes end with the dense sum (and bit-identical replicas
    where promised: the driver checks both); the bytes transport logs exactly the in-memory bytes
    and ends with the same bits; indices-only runs log the same bytes (unless the scheme needs
    values, which it must then refuse in one line); on torch tensors the same log and the same bits
    (`check_torch`: a scheme's local work is written once over zensim.sparse.xp); the closed
    form, if any, gives a time; every declared option's default builds and an undeclared option is
    refused."""
    for n in sizes:
        for case in ("random", "one-empty"):
            chunks = sample_chunks(case, n, numel, 0.1, n, values=True)
            prog = _build(name, n, numel, chunks)
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
                assert run_ranks(_build(name, n, numel, chunks), bare).log.messages == memory.log.messages, \
                    f"{name}: indices-only run logs other bytes"
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
