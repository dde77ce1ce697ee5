"""Checks of a run's results: the dense sum, and replicas that are bit for bit the same; and of its
inputs: sums that some order of summing would overflow (`check_sum_range`).

A lossless scheme must end, on every rank, with the dense sum of the inputs: exactly the union of
the indices; values within the rounding a sum in the wire's value dtype can make (per element,
4 n eps x the sum of the magnitudes, plus n x the dtype's smallest normal for flushed values; NaN
is never within it). Formats without ids (dense, blocks) show a receiver only non-zero positions,
so there an index may be missing where its sum is zero. Every rank must apply the same update:
where the program says its replicas are identical, every rank's indices and value bits must equal
rank 0's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zensim.errors import ValueRangeError
from zensim.run.context import Tables
from zensim.sparse import xp as backend
from zensim.sparse.bits import bit_positions, pack_positions
from zensim.sparse.chunk import SparseChunk, run_starts, same_bits
from zensim.sparse.values import value_codec

EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}
TINY = {"float32": 2.0**-126, "float16": 2.0**-14, "bfloat16": 2.0**-126}


class AggregationMismatch(AssertionError):
    """A lossless scheme ended with a result different from the dense sum, or replicas that differ
    (a bug, not a user error)."""


class Expected:
    """The dense sum of every rank's chunk: the union of indices and, with values, the float64 sums
    and sums of magnitudes per index."""

    def __init__(self, chunks: Sequence[SparseChunk], numel: int) -> None:
        self.chunks = tuple(chunks)  # kept alive: Tables key on their identity
        if chunks and all(c.values is None for c in chunks):
            words = np.zeros((numel + 63) // 64, np.uint64)
            for c in chunks:
                np.bitwise_or(words, pack_positions(c.indices, numel), out=words)
            self.indices, self.sums, self.magnitudes = bit_positions(words), None, None
            return
        ids = np.concatenate([c.indices for c in chunks]) if chunks else np.empty(0, np.int64)
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        starts = np.flatnonzero(run_starts(ids))
        vals = np.concatenate([c.values for c in chunks]).astype(np.float64)[order] if chunks else np.empty(0)
        self.indices = ids[starts]
        self.sums = np.add.reduceat(vals, starts) if len(ids) else np.empty(0)
        self.magnitudes = np.add.reduceat(np.abs(vals), starts) if len(ids) else np.empty(0)


def expected_sum(chunks: Sequence[SparseChunk], numel: int, tables: Tables | None = None) -> Expected:
    """The dense sum of `chunks` (computed once per list of chunk objects when `tables` is given)."""
    if tables is None:
        return Expected(chunks, numel)
    return tables.get(("expected", numel, tuple(map(id, chunks))), lambda: Expected(chunks, numel))


def check_sum_range(chunks: Sequence[SparseChunk], numel: int, value_dtype: str, tables: Tables | None = None) -> None:
    """ValueRangeError naming the lowest element at which the magnitudes of the chunks' values add up
    beyond the largest finite value of `value_dtype`: some order of summing them overflows it, so every
    scheme refuses them, whatever order it sums in (docs/design-space.md, "Overflow"). A single value
    beyond the range is left to the wire format, which names it."""
    largest = value_codec(value_dtype).max
    nonempty = [c for c in chunks if c.nnz]
    if len(nonempty) < 2:  # one chunk's magnitudes add up only where a value alone is beyond the range
        return
    peaks = [float(backend.host(backend.namespace(c.values).stack([c.values.max(), -c.values.min()])).max())
             for c in nonempty]  # no |values| array; one read from the device a chunk
    if max(peaks) > largest or sum(peaks) <= largest:
        return
    exp = expected_sum([c.host() for c in chunks], numel, tables)  # rare: only where the peaks could add up
    over = np.flatnonzero(exp.magnitudes > largest)
    if len(over):
        at = int(over[0])
        raise ValueRangeError(f"a sum of values overflows {value_dtype} at element {int(exp.indices[at])}: "
                              f"their magnitudes add up to {exp.magnitudes[at]:.6g}, beyond its largest "
                              f"{largest:.6g}, so some order of summing them overflows")


def check_results(name: str, chunks: Sequence[SparseChunk], results: Sequence[SparseChunk], numel: int, *,
                  value_dtype: str = "float32", keeps_zeros: bool = True, replicas_identical: bool = True,
                  tables: Tables | None = None) -> None:
    """AggregationMismatch unless every result is the dense sum of `chunks` and, where
    `replicas_identical`, every result has rank 0's bits (see the module docstring). Chunks of
    any array library are checked on the host."""
    chunks = [c.host() for c in chunks]
    results = _host_results(results)
    expected = expected_sum(chunks, numel, tables)
    seen: set[int] = set()
    for rank, got in enumerate(results):
        if id(got) not in seen:
            seen.add(id(got))
            problem = result_problem(got, expected, len(chunks), value_dtype, keeps_zeros)
            if problem:
                raise AggregationMismatch(f"{name}: rank {rank} {problem}")
    if replicas_identical and results:
        first = results[0]
        for rank, got in enumerate(results[1:], 1):
            if got is not first and not same_bits(got, first):
                raise AggregationMismatch(f"{name}: rank {rank}'s result differs from rank 0's in its bits "
                                          "(replicas must be identical)")


def _host_results(results: Sequence[SparseChunk]) -> list[SparseChunk]:
    """The results on the host, one host chunk per distinct result object (shared results stay shared)."""
    made: dict[int, SparseChunk] = {}
    return [made.setdefault(id(r), r.host()) for r in results]


def result_problem(got: SparseChunk, exp: Expected, n: int, value_dtype: str = "float32",
                   keeps_zeros: bool = True) -> str | None:
    """Why `got` (of any array library) is not the dense sum `exp` of n ranks' chunks, or None (one
    rank's check)."""
    got = got.host()
    if exp.sums is None or got.values is None:
        if not np.array_equal(got.indices, exp.indices):
            missing = np.setdiff1d(exp.indices, got.indices)
            extra = np.setdiff1d(got.indices, exp.indices)
            return (f"has {len(got.indices)} indices, expected {len(exp.indices)} ({len(missing)} missing, "
                    f"{len(extra)} extra)")
        return None if exp.sums is None else "carries no values"
    tol = 4 * n * EPS[value_dtype] * exp.magnitudes + n * TINY[value_dtype]
    at = np.searchsorted(exp.indices, got.indices)
    inside = at < len(exp.indices)
    inside[inside] = exp.indices[at[inside]] == got.indices[inside]
    missing = np.ones(len(exp.indices), bool)
    missing[at[inside]] = False
    if not inside.all() or (keeps_zeros and missing.any()):
        return (f"has {len(got.indices)} indices, expected {len(exp.indices)} ({int(missing.sum())} missing, "
                f"{int((~inside).sum())} extra)")
    if missing.any() and not (np.abs(exp.sums[missing]) <= tol[missing]).all():
        return f"lacks {int(missing.sum())} indices whose sum is not zero"
    err = np.abs(got.values.astype(np.float64) - exp.sums[at])
    bad = ~(err <= tol[at])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        return (f"values differ from the dense sum (element {int(got.indices[i])}: {float(got.values[i]):.6g} "
                f"vs {float(exp.sums[at[i]]):.6g})")
    return None
