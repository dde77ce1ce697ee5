"""ExDyna's communication (Yoon & Oh; SEEDS.md section 5): every worker's index list all-gathered,
padded to the longest, then the values at the union all-reduced.

Input: per rank a `UnionChunk` (zensim.sparsify.team): its values at the union U of all proposals
and, in `own`, its own proposal (ExDyna's sparsifier proposes inside exclusive partitions; any
sparsifier whose proposals are combined by union fits). A plain chunk is its own proposal with
zeros at the others' positions (what a worker sends when it keeps its residual elsewhere). Three phases, as the authors' code does it
with NCCL collectives (an all_gather of the counts, an all_gather of the padded index lists, an
all_reduce of the values):

1. counts: Bruck all-gather of one int32 per rank (ceil(log2 n) stages);
2. index lists: ring all-gather, every list padded to m = max_i k_i int32 ids (n - 1 stages):
   n (n - 1) m x 4 bytes in all, where n (n - 1) (sum_i k_i / n) x 4 would do; the ratio is the
   padding cost f(t) = n max_i k_i / sum_i k_i, reported in `ctx.stats["padding"]`;
3. values: ring all-reduce (reduce-scatter then all-gather, 2 (n - 1) stages) of the |U| values,
   the union split into n contiguous segments.

Each rank computes U from the lists it received (and checks it against its input). Lossless on
its input: every rank ends with sum_r values_r at U, bit-identical (each segment is summed once
along the ring, then copied).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zensim.errors import ConfigError
from zensim.run.context import RunContext, Tables
from zensim.schemes.closed import SparsityStats
from zensim.schemes.options import Option
from zensim.run.program import Capabilities, DriverOnly
from zensim.schemes.scheme import Scheme
from zensim.schemes.workkinds import merge_work
from zensim.sparse import xp as backend
from zensim.sparse.chunk import SparseChunk, union_indices
from zensim.sparse.partition import even_boundaries
from zensim.sparse.values import ValueCodec, value_codec

PAD = -1  # the value of a padding slot in an index list


def bruck(n: int, step: int, rank: int) -> tuple[int, int, list[int]]:
    """Bruck all-gather step `step` for `rank`: (destination, source, the ranks whose records it sends)."""
    count = min(1 << step, n - (1 << step))
    return (rank - (1 << step)) % n, (rank + (1 << step)) % n, [(rank + j) % n for j in range(count)]


@dataclass(frozen=True)
class WireKind:
    """What a message carries (its `name` goes into the message log) and how: int32 ids, or values
    in a wire value dtype (`codec`)."""

    name: str
    codec: ValueCodec | None = None

    def pack(self, array: np.ndarray) -> np.ndarray:
        """The wire bytes of `array`: a uint8 array of its library and device."""
        if self.codec:
            return self.codec.pack(array)
        xp = backend.namespace(array)
        return backend.as_bytes_of(xp.astype(array, xp.int32))

    def unpack(self, buf: bytes | np.ndarray) -> np.ndarray:
        """The array `pack` wrote (bytes-like, or a uint8 array of any library: decoded there)."""
        buf = backend.as_buffer(buf)
        if self.codec:
            return self.codec.unpack(buf, buf.shape[0] // self.codec.itemsize)
        xp = backend.namespace(buf)
        return xp.astype(backend.view(buf, xp.int32), xp.int32, copy=True)

    def itemsize(self) -> int:
        """Bytes per element."""
        return self.codec.itemsize if self.codec else 4


COUNTS, INDEX = WireKind("counts"), WireKind("index")


@dataclass(frozen=True)
class Raw:
    """A message that is one array: exact `nbytes`, bytes on demand."""

    fmt: WireKind
    array: np.ndarray

    @property
    def nbytes(self) -> int:
        """Elements x the wire size of one."""
        return len(self.array) * self.fmt.itemsize()

    def to_buffer(self) -> np.ndarray:
        """The wire bytes, a uint8 array of the array's library and device."""
        return self.fmt.pack(self.array)

    def to_bytes(self) -> bytes:
        """The wire bytes, on the host."""
        return backend.host(self.to_buffer()).tobytes()


@dataclass
class State:
    """One rank: its input, the counts and lists gathered so far, the value vector at the union."""

    chunk: SparseChunk
    counts: dict[int, int]
    lists: dict[int, np.ndarray]
    values: np.ndarray | None = None
    union: np.ndarray | None = None
    padded: dict[int, np.ndarray] = field(default_factory=dict)  # the padded lists as sent


