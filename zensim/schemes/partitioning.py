"""The partition dimension: the items a program moves (the whole tensor, or n partitions).

- `Centralization`: one item, the whole tensor; every rank aggregates it.
- `Parallelism`: the partitioner's n parts; item j is aggregated at rank j (step 1) and then
  gathered by everyone (step 2, the pull).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zensim.errors import ConfigError
from zensim.run.context import RunContext, Tables
from zensim.schemes.options import Option
from zensim.schemes.pieces import Piece, assemble
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import Domain, ExplicitDomain, RangeDomain
from zensim.sparse.partition import Contiguous, Partitioner
from zensim.sparse.registry import PARTITIONERS


class Centralization:
    """One item, the whole tensor over [0, numel)."""

    name = "centralization"
    lossless = True
    OPTIONS: tuple[Option, ...] = ()

    def __init__(self, numel: int) -> None:
        self.whole = RangeDomain(0, numel)

    def position_of(self) -> None:
        """Positions are ids: no lookup table."""
        return None

    def domains(self) -> list[Domain]:
        """The item domains."""
        return [self.whole]

    def split(self, rank: int, chunk: SparseChunk, ctx: RunContext) -> list[SparseChunk]:
        """The chunk itself is the only item."""
        return [chunk]

    def result(self, pieces: Sequence[Piece], ctx: RunContext) -> SparseChunk:
        """The aggregated whole tensor."""
        return pieces[0].to_chunk(ctx)


def partitioner_for(kind: str, numel: int, n: int, seed: int = 0, align: int = 1) -> Partitioner:
    """A zensim.sparse partitioner by name, as a scheme uses it (`Partitioner.for_scheme`).
    'thresholds' is never re-profiled here, so it splits evenly like 'contiguous'. `align`: the
    contiguous split in whole blocks of that many ids (a block format's blocks never straddle two
    parts: OmniReduce's aggregators own whole blocks)."""
    if kind not in PARTITIONERS:
        raise ConfigError(f"partitioner {kind!r}: expected one of {', '.join(PARTITIONERS)}")
    if kind == "contiguous":
        return Contiguous(numel, n, align)
    return PARTITIONERS[kind].for_scheme(numel, n, seed)


class Parallelism:
    """n items: the partitioner's parts (contiguous ranges, or ZEN's hash partitions).

    Records per run, in `ctx.stats`: `split` (n x n, elements rank i puts in item j) and `held`
    (elements of each aggregated item): ZEN's push and pull imbalance come from them."""

    name = "parallelism"
    OPTIONS = (
        Option("partitioner", "how ids map to the n partitions (default: zen when balanced, contiguous when "
               "imbalanced)", None, PARTITIONERS),
        Option("seed", "hash seed shared by all ranks (hash partitioners)", 0, kind=int, minimum=0),
    )

    def __init__(self, kind: str, numel: int, n: int, seed: int, tables: Tables, align: int = 1) -> None:
        self.kind, self.n = kind, n
        self.partitioner = partitioner_for(kind, numel, n, seed, align)
        self.hashed, self.lossless = self.partitioner.hashes, not self.partitioner.lossy
        key = self.partitioner.key
        self._domains = tables.get(("domains", key), self.partitioner.domains) if key else self.partitioner.domains()

    def position_of(self) -> np.ndarray | None:
        """For explicit (hash) domains, every id's position in its domain (their shared
        PositionTable, on the host), so that bitset pieces need a lookup, not a search; None for ranges."""
        first = self._domains[0]
        shared = isinstance(first, ExplicitDomain) and first.table is not None
        if shared and all(getattr(d, "table", None) is first.table for d in self._domains):
            return first.table.like(first.elements)
        return None

    def domains(self) -> list[Domain]:
        """The item domains."""
        return self._domains

    def split(self, rank: int, chunk: SparseChunk, ctx: RunContext) -> list[SparseChunk]:
        """The partitioner's n parts (hashing every element when the partitioner hashes, else slices)."""
        ctx.add("hash" if self.hashed else "slice", chunk.nnz)
        parts = self.partitioner.split(chunk)
        ctx.stats.setdefault("split", np.zeros((self.n, self.n), np.int64))[rank] = [p.nnz for p in parts]
        return parts

    def result(self, pieces: Sequence[Piece], ctx: RunContext) -> SparseChunk:
        """All aggregated partitions as one chunk."""
        ctx.stats["held"] = np.array([p.nnz for p in pieces], np.int64)
        return assemble(pieces, ctx)
