"""Stage programs: a plan (communication), an aggregation rule and a partition rule, run rank-locally.

The protocol (docs/architecture.md) is `num_stages`, `start`, `sends`, `sources`, `receive`,
`decode_message`, `result`. A rank holds, for every item, a list of *groups*: pieces and the
mask of ranks whose contributions they carry. Its own contribution is a group that is never
dropped. To send `Transfer(item, origins)` it covers `origins` exactly with held groups (most
recently acquired first); then

- Incremental aggregation merges the cover into one piece, sends it, and keeps it as a group
  (dropping the groups it subsumes);
- One-shot aggregation sends the cover's pieces side by side (a bundle); the receiver keeps
  them as one group (it never needs to split it again).

An item whose held groups cover every rank is aggregated at once (after the stage's receives):
that is One-shot's single aggregation and Incremental's last merge. Centralization has one item,
the whole tensor; Parallelism splits with a partitioner into n items, reduce-scatters them with
the pattern, then all-gathers the aggregated items (step 2, the pull).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from zensim.schemes import wire
from zensim.schemes.pieces import ChunkPiece, Piece, assemble, make_bit_pieces, union
from zensim.schemes.plans import Stage, Transfer, full
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import Domain, ExplicitDomain, RangeDomain
from zensim.sparse.formats import Format
from zensim.sparse.partition import Partitioner


class Meter:
    """Records local work `(kind, elements)`; the driver points it at (stage, rank, phase)."""

    def add(self, kind: str, elements: int) -> None:
        """Count `elements` processed by `kind` (hash, merge, encode, decode)."""


class Group:
    """Held pieces and the mask of ranks whose contributions they carry: one merged piece, or under
    One-shot the separate pieces of those ranks (as they arrived, with their payloads cached)."""

    __slots__ = ("origins", "pieces", "nnz", "_wire")

    def __init__(self, origins: int, pieces: tuple[Piece, ...], payloads: tuple | None = None,
                 fmt: Format | None = None) -> None:
        self.origins, self.pieces = origins, pieces
        self.nnz = sum(p.nnz for p in pieces)
        self._wire: tuple[int, tuple] | None = (id(fmt), payloads) if payloads is not None else None

    def payloads(self, fmt: Format) -> tuple:
        """The pieces encoded in `fmt` (cached: forwarding re-sends the same payloads)."""
        if self._wire is None or self._wire[0] != id(fmt):
            self._wire = (id(fmt), tuple(wire.encode(p, fmt) for p in self.pieces))
        return self._wire[1]


@dataclass
class RankState:
    """Everything one rank holds: per item its groups, oldest first (own contribution first)."""

    rank: int
    items: list[list[Group]] = field(default_factory=list)


class Incremental:
    """Aggregate at every stage: a transfer is one merged piece."""

    name = "incremental"
    one_shot = False

    def count(self, t: Transfer, n: int) -> int:
        """Number of pieces a transfer carries."""
        return 1


class OneShot:
    """Aggregate only once everything is there: a transfer carries each rank's piece separately."""

    name = "one-shot"
    one_shot = True

    def count(self, t: Transfer, n: int) -> int:
        """One piece per origin rank, or one aggregate when the item is complete."""
        return 1 if t.origins == full(n) else t.origins.bit_count()


class Centralization:
    """One item, the whole tensor over [0, numel)."""

    name = "centralization"

    def __init__(self, numel: int) -> None:
        self.whole = RangeDomain(0, numel)

    def position_of(self) -> None:
        """Positions are ids: no lookup table."""
        return None

    def domains(self) -> list[Domain]:
        """The item domains."""
        return [self.whole]

    def split(self, chunk: SparseChunk, meter: Meter) -> list[SparseChunk]:
        """The chunk itself is the only item."""
        return [chunk]

    def result(self, pieces: Sequence[Piece]) -> SparseChunk:
        """The aggregated whole tensor."""
        return pieces[0].to_chunk()


