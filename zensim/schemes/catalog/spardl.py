"""SparDL (Zhao et al.): Spar-Reduce-Scatter with re-selection, Spar-All-Gather across teams, Bruck
all-gather, and global residual collection (SEEDS.md section 4).

The P ranks form d teams of p = P / d consecutive ranks (`teams=d`, d divides P). The tensor is cut
into p contiguous blocks (items); every rank enters with at most c = ceil(k / p) elements per block
(the `blocktopk` sparsifier with p blocks makes exactly that selection, k = density x numel).

- **Spar-Reduce-Scatter** (inside every team, any p): worker w puts block w in its preservation bag
  B_0 and blocks w + 2^(j-1) .. w + 2^j - 1 (mod p) in bag B_j, j = 1..l = ceil(log2 p), the last
  bag partial when p is not a power of two. Round i = 1..l sends bag B_(l-i+1) to w + 2^(l-i) and
  receives from w - 2^(l-i) (the formula; the paper's Example 2 names w + 2^(l-i) as the source by
  mistake), blocks that the receiver still holds (Theorem 1, asserted when the plan is built). Just
  before a block is sent (and when the last one arrives) the sum held is cut back to its top c:
  the aggregation's hook after every merge. The worker ends with block w reduced over its team.
- **Spar-All-Gather** across teams, between the workers at the same position (`sag`: `auto` takes
  R-SAG when d is a power of two, else B-SAG, as the paper does):
  - R-SAG by recursive doubling, re-selecting the top L = d k / P after each sum;
  - B-SAG: the worker cuts its team's block to its top h, a Bruck all-gather across the d teams
    moves these pieces side by side (no selection in transit, so every worker of the position
    sums the same d pieces in the same order: bit-identical), the d pieces are summed (N_t
    elements) and cut back to the top L. h follows SparDL's Algorithm 2 (`HController`, one per
    worker: the d workers of a position see the same N_t, so they keep the same h).
- **Bruck all-gather** inside every team: at step s worker w sends the min(2^s, p - 2^s) blocks it
  holds first to w - 2^s; any p.
- **Global residual collection**: every value a re-selection drops goes to `ctx.discard(rank, ...)`
  of the rank that dropped it (the replay returns it to that rank's residual: residuals + applied
  = sum of the inputs, asserted every iteration). A sum held identically by the ranks of several
  teams (R-SAG) is dropped identically by each, so each keeps 1 / (number of teams in the sum) of
  it: the paper's "half on each side" for the first round, generalised so the total is kept once.

Cost (closed form): 2 ceil(log2 p) alpha + 2 k ((2P - 2d) / P + (d / P) log2 d) beta with COO
counted 2 units per element (R-SAG); for d = 1: 2 ceil(log2 P) alpha + 4 k (P - 1) / P beta. B-SAG's
cost depends on h and on the overlap between teams; its closed form is the lower bound (h = k / P,
fully overlapping teams) 2 k ((P - d) / P + (d - 1) / P + (P - d) / (P d)) beta: eq. (10)'s printed
bound plus the Spar-Reduce-Scatter term 2 k (P - d) / P that it leaves out. The closed form here is
the bandwidth term in seconds (no latency, as every closed form of zensim).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zensim.errors import ConfigError
from zensim.run.context import RunContext, Tables
from zensim.sparse import xp as backend
from zensim.schemes.aggregation import Incremental
from zensim.schemes.closed import SparsityStats
from zensim.schemes.options import Option
from zensim.schemes.partitioning import Parallelism
from zensim.schemes.pieces import ChunkPiece, Piece, union
from zensim.schemes.plans import Stage, Transfer, full
from zensim.schemes.program import ComposedProgram, Group, bits, lowest
from zensim.schemes.scheme import Scheme
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.formats import FORMATS, make_format
from zensim.sparsify.ops import topk_indices


def team_masks(n: int, teams: int) -> list[int]:
    """The rank mask of every team (consecutive ranks)."""
    p = n // teams
    return [((1 << p) - 1) << (t * p) for t in range(teams)]


def srs_stages(n: int, teams: int) -> list[Stage]:
    """Spar-Reduce-Scatter inside every team: item b ends reduced over the team at position b."""
    p = n // teams
    levels = math.ceil(math.log2(p)) if p > 1 else 0
    hold = [{b: 1 << r for b in range(p)} for r in range(n)]
    stages: list[Stage] = []
    for i in range(1, levels + 1):
        dist = 1 << (levels - i)
        lo, hi = dist, min(2 * dist, p)  # bag B_(l-i+1): offsets [2^(l-i), 2^(l-i+1)), cut at p
        stage, moved = [], []
        for r in range(n):
            base, w = r - r % p, r % p
            dst = base + (w + dist) % p
            for off in range(lo, hi):
                b = (w + off) % p
                stage.append(Transfer(r, dst, b, hold[r][b]))
                moved.append((r, dst, b))
        for r, dst, b in moved:
            if b not in hold[dst]:
                raise AssertionError(f"spardl: rank {dst} no longer holds block {b} (Theorem 1)")
            hold[dst][b] |= hold[r].pop(b)
        stages.append(stage)
    for r in range(n):
        assert list(hold[r]) == [r % p], "spardl: a rank ended with other blocks than its own"
    return stages


def rsag_stages(n: int, teams: int) -> list[Stage]:
    """Recursive doubling across teams between the workers at the same position."""
    p = n // teams
    masks = team_masks(n, teams)
    stages: list[Stage] = []
    for s in range(int(math.log2(teams))):
        stage = []
        for r in range(n):
            t, w = divmod(r, p)
            group = t - t % (1 << s)  # teams already summed with t: group .. group + 2^s - 1
            origins = 0
            for u in range(group, group + (1 << s)):
                origins |= masks[u]
            stage.append(Transfer(r, (t ^ (1 << s)) * p + w, w, origins))
        stages.append(stage)
    return stages


def bsag_stages(n: int, teams: int) -> list[Stage]:
    """Bruck all-gather across teams between the workers at the same position: at step s the worker
    of team t sends the teams t .. t + min(2^s, d - 2^s) - 1 it holds to team t - 2^s."""
    p = n // teams
    masks = team_masks(n, teams)
    stages: list[Stage] = []
    s = 0
    while (1 << s) < teams:
        count = min(1 << s, teams - (1 << s))
        stage = []
        for r in range(n):
            t, w = divmod(r, p)
            origins = 0
            for j in range(count):
                origins |= masks[(t + j) % teams]
            stage.append(Transfer(r, ((t - (1 << s)) % teams) * p + w, w, origins))
        stages.append(stage)
        s += 1
    return stages


def bruck_stages(n: int, teams: int) -> list[Stage]:
    """Bruck all-gather of the complete blocks inside every team."""
    p = n // teams
    stages: list[Stage] = []
    s = 0
    while (1 << s) < p:
        count = min(1 << s, p - (1 << s))
        stages.append([Transfer(r, r - r % p + (r % p - (1 << s)) % p, (r % p + j) % p, full(n))
                       for r in range(n) for j in range(count)])
        s += 1
    return stages


class Reselect(Incremental):
    """Incremental aggregation whose hook keeps the top `keep` of every merged block and reports
    the rest as discarded by the merging rank (a 1 / copies share of it)."""

    name = "reselect"
    needs_values = True
    lossless = False

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.copies = 1  # ranks holding the same merged sum (set by the program before each merge)

    def after_merge(self, piece: Piece, rank: int, ctx: RunContext) -> Piece:
        """The top `keep` magnitudes of the piece; the rest is discarded (and reported)."""
        chunk = piece.to_chunk()
        if chunk.nnz <= self.keep or chunk.values is None:
            return piece
        ctx.add("select", chunk.nnz)
        xp = backend.namespace(chunk.values)
        keep = topk_indices(xp.abs(chunk.values), self.keep)
        drop = xp.ones(chunk.nnz, dtype=xp.bool, device=backend.device(chunk.values))
        drop[keep] = False
        dropped = chunk.values[drop]
        if self.copies > 1:
            dropped = dropped / self.copies  # float32 / a scalar: the float32 quotient on every library
        ctx.discard(rank, SparseChunk(chunk.indices[drop], dropped))
        return ChunkPiece(piece.domain, SparseChunk(chunk.indices[keep], chunk.values[keep]))


class TeamBlocks(Parallelism):
    """p contiguous blocks shared by the d teams (the reduce-scatter's items)."""

    def split(self, rank: int, chunk: SparseChunk, ctx: RunContext) -> list[SparseChunk]:
        """The p blocks of the rank's chunk."""
        ctx.add("slice", chunk.nnz)
        return self.partitioner.split(chunk)


class HController:
    """SparDL's Algorithm 2 for one worker: h (the top-h cut before B-SAG's all-gather) moves by a
    step that doubles after two consecutive moves in one direction and halves and turns when the
    count N_t after the all-gather crosses L = d k / P. Line 3 is read as printed, an exclusive or:
    the step keeps its direction while (N_t > L) xor (step > 0), i.e. h grows while N_t <= L and
    shrinks while N_t > L (the paper's prose states the direction the other way round). The first
    iteration runs at h = k / P; each N_t sets the h of the next. h is kept in [k / P, d k / P], the
    range the paper gives for it (below, even disjoint teams give fewer than L; above, the cut
    does nothing)."""

    def __init__(self, per_block: int, teams: int) -> None:
        self.target = per_block  # L = d k / P: the elements of a block after the SAG
        self.low = per_block / teams  # k / P
        self.h = self.low
        self.step = 0.01 * per_block * (teams - 1) / teams  # 0.01 k (d - 1) / P
        self.flag = False

    @property
    def count(self) -> int:
        """The h used now (an element count)."""
        return max(1, round(self.h))

    def observe(self, found: int) -> None:
        """Algorithm 2, lines 3-12, after an iteration whose all-gather gave `found` = N_t elements."""
        if (found > self.target) != (self.step > 0):
            if self.flag:
                self.step *= 2
                self.flag = False
            else:
                self.flag = True
        else:
            self.step = -self.step / 2
            self.flag = False
        self.h = min(max(self.h + self.step, self.low), float(self.target))


class SparDLProgram(ComposedProgram):
    """The composed program, telling the re-selection how many ranks hold each merged sum and how
    many elements to keep (B-SAG: h before the all-gather across teams, L after it)."""

    def __init__(self, *args: Any, teams: int, bsag: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.teams, self.bsag = teams, bsag
        self.team_of = np.arange(self.n) // (self.n // teams)
        self.team_masks = team_masks(self.n, teams)
        self.block = self.aggregation.keep
        self.controllers = [HController(self.block, teams) for _ in range(self.n)] if bsag else []

    def _teams_in(self, origins: int) -> list[int]:
        """The teams whose ranks are in `origins`, ascending."""
        return sorted(set(self.team_of[bits(origins)].tolist()))

    def _bundle(self, t: Transfer) -> bool:
        """A B-SAG transfer carrying the blocks of several teams side by side."""
        return self.bsag and t.origins != full(self.n) and len(self._teams_in(t.origins)) > 1

    def count(self, t: Transfer) -> int:
        """One piece per team in a B-SAG bundle, else one."""
        return len(self._teams_in(t.origins)) if self._bundle(t) else super().count(t)

    def piece_keys(self, t: Transfer) -> list[int] | None:
        """A B-SAG bundle's pieces are keyed by their team's lowest rank."""
        if not self._bundle(t):
            return None
        return [lowest(self.team_masks[team]) for team in self._teams_in(t.origins)]

    def bundles(self, t: Transfer) -> bool:
        """B-SAG bundles are sent side by side."""
        return self._bundle(t) or super().bundles(t)

    def _groups_for(self, rank, items, t, ctx):  # type: ignore[no-untyped-def]
        """As ComposedProgram's; a B-SAG bundle takes each team's piece from the group holding it (the
        last Bruck step sends a prefix of the teams held, which may split a bundle received)."""
        if not self._bundle(t):
            return super()._groups_for(rank, items, t, ctx)
        picked = []
        for team in self._teams_in(t.origins):
            mask, key = self.team_masks[team], lowest(self.team_masks[team])
            for g in reversed(items[t.item]):
                if g.origins & mask == mask and (g.keys is not None or g.origins == mask):
                    picked.append((g, [i for i, (k, _) in enumerate(g.keyed()) if k == key]))
                    break
            else:
                raise RuntimeError(f"{self.name}: rank {rank} holds no piece of team {team} for item {t.item}")
        return picked

    def start(self, rank: int, chunk: SparseChunk, ctx: RunContext) -> list[list[Group]]:
        """As ComposedProgram's; under B-SAG with teams of one rank the rank's own block is its team's
        and is cut to the top h here (no merge happens before it is sent)."""
        items = super().start(rank, chunk, ctx)
        if self.bsag and self.n == self.teams and self.n > 1:
            self.aggregation.copies, self.aggregation.keep = 1, self.controllers[rank].count
            group = items[0][0]
            items[0][0] = Group(group.origins, (self.aggregation.after_merge(group.pieces[0], rank, ctx),))
        return items

    def _merge(self, rank, cover, origins, ctx):  # type: ignore[no-untyped-def]
        """As ComposedProgram's, with the share of a drop set to 1 / (teams in the sum) and the count
        kept set by the SAG: B-SAG cuts a team's block to h, and a sum over every team to L after
        counting it (N_t, observed by the rank's h controller)."""
        teams = self._teams_in(origins)
        self.aggregation.copies = len(teams)
        self.aggregation.keep = self.block
        if self.bsag and origins in self.team_masks:
            self.aggregation.keep = self.controllers[rank].count
        elif self.bsag and origins == full(self.n) and len(cover) > 1:  # the sum of the d teams' pieces
            summed = union([p for _, p in sorted((kp for g in cover for kp in g.keyed()), key=lambda kp: kp[0])], ctx)
            self.controllers[rank].observe(summed.nnz)
        return super()._merge(rank, cover, origins, ctx)


OPTIONS = (
    Option("teams", "d: teams of P/d ranks (d divides P)", 1, kind=int, minimum=1),
    Option("sag", "Spar-All-Gather across teams: auto (R-SAG if d is a power of two, else B-SAG), rsag, bsag",
           "auto", ("auto", "rsag", "bsag")),
    Option("density", "k / numel: every block keeps ceil(k / (P/d)) elements", 0.01, kind=float),
    Option("value_dtype", "value type on the wire", "float32", ("float32", "float16", "bfloat16")),
)


def block_count(density: float, numel: int, p: int) -> int:
    """c = ceil(k / p) with k = ceil(density x numel): elements a block keeps."""
    return math.ceil(max(1, math.ceil(density * numel)) / p)


def build(n: int, numel: int, *, tables: Tables | None = None, profile: Any = None, teams: int = 1,
          sag: str = "auto", density: float = 0.01, value_dtype: str = "float32") -> SparDLProgram:
    """The SparDL program for n ranks (see the module docstring)."""
    if n % teams:
        raise ConfigError(f"scheme spardl: teams {teams} must divide the {n} ranks")
    power = teams & (teams - 1) == 0
    if sag == "rsag" and not power:
        raise ConfigError(f"scheme spardl: sag rsag needs teams a power of two, got {teams} (use bsag)")
    if not 0 < density <= 1:
        raise ConfigError(f"scheme spardl: density {density!r} must be in (0, 1]")
    bsag = teams > 1 and (sag == "bsag" or (sag == "auto" and not power))
    p = n // teams
    stages = srs_stages(n, teams) + (bsag_stages(n, teams) if bsag else rsag_stages(n, teams))
    step2 = len(stages)
    stages += bruck_stages(n, teams)
    fmt = make_format("coo", value_dtype, 256)
    aggregation = Reselect(block_count(density, numel, p))
    partition = TeamBlocks("contiguous", numel, p, 0, tables if tables is not None else Tables())
    return SparDLProgram("spardl", n, numel, stages, step2, aggregation, partition, fmt, fmt,
                         closed_form=closed_form(teams, bsag), teams=teams, bsag=bsag)


def closed_form(teams: int, bsag: bool = False):  # type: ignore[no-untyped-def]
    """(stats, bandwidth) -> seconds of SparDL's bandwidth term for `teams` teams (B-SAG: its lower
    bound, see the module docstring)."""

    def seconds(st: SparsityStats, b: float) -> float:
        k_bytes = st.d * st.dense_bytes  # k elements x 4 bytes: one unit per element
        d, P = teams, st.n
        if bsag:
            return 2 * k_bytes * ((P - d) / P + (d - 1) / P + (P - d) / (P * d)) / b
        return 2 * k_bytes * ((2 * P - 2 * d) / P + d / P * math.log2(d)) / b

    return seconds


SCHEMES = [
    Scheme("spardl", "SparDL: Spar-Reduce-Scatter (bags, top-k/P re-selection), R-SAG or B-SAG across teams, "
           "Bruck all-gather, global residual collection", builder=build, accepts=OPTIONS,
           listing={"communication": "bags + Bruck", "aggregation": "incremental + re-selection",
                    "partition": "parallelism", "balance": "n/a", "format": "coo", "partitioner": "contiguous",
                    "collapses": []}),
]
