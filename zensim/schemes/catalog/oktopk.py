"""Ok-Topk (Li & Hoefler, PPoPP'22; SEEDS.md section 8): split and reduce by regions, a global
threshold re-used across iterations, balance, all-gather.

Every rank enters with its local selection (the `topk` sparsifier: k = ceil(density x numel)
elements). The index space is cut into P contiguous regions, region j owned by rank j. Per iteration:

1. **boundaries** (every `repartition` iterations, the first included; the authors' code: 64): every
   rank proposes the P - 1 ids at positions i floor(m / P) of its m sorted selected ids, a Bruck
   all-gather of these int32 proposals, and every rank takes their integer mean: regions that hold
   about k / P of every rank's selection. Other iterations keep the boundaries (no message);
2. **split and reduce**: P - 1 stages of direct sends with destination rotation (stage j: rank r
   sends r + j its selected elements in region r + j); the owner sums its region (in rank order);
3. **global threshold**: every `tau` iterations (the first included; the authors' code: 32) the
   owner keeps every non-zero of its reduced region, the all-gather below carries them all and every
   rank takes their exact top-k, whose k-th magnitude becomes the threshold. In between the owner
   keeps |value| >= threshold (the re-use: one comparison per element, no sort), and after the
   all-gather the threshold moves as the authors' code moves it: / 1.01 when fewer than 3k/4
   elements were gathered, x 1.008 when more than 5k/4;
4. **balance**: a Bruck all-gather of the kept counts c_j; the kept elements, in region order, are
   re-cut into P consecutive pieces of floor(K / P) or ceil(K / P) (K = sum c_j, the first K mod P
   one longer), each rank sending the parts of its region that fall in another rank's piece to
   that rank (one stage, only the pairs that overlap);
5. **all-gather**: a Bruck all-gather of the balanced pieces (any P; the paper's recursive doubling
   for powers of two moves the same volume). Every rank ends with the same sorted result.

Residuals as the authors' code keeps them: a rank's selected elements that are not in the result
go back to its own residual (`ctx.discard(rank, ...)`), so result + residuals = sum of the inputs.
Messages are int32 ids then values (the `coo` kind: 4 + value bytes per element) or int32 counts
and boundary proposals (`counts`), with no headers: the receiver knows every size from the counts.
Volume per rank with exactly k selected on every rank and regions that split every selection
evenly: reduce 2k (P-1)/P units, balance at most 2k (P-1)/P, all-gather 2k (P-1)/P: below 6k (P-1)/P
(the paper's bound, the closed form here); thresholds that keep more than k exceed it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zensim.errors import ConfigError
from zensim.run.context import RunContext, Tables
from zensim.schemes.catalog.exdyna import COUNTS, Raw, WireKind, bruck
from zensim.schemes.closed import SparsityStats
from zensim.schemes.options import Option
from zensim.run.program import Capabilities, DriverOnly
from zensim.schemes.scheme import Scheme
from zensim.schemes.workkinds import merge_work
from zensim.sparse import xp as backend
from zensim.sparse.chunk import SparseChunk, sum_chunks
from zensim.sparse.values import value_codec
from zensim.sparsify.oktopk import nudge
from zensim.sparsify.ops import topk_indices

RAISE, LOWER = 1.008, 1.01  # the authors' threshold steps: x RAISE above 5k/4 gathered, / LOWER below 3k/4


@dataclass(frozen=True)
class Pairs:
    """A message of elements: int32 ids, then the values in the wire dtype."""

    fmt: WireKind
    chunk: SparseChunk

    @property
    def nbytes(self) -> int:
        """Elements x (4 + value bytes)."""
        return self.chunk.nnz * (4 + self.fmt.itemsize())

    def to_buffer(self) -> Any:
        """The wire bytes: a uint8 array of the chunk's library, on its device."""
        ids = self.chunk.indices
        xp = backend.namespace(ids)
        return backend.concat_bytes([backend.as_bytes_of(xp.astype(ids, xp.int32)), self.fmt.pack(self.chunk.values)], ids)

    def to_bytes(self) -> bytes:
        """The wire bytes, on the host."""
        return backend.host(self.to_buffer()).tobytes()

    @classmethod
    def from_bytes(cls, fmt: WireKind, buf: Any) -> "Pairs":
        """The message `to_buffer` wrote (bytes-like, or a uint8 array of any library: decoded there)."""
        buf = backend.as_buffer(buf)
        count = buf.shape[0] // (4 + fmt.itemsize())
        xp = backend.namespace(buf)
        ids = xp.astype(backend.view(buf[: 4 * count], xp.int32), xp.int64)
        return cls(fmt, SparseChunk(ids, fmt.unpack(buf[4 * count:])))