class Parallelism:
    """n items: the partitioner's parts (contiguous ranges, or ZEN's hash partitions)."""

    name = "parallelism"

    def __init__(self, partitioner: Partitioner, hashed: bool) -> None:
        self.partitioner, self.hashed = partitioner, hashed
        self._domains = partitioner.domains()
        self._position_of: np.ndarray | None = None

    def position_of(self) -> np.ndarray | None:
        """For explicit (hash) domains, every id's position in its domain, so that bitset pieces
        need a lookup, not a search; None for ranges."""
        if self._position_of is None and isinstance(self._domains[0], ExplicitDomain):
            self._position_of = position_table(tuple(self._domains), self.partitioner.numel)
        return self._position_of

    def domains(self) -> list[Domain]:
        """The item domains."""
        return self._domains

    def split(self, chunk: SparseChunk, meter: Meter) -> list[SparseChunk]:
        """The partitioner's n parts (hashing every element when the partitioner hashes)."""
        if self.hashed:
            meter.add("hash", chunk.nnz)
        return self.partitioner.split(chunk)

    def result(self, pieces: Sequence[Piece]) -> SparseChunk:
        """All aggregated partitions as one chunk."""
        return assemble(pieces)


_TABLE: list[tuple[tuple[Domain, ...], np.ndarray]] = []


def position_table(domains: tuple[Domain, ...], numel: int) -> np.ndarray:
    """id -> position in its domain for disjoint explicit domains covering [0, numel) (int32 below
    2**31 ids); the last table is kept, for programs built on the same (cached) domains."""
    if _TABLE and len(_TABLE[0][0]) == len(domains) and all(a is b for a, b in zip(_TABLE[0][0], domains)):
        return _TABLE[0][1]
    table = np.empty(numel, np.int32 if numel < 2**31 else np.int64)
    for d in domains:
        table[d.elements] = np.arange(d.size, dtype=table.dtype)
    _TABLE[:] = [(domains, table)]
    return table


Aggregation = Incremental | OneShot
Partition = Centralization | Parallelism