class ExDynaProgram(DriverOnly):
    """The three phases as stages (see the module docstring)."""

    def __init__(self, n: int, numel: int, value_dtype: str = "float32") -> None:
        self.name, self.n, self.numel = "exdyna", n, numel
        self.caps = Capabilities(needs_values=True, lossless=True, replicas_identical=True, keeps_zeros=True,
                                 closed_form=closed_form)
        self.value_dtype = value_dtype
        self.values_kind = WireKind("values", value_codec(value_dtype))
        self.c_stages = math.ceil(math.log2(n)) if n > 1 else 0
        self.i_stages = n - 1
        self.num_stages = max(1, self.c_stages + 3 * (n - 1))

    def _phase(self, stage: int) -> tuple[str, int]:
        if stage < self.c_stages:
            return "counts", stage
        stage -= self.c_stages
        if stage < self.i_stages:
            return "index", stage
        return "values", stage - self.i_stages

    def _peer(self, stage: int, rank: int, out: bool) -> int | None:
        """Where `rank` sends (out) or receives from at `stage`; None if nowhere (n = 1)."""
        if self.n == 1:
            return None
        phase, s = self._phase(stage)
        if phase == "counts":
            dst, src, _ = bruck(self.n, s, rank)
            return dst if out else src
        return (rank + 1) % self.n if out else (rank - 1) % self.n

    def sources(self, stage: int, rank: int) -> list[int]:
        """Who sends to `rank` at `stage`."""
        peer = self._peer(stage, rank, False)
        return [] if peer is None else [peer]

    def destinations(self, stage: int, rank: int) -> list[int]:
        """Whom `rank` sends to at `stage`."""
        peer = self._peer(stage, rank, True)
        return [] if peer is None else [peer]

    def start(self, rank: int, chunk: SparseChunk, ctx: RunContext) -> State:
        """The rank's own count and list; its values wait for the union."""
        own = getattr(chunk, "own", chunk.indices)  # a plain chunk: its ids are its proposal, zero elsewhere
        xp = backend.namespace(chunk.indices)
        state = State(chunk, {rank: len(own)}, {rank: xp.astype(own, xp.int64, copy=False)})
        if self.n == 1:
            self._to_values(rank, state, ctx)
        return state

    def sends(self, stage: int, rank: int, state: State, ctx: RunContext) -> dict[int, Raw]:
        """This stage's one message."""
        dst = self._peer(stage, rank, True)
        if dst is None:
            return {}
        phase, s = self._phase(stage)
        ids = state.chunk.indices
        xp, dev = backend.namespace(ids), backend.device(ids)
        if phase == "counts":
            ranks = bruck(self.n, s, rank)[2]
            return {dst: Raw(COUNTS, xp.asarray([state.counts[r] for r in ranks], dtype=xp.int32, device=dev))}
        if phase == "index":
            origin = (rank - s) % self.n
            if origin not in state.padded:  # this rank's own list, padded once it knows the longest
                longest = max(state.counts.values())
                padded = xp.full(longest, PAD, dtype=xp.int32, device=dev)
                padded[: state.counts[origin]] = state.lists[origin]
                state.padded[origin] = padded
                ctx.add("copy", longest)
            return {dst: Raw(INDEX, state.padded[origin])}  # forwarded as received
        if s == 0 and state.values is None:
            self._to_values(rank, state, ctx)
        codec = self.values_kind.codec
        if s < self.n - 1:  # reduce-scatter: the partial sum of segment r-1-s, as the wire carries it
            segment = self._segment(rank - 1 - s, state)
            ctx.add("copy", segment.stop - segment.start)
            return {dst: Raw(self.values_kind, xp.asarray(codec.quantize(state.values[segment]), copy=True))}
        segment = self._segment(rank - (s - self.n + 1), state)  # all-gather: the finished segment r - s'
        state.values[segment] = codec.quantize(state.values[segment])  # kept as sent: identical replicas
        ctx.add("copy", segment.stop - segment.start)
        return {dst: Raw(self.values_kind, xp.asarray(state.values[segment], copy=True))}

    def receive(self, stage: int, rank: int, state: State, inbox: dict[int, Raw], ctx: RunContext) -> State:
        """Merge the counts, keep a list, or add / copy a value segment."""
        if not inbox:
            return state
        (src, message), = inbox.items()
        phase, s = self._phase(stage)
        if phase == "counts":
            for r, value in zip(bruck(self.n, s, src)[2], message.array.tolist()):  # the ranks src sent
                state.counts[r] = int(value)
        elif phase == "index":
            origin = (rank - 1 - s) % self.n
            state.padded[origin] = message.array
            state.lists[origin] = message.array[: state.counts[origin]]
        elif s < self.n - 1:  # reduce-scatter: add the segment that arrived (ring order: canonical)
            segment = self._segment(rank - 2 - s, state)
            state.values[segment] = message.array + state.values[segment]
            ctx.add("add.dense", len(message.array))
        else:  # all-gather: copy the finished segment
            state.values[self._segment(rank - 1 - (s - self.n + 1), state)] = message.array
            ctx.add("copy", len(message.array))
        return state

    def decode(self, stage: int, rank: int, src: int, buf: bytes, ctx: RunContext) -> Raw:
        """The message `src` sent (the bytes transports)."""
        kind = {"counts": COUNTS, "index": INDEX, "values": self.values_kind}[self._phase(stage)[0]]
        array = kind.unpack(buf)
        return Raw(kind, array if ctx.like is None else backend.like(array, ctx.like))

    def result(self, rank: int, state: State, ctx: RunContext) -> SparseChunk:
        """The union with the summed values."""
        if state.values is None:
            self._to_values(rank, state, ctx)
        xp = backend.namespace(state.values)
        return SparseChunk(state.union, xp.astype(state.values, xp.float32))

    def _to_values(self, rank: int, state: State, ctx: RunContext) -> None:
        """Once every list is in: the union, checked against the input, and this rank's values there."""
        lists = [state.lists[r] for r in range(self.n)]
        # in memory every rank holds the same list objects (each padded once, then forwarded): the
        # union is computed once per run, keyed by them; after a bytes transport each rank has its own
        key = ("exdyna-union", *(id(state.padded.get(r, state.lists[r])) for r in range(self.n)))
        chunk = state.chunk
        xp = backend.namespace(chunk.indices)
        union = ctx.remember(key, lambda: union_indices([SparseChunk(xp.astype(x, xp.int64)) for x in lists]))
        for kind, count in merge_work(False, 0, sum(len(x) for x in lists), len(lists)):
            ctx.add(kind, count)
        if hasattr(chunk, "own"):
            if union.shape != chunk.indices.shape or not bool(xp.all(union == chunk.indices)):
                raise ConfigError(f"scheme exdyna: rank {rank}'s values are not at the union of the proposals")
            values = xp.astype(chunk.values, xp.float32, copy=True)
        else:
            values = xp.zeros(union.shape[0], dtype=xp.float32, device=backend.device(union))
            values[xp.searchsorted(union, chunk.indices)] = chunk.values
            ctx.add("search", chunk.nnz)
        counts = np.array([state.counts[r] for r in range(self.n)])
        ctx.stats["padding"] = float(self.n * counts.max() / counts.sum()) if counts.sum() else 1.0
        ctx.stats["counts"] = counts.tolist()
        state.union, state.values = union, values

    def _segment(self, j: int, state: State) -> slice:
        """Segment j (mod n) of the union's value vector."""
        bounds = even_boundaries(len(state.values), self.n)
        j %= self.n
        return slice(int(bounds[j]), int(bounds[j + 1]))


def build(n: int, numel: int, *, tables: Tables | None = None, profile: Any = None,
          value_dtype: str = "float32") -> ExDynaProgram:
    """The program for n ranks."""
    return ExDynaProgram(n, numel, value_dtype)


def closed_form(st: SparsityStats, b: float) -> float:
    """Without padding or union growth (k = d n numel ids in all, exclusive): the index all-gather
    (n - 1) k / n x 4 bytes per rank and the values' ring all-reduce 2 (n - 1) / n x k x 4."""
    k_bytes = st.d * st.dense_bytes * st.n  # every rank's k_i x 4 bytes, summed
    return 3 * (st.n - 1) / st.n * k_bytes / b


SCHEMES = [
    Scheme("exdyna", "ExDyna's exchange: padded all-gather of index lists, ring all-reduce of the values "
           "at the union (reports the padding cost f(t))", builder=build, accepts=(
               Option("value_dtype", "value type on the wire", "float32", ("float32", "float16", "bfloat16")),),
           listing={"communication": "bruck + ring", "aggregation": "union", "partition": "centralization",
                    "balance": "n/a", "format": "int32 ids / fp32 values", "partitioner": "-", "collapses": []}),
]
