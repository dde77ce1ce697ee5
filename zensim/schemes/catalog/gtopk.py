"""gTop-k (Shi et al., ICDCS 2019): a global top-k by a reduction tree, then a broadcast tree.

Every rank enters with its top-k (the `topk` sparsifier). Round i = 0..ceil(log2 P)-1 of the
reduction: rank r with r mod 2^(i+1) = 2^i sends its current set to r - 2^i, which sums it with its
own as soon as it arrives and keeps the top k (the aggregation's hook after every merge; what it
drops goes to `ctx.discard` of that rank, so error feedback keeps it). A receiver therefore selects
after every sum, not once over everything it received before it sends (which picks differently:
the issue 28 case P = 3, [1,0,0,0], [0,2,0,0], [1.5,0,0,0], k = 1 ends {1: 2}, not {0: 2.5}).
Rank 0 ends with the global top-k and broadcasts it down the same binomial tree. Any P (a partner beyond P - 1 is skipped). Cost:
2 ceil(log2 P) alpha + 4 ceil(log2 P) k beta (SparDL's Table I), the closed form its bandwidth term.
"""

from __future__ import annotations

import math
from typing import Any

from zensim.errors import ConfigError
from zensim.run.context import RunContext, Tables
from zensim.schemes.catalog.spardl import Reselect
from zensim.schemes.closed import SparsityStats
from zensim.schemes.options import Option
from zensim.schemes.partitioning import Centralization
from zensim.schemes.plans import Stage, Transfer, full
from zensim.schemes.program import ComposedProgram, Group, cover_groups
from zensim.schemes.scheme import Scheme
from zensim.sparse.formats import make_format


def tree_stages(n: int) -> list[Stage]:
    """Binomial reduction to rank 0, then the broadcast back (ceil(log2 n) stages each)."""
    levels = math.ceil(math.log2(n)) if n > 1 else 0
    reduce = []
    for i in range(levels):
        step = 1 << i
        reduce.append([Transfer(r, r - step, 0, sum(1 << q for q in range(r, min(r + step, n))))
                       for r in range(n) if r % (2 * step) == step])
    broadcast = [[Transfer(r, r + (1 << i), 0, full(n)) for r in range(0, n, 2 << i) if r + (1 << i) < n]
                 for i in reversed(range(levels))]
    return reduce + broadcast


class GTopkProgram(ComposedProgram):
    """The composed program; a reduction's receiver merges what it holds after every stage."""

    def receive(self, stage: int, rank: int, items: list[list[Group]], inbox, ctx: RunContext) -> list[list[Group]]:
        """As ComposedProgram's, then the item's held groups merged into one and cut to the top k."""
        items = super().receive(stage, rank, items, inbox, ctx)
        groups = items[0]
        held = 0
        for g in groups:
            held |= g.origins
        cover = cover_groups(groups, held)
        if len(cover) > 1:  # something arrived and the item is not complete (else one group is held)
            groups[:] = [groups[0], self._merge(rank, cover, held, ctx)]
        return items


def build(n: int, numel: int, *, tables: Tables | None = None, profile: Any = None, density: float = 0.01,
          value_dtype: str = "float32") -> GTopkProgram:
    """The gTop-k program for n ranks keeping k = ceil(density x numel)."""
    if not 0 < density <= 1:
        raise ConfigError(f"scheme gtopk: density {density!r} must be in (0, 1]")
    stages = tree_stages(n)
    fmt = make_format("coo", value_dtype, 256)
    k = max(1, math.ceil(density * numel))
    return GTopkProgram("gtopk", n, numel, stages, len(stages), Reselect(k), Centralization(numel), fmt, fmt,
                        closed_form=closed_form)


def closed_form(st: SparsityStats, b: float) -> float:
    """4 ceil(log2 P) k units of 4 bytes (k = d x numel)."""
    return 4 * math.ceil(math.log2(st.n)) * st.d * st.dense_bytes / b if st.n > 1 else 0.0


SCHEMES = [
    Scheme("gtopk", "gTop-k: global top-k by a binomial reduction tree (top-k after every sum), then broadcast",
           builder=build, accepts=(
               Option("density", "k / numel: the global top-k kept after every sum", 0.01, kind=float),
               Option("value_dtype", "value type on the wire", "float32", ("float32", "float16", "bfloat16")),
           ),
           listing={"communication": "binomial tree", "aggregation": "incremental + top-k",
                    "partition": "centralization", "balance": "n/a", "format": "coo", "partitioner": "-",
                    "collapses": []}),
]