class StageProgram:
    """A scheme instance for n ranks: stages of transfers, run rank-locally (see module docstring)."""

    def __init__(self, name: str, n: int, numel: int, stages: list[Stage], step2_start: int,
                 aggregation: Aggregation, partition: Partition, push: Format, pull: Format,
                 lossless: bool = True) -> None:
        self.name, self.n, self.numel = name, n, numel
        self.aggregation, self.partition, self.push, self.pull = aggregation, partition, push, pull
        self.lossless = lossless
        self.step2_start = step2_start
        self._stages = stages or [[]]  # at least one stage (n = 1 has one stage and no messages)
        self._out = [_by(stage, "src") for stage in self._stages]
        self._in = [_by(stage, "dst") for stage in self._stages]
        self._domains = partition.domains()
        self._bits: bool | None = None

    @property
    def num_stages(self) -> int:
        """Number of stages S."""
        return len(self._stages)

    def fmt(self, stage: int) -> Format:
        """The wire format used at `stage` (push, or pull from step 2 on)."""
        return self.pull if stage >= self.step2_start else self.push

    def start(self, rank: int, chunk: SparseChunk, meter: Meter) -> RankState:
        """Split the rank's chunk into its own item pieces (bitsets in indices-only mode)."""
        self._bits = chunk.values is None
        state = RankState(rank)
        parts = self.partition.split(chunk, meter)
        if self._bits:
            pieces = make_bit_pieces(parts, self._domains, self.partition.position_of())
        else:
            pieces = [ChunkPiece(domain, part) for part, domain in zip(parts, self._domains)]
        state.items = [[Group(1 << rank, (piece,))] for piece in pieces]
        if self.n == 1:
            self._complete(state, range(len(state.items)), meter)
        return state

    def sources(self, stage: int, rank: int) -> list[int]:
        """Ranks that send to `rank` at `stage`, in ascending order."""
        return list(self._in[stage].get(rank, ()))

    def destinations(self, stage: int, rank: int) -> list[int]:
        """Ranks `rank` sends to at `stage`, in ascending order."""
        return list(self._out[stage].get(rank, ()))

    def sends(self, stage: int, rank: int, state: RankState, meter: Meter) -> dict[int, wire.Message]:
        """This rank's messages of `stage`: per destination, its transfers' pieces in plan order."""
        fmt = self.fmt(stage)
        out, encoded = {}, 0
        for dst, transfers in self._out[stage].get(rank, {}).items():
            payloads: tuple = ()
            for t in transfers:
                for g in self._groups_for(state, t, meter):
                    encoded += g.nnz
                    payloads += g.payloads(fmt)
            out[dst] = wire.pack(payloads)
        meter.add("encode", encoded)
        return out

    def receive(self, stage: int, rank: int, state: RankState, inbox: dict[int, wire.Message],
                meter: Meter) -> RankState:
        """Take every transfer's pieces as one group, then aggregate each item that became complete."""
        touched, decoded, bits, fmt = set(), 0, bool(self._bits), self.fmt(stage)
        for src, transfers in self._in[stage].get(rank, {}).items():
            payloads, at = wire.unpack(inbox[src]), 0
            for t in transfers:
                mine = payloads[at:at + self.aggregation.count(t, self.n)]
                at += len(mine)
                group = Group(t.origins, tuple(wire.to_piece(p, bits) for p in mine), mine, fmt)
                decoded += group.nnz
                state.items[t.item].append(group)
                touched.add(t.item)
            if at != len(payloads):
                raise RuntimeError(f"{self.name}: stage {stage} rank {rank} got {len(payloads)} pieces "
                                   f"from {src}, expected {at}")
        meter.add("decode", decoded)
        self._complete(state, sorted(touched), meter)
        return state

    def decode_message(self, stage: int, rank: int, src: int, buf: bytes) -> wire.Message:
        """Decode the bytes `src` sent `rank` at `stage` (emulator path)."""
        fmt = self.fmt(stage)
        layout = [(fmt, self._domains[t.item])
                  for t in self._in[stage][rank][src] for _ in range(self.aggregation.count(t, self.n))]
        return wire.from_bytes(buf, layout, with_values=not self._bits)

    def result(self, rank: int, state: RankState) -> SparseChunk:
        """The rank's aggregated tensor (every item must be complete)."""
        pieces = []
        for j, groups in enumerate(state.items):
            if len(groups) != 1 or groups[0].origins != full(self.n) or len(groups[0].pieces) != 1:
                raise RuntimeError(f"{self.name}: rank {rank} ended without item {j} aggregated")
            pieces.append(groups[0].pieces[0])
        return self.partition.result(pieces)

    def _groups_for(self, state: RankState, t: Transfer, meter: Meter) -> list[Group]:
        """Groups carrying exactly `t.origins` of `t.item` (merged into one when Incremental)."""
        groups = state.items[t.item]
        cover = _cover(groups, t.origins)
        if cover is None:
            raise RuntimeError(f"{self.name}: rank {state.rank} cannot send item {t.item} "
                               f"with origins {t.origins:#x} (holds {[hex(g.origins) for g in groups]})")
        if self.aggregation.one_shot or len(cover) == 1:
            return cover
        merged = self._merge(cover, t.origins, meter)
        own = groups[0]
        groups[:] = [own] + [g for g in groups[1:] if g.origins & ~t.origins] + [merged]
        return [merged]

    def _merge(self, cover: list[Group], origins: int, meter: Meter) -> Group:
        """One group aggregating every piece of `cover` (counted as merge work)."""
        meter.add("merge", sum(g.nnz for g in cover))
        return Group(origins, (union([p for g in cover for p in g.pieces]),))

    def _complete(self, state: RankState, items: Sequence[int], meter: Meter) -> None:
        """Aggregate every listed item whose groups now cover all ranks."""
        everyone = full(self.n)
        for j in items:
            groups = state.items[j]
            if len(groups) == 1 and groups[0].origins == everyone and len(groups[0].pieces) == 1:
                continue
            cover = _cover(groups, everyone)
            if cover is not None:
                state.items[j] = [self._merge(cover, everyone, meter)]


def _cover(groups: list[Group], target: int) -> list[Group] | None:
    """Groups whose origins partition `target` exactly, most recent first; None if impossible."""
    left, picked = target, []
    for g in reversed(groups):
        if g.origins & ~left == 0:
            picked.append(g)
            left &= ~g.origins
            if not left:
                return picked
    return None


def _by(stage: Stage, key: str) -> dict[int, dict[int, list[Transfer]]]:
    """Transfers of a stage indexed [src][dst] (key 'src') or [dst][src] (key 'dst'), both levels
    in ascending rank order, transfers in plan order."""
    other = "dst" if key == "src" else "src"
    index: dict[int, dict[int, list[Transfer]]] = {}
    for t in stage:
        index.setdefault(getattr(t, key), {}).setdefault(getattr(t, other), []).append(t)
    return {k: dict(sorted(v.items())) for k, v in sorted(index.items())}