@dataclass
class Memory:
    """What one rank carries from iteration to iteration."""

    iteration: int = 0
    bounds: np.ndarray | None = None  # P + 1 region edges
    threshold: float = 0.0
    balance: Balance | None = None  # this iteration's plan, once every region's kept count is gathered


@dataclass
class State:
    """One rank during one iteration."""

    chunk: SparseChunk
    exact: bool  # this iteration recomputes the threshold (keeps every non-zero)
    records: dict[int, np.ndarray] = field(default_factory=dict)  # gathered boundary proposals or counts
    parts: dict[int, SparseChunk] = field(default_factory=dict)  # region pieces by sender, then pieces by rank
    inbound: dict[int, SparseChunk] = field(default_factory=dict)  # the balance's parts by sender


def proposals(ids: Any, n: int, numel: int) -> np.ndarray:
    """A rank's P - 1 boundary proposals: the ids at positions i floor(m / P) of its m sorted ids
    (an even split of [0, numel) when it selected nothing)."""
    if not len(ids):
        return (np.arange(1, n, dtype=np.int64) * numel) // n
    return backend.host(ids[backend.like(np.arange(1, n) * (len(ids) // n), ids)])  # n - 1 ids to the host


@dataclass(frozen=True)
class Balance:
    """The balance's plan of one iteration, made once from every region's kept count: where each
    region's elements lie in the concatenation (`held`, P + 1) and the balanced pieces' edges (`edges`,
    P + 1: floor(K / P) each, the first K mod P one longer, K = sum(counts))."""

    held: np.ndarray
    edges: np.ndarray

    @classmethod
    def of(cls, counts: np.ndarray) -> "Balance":
        """The plan for the kept counts `counts` (one per region)."""
        n, total = len(counts), int(counts.sum())
        sizes = np.full(n, total // n, np.int64)
        sizes[: total % n] += 1
        return cls(np.concatenate(([0], np.cumsum(counts))), np.concatenate(([0], np.cumsum(sizes))))

    def overlap(self, src: int, dst: int) -> tuple[int, int]:
        """The slice of region `src`'s kept elements (in its own numbering) that belongs to piece `dst`."""
        lo, hi = max(self.held[src], self.edges[dst]), min(self.held[src + 1], self.edges[dst + 1])
        return (int(lo - self.held[src]), int(hi - self.held[src])) if hi > lo else (0, 0)


class OkTopkProgram(DriverOnly):
    """The five phases as stages (see the module docstring); `memory` carries each rank's iteration
    count, boundaries and threshold from one run to the next."""

    def __init__(self, n: int, numel: int, k: int, tau: int, repartition: int, value_dtype: str) -> None:
        self.name, self.n, self.numel, self.k = "oktopk", n, numel, k
        self.tau, self.repartition = tau, repartition
        self.value_dtype = value_dtype
        self.caps = Capabilities(needs_values=True, lossless=False, replicas_identical=True, keeps_zeros=False,
                                 closed_form=closed_form)
        self.codec = value_codec(value_dtype)
        self.coo = WireKind("coo", self.codec)
        self.levels = math.ceil(math.log2(n)) if n > 1 else 0
        self.memory = [Memory() for _ in range(n)]
        # stage layout: boundaries (levels), reduce (n - 1), counts (levels), balance (1), gather (levels)
        self.reduce_at = self.levels
        self.counts_at = self.reduce_at + n - 1
        self.balance_at = self.counts_at + self.levels
        self.gather_at = self.balance_at + 1
        self.num_stages = self.gather_at + self.levels if n > 1 else 1

    def phase(self, stage: int) -> tuple[str, int]:
        """(phase name, step inside the phase) of `stage`."""
        for name, at in (("gather", self.gather_at), ("balance", self.balance_at), ("counts", self.counts_at),
                         ("reduce", self.reduce_at)):
            if stage >= at:
                return name, stage - at
        return "bounds", stage

    def _peers(self, stage: int, rank: int, out: bool) -> list[int]:
        """Whom `rank` sends to (out) or receives from at `stage`, ascending."""
        if self.n == 1:
            return []
        phase, s = self.phase(stage)
        memory = self.memory[rank]
        if phase == "bounds" and memory.iteration % self.repartition:
            return []
        if phase in ("bounds", "counts", "gather"):
            dst, src, _ = bruck(self.n, s, rank)
            return [dst if out else src]
        if phase == "reduce":
            return [(rank + s + 1) % self.n if out else (rank - s - 1) % self.n]
        plan = self._balance_plan(rank)
        peers = (p for p in range(self.n) if p != rank)
        return [p for p in peers if plan.overlap(rank if out else p, p if out else rank)[1] > 0]

    def _balance_plan(self, rank: int) -> Balance:
        """This iteration's balance plan, once the kept counts are gathered."""
        plan = self.memory[rank].balance
        assert plan is not None, "oktopk: the balance planned before the counts were gathered"
        return plan

    def sources(self, stage: int, rank: int) -> list[int]:
        """Who sends to `rank` at `stage`."""
        return self._peers(stage, rank, False)

    def destinations(self, stage: int, rank: int) -> list[int]:
        """Whom `rank` sends to at `stage`."""
        return self._peers(stage, rank, True)

    def start(self, rank: int, chunk: SparseChunk, ctx: RunContext) -> State:
        """The rank's selection as the wire carries it; its boundary proposals when due."""
        memory = self.memory[rank]
        values = self.codec.quantize(chunk.values)
        keep = values != 0
        chunk = SparseChunk(chunk.indices[keep], values[keep])
        state = State(chunk, memory.iteration % self.tau == 0)
        memory.balance = None
        if memory.iteration % self.repartition == 0:
            state.records[rank] = proposals(chunk.indices, self.n, self.numel)
            if self.n == 1:
                self._set_bounds(rank, state)
        if self.n == 1:
            self._reduce(rank, state, ctx)
            self._keep_counts(rank, state)
        return state

    def sends(self, stage: int, rank: int, state: State, ctx: RunContext) -> dict[int, Any]:
        """This stage's messages."""
        phase, s = self.phase(stage)
        out: dict[int, Any] = {}
        for dst in self.destinations(stage, rank):
            if phase in ("bounds", "counts"):
                ranks = bruck(self.n, s, rank)[2]
                out[dst] = Raw(COUNTS, np.concatenate([state.records[r] for r in ranks]).astype(np.int32))
            elif phase == "reduce":
                out[dst] = Pairs(self.coo, self._region(rank, state.chunk, dst))
            elif phase == "balance":
                lo, hi = self._balance_plan(rank).overlap(rank, dst)
                out[dst] = Pairs(self.coo, _slice(state.parts[rank], lo, hi))
            else:
                ranks = bruck(self.n, s, rank)[2]
                out[dst] = Pairs(self.coo, _concat([state.parts[r] for r in ranks], state.chunk.indices))
        return out

    def receive(self, stage: int, rank: int, state: State, inbox: dict[int, Any], ctx: RunContext) -> State:
        """Keep what arrived; at the end of a phase, the next phase's inputs."""
        phase, s = self.phase(stage)
        for src, message in inbox.items():
            if phase in ("bounds", "counts"):
                ranks = bruck(self.n, s, (rank + (1 << s)) % self.n)[2]
                width = len(message.array) // len(ranks)
                array = backend.host(message.array)  # counts and proposals: a few ints, planned on the host
                for j, r in enumerate(ranks):
                    state.records[r] = array[j * width:(j + 1) * width].astype(np.int64)
            elif phase == "reduce":
                state.parts[src] = message.chunk
            elif phase == "balance":
                state.inbound[src] = message.chunk
            else:
                ranks = bruck(self.n, s, (rank + (1 << s)) % self.n)[2]
                sizes = np.diff(self._balance_plan(rank).edges)[ranks]
                for r, (lo, hi) in zip(ranks, _runs(sizes)):
                    state.parts[r] = _slice(message.chunk, lo, hi)
        last = stage + 1 == self.num_stages or self.phase(stage + 1)[0] != phase
        if phase == "bounds" and last and rank in state.records:
            self._set_bounds(rank, state)
        elif phase == "reduce" and last:
            self._reduce(rank, state, ctx)
        elif phase == "counts" and last:
            self._keep_counts(rank, state)
        elif phase == "balance":
            self._balance(rank, state)
        return state

    def decode(self, stage: int, rank: int, src: int, buf: bytes, ctx: RunContext) -> Any:
        """The message `src` sent (the bytes transports), in the run's library (gloo's eager path hands
        a torch run host bytes, as ExDyna's decode also meets them)."""
        if ctx.like is not None:
            buf = backend.like(backend.as_buffer(buf), ctx.like)
        if self.phase(stage)[0] in ("bounds", "counts"):
            return Raw(COUNTS, COUNTS.unpack(buf))
        return Pairs.from_bytes(self.coo, buf)

    def result(self, rank: int, state: State, ctx: RunContext) -> SparseChunk:
        """The gathered elements (exact iterations: their top k, which sets the threshold); the rank's
        selected elements left out go back to its residual."""
        memory = self.memory[rank]
        gathered = _concat([state.parts[r] for r in range(self.n)], state.chunk.indices)
        xp = backend.namespace(gathered.values)
        if state.exact:
            top = topk_indices(xp.abs(gathered.values), self.k)
            ctx.add("select", gathered.nnz)
            if len(top):
                memory.threshold = float(xp.min(xp.abs(gathered.values[top])))
            gathered = SparseChunk(gathered.indices[top], gathered.values[top])
        else:
            memory.threshold = nudge(memory.threshold, gathered.nnz, self.k, RAISE, LOWER)
        left = ~backend.isin_sorted(state.chunk.indices, gathered.indices)
        if bool(xp.any(left)):
            ctx.discard(rank, SparseChunk(state.chunk.indices[left], state.chunk.values[left]))
        memory.iteration += 1
        ctx.stats["kept"] = gathered.nnz
        ctx.stats["threshold"] = memory.threshold
        return gathered

    def _set_bounds(self, rank: int, state: State) -> None:
        """Region edges: the integer mean of every rank's proposals."""
        mean = sum(state.records[r] for r in range(self.n)) // self.n
        self.memory[rank].bounds = np.concatenate(([0], mean, [self.numel])).astype(np.int64)
        state.records.clear()

    def _region(self, rank: int, chunk: SparseChunk, j: int) -> SparseChunk:
        """The elements of `chunk` in region j."""
        bounds = self.memory[rank].bounds
        xp = backend.namespace(chunk.indices)
        lo, hi = backend.host(xp.searchsorted(chunk.indices, backend.like(bounds[j:j + 2], chunk.indices))).tolist()
        return _slice(chunk, lo, hi)

    def _reduce(self, rank: int, state: State, ctx: RunContext) -> None:
        """Sum the region's pieces in rank order, then keep what this iteration keeps."""
        state.parts[rank] = self._region(rank, state.chunk, rank)
        pieces = [state.parts.pop(r) for r in range(self.n)]
        for kind, count in merge_work(False, 0, sum(p.nnz for p in pieces), len(pieces)):
            ctx.add(kind, count)
        reduced = sum_chunks(pieces)
        keep = reduced.values != 0
        if not state.exact:
            keep &= backend.namespace(reduced.values).abs(reduced.values) >= self.memory[rank].threshold
            ctx.add("select", reduced.nnz)
        values = self.codec.quantize(reduced.values[keep])
        kept = values != 0
        state.parts[rank] = SparseChunk(reduced.indices[keep][kept], values[kept])
        state.records = {rank: np.array([state.parts[rank].nnz], np.int64)}

    def _keep_counts(self, rank: int, state: State) -> None:
        """Every region's kept count: the balance's plan."""
        self.memory[rank].balance = Balance.of(np.array([int(state.records[r][0]) for r in range(self.n)], np.int64))
        if self.n == 1:
            self._balance(rank, state)

    def _balance(self, rank: int, state: State) -> None:
        """This rank's balanced piece: the parts of every region that fall in it, in region order."""
        plan = self._balance_plan(rank)
        mine = state.parts.pop(rank)
        pieces = []
        for src in range(self.n):
            if src == rank:
                pieces.append(_slice(mine, *plan.overlap(rank, rank)))
            elif src in state.inbound:
                pieces.append(state.inbound.pop(src))
        state.parts = {rank: _concat(pieces, mine.indices)}


def _slice(chunk: SparseChunk, lo: int, hi: int) -> SparseChunk:
    """Elements lo..hi - 1 of `chunk`."""
    return SparseChunk(chunk.indices[lo:hi], chunk.values[lo:hi])


def _concat(chunks: list[SparseChunk], like: Any) -> SparseChunk:
    """The chunks side by side (their ids in order: consecutive pieces of one sorted sequence), in the
    library and on the device of `like`."""
    if not chunks:
        return SparseChunk.empty(True, like)
    xp = backend.namespace(like)
    return SparseChunk(xp.astype(xp.concat([c.indices for c in chunks]), xp.int64),
                       xp.astype(xp.concat([c.values for c in chunks]), xp.float32))


def _runs(sizes: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of consecutive runs of the given sizes."""
    ends = np.cumsum(sizes)
    return [(int(e - s), int(e)) for s, e in zip(sizes, ends)]


def build(n: int, numel: int, *, tables: Tables | None = None, profile: Any = None, density: float = 0.01,
          tau: int = 32, repartition: int = 64, value_dtype: str = "float32") -> OkTopkProgram:
    """The Ok-Topk program for n ranks keeping k = ceil(density x numel)."""
    if not 0 < density <= 1:
        raise ConfigError(f"scheme oktopk: density {density!r} must be in (0, 1]")
    if numel >= 2**31:
        raise ConfigError(f"scheme oktopk: {numel} elements do not fit its int32 ids")
    return OkTopkProgram(n, numel, max(1, math.ceil(density * numel)), tau, repartition, value_dtype)


def closed_form(st: SparsityStats, b: float) -> float:
    """The paper's bound 6 k (P - 1) / P units of 4 bytes (k = d x numel)."""
    return 6 * (st.n - 1) / st.n * st.d * st.dense_bytes / b


SCHEMES = [
    Scheme("oktopk", "Ok-Topk: split and reduce by balanced regions, a global threshold re-used between exact "
           "recomputations, balance, all-gather", builder=build, accepts=(
               Option("density", "k / numel: the global top-k of the exact iterations", 0.01, kind=float),
               Option("tau", "iterations between exact recomputations of the global threshold", 32, kind=int,
                      minimum=1),
               Option("repartition", "iterations between recomputations of the region boundaries", 64, kind=int,
                      minimum=1),
               Option("value_dtype", "value type on the wire", "float32", ("float32", "float16", "bfloat16")),
           ),
           listing={"communication": "direct + bruck", "aggregation": "region owner + threshold",
                    "partition": "parallelism", "balance": "re-cut of the kept elements", "format": "coo",
                    "partitioner": "selected-id quantiles", "collapses": []}),
]
