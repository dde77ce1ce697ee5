"""Stage programs: a plan (communication), an aggregation rule and a partition rule, run rank-locally.

The protocol (docs/architecture.md) is `num_stages`, `start`, `sends`, `sources`, `receive`,
`decode_message`, `result`. A rank holds, for every item, a list of *groups*: a piece and the
mask of ranks whose contributions it carries. Its own contribution is a group that is never
dropped. To send `Transfer(item, origins)` it covers `origins` exactly with held groups (most
recently acquired first); then

- Incremental aggregation merges the cover into one piece, sends it, and keeps it as a group
  (dropping the groups it subsumes);
- One-shot aggregation sends the cover's pieces side by side (a bundle, in origin order).

An item whose held groups cover every rank is aggregated at once (after the stage's receives):
that is One-shot's single aggregation and Incremental's last merge. Centralization has one item,
the whole tensor; Parallelism splits with a partitioner into n items, reduce-scatters them with
the pattern, then all-gathers the aggregated items (step 2, the pull).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from zensim.schemes import wire
from zensim.schemes.pieces import Piece, assemble, make_piece, union
from zensim.schemes.plans import Stage, Transfer, full
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import Domain, RangeDomain
from zensim.sparse.formats import Format
from zensim.sparse.partition import Partitioner


class Meter:
    """Records local work `(kind, elements)`; the driver points it at (stage, rank, phase)."""

    def add(self, kind: str, elements: int) -> None:
        """Count `elements` processed by `kind` (hash, merge, encode, decode, copy)."""


@dataclass
class Group:
    """A held piece and the mask of ranks whose contributions it carries."""

    origins: int
    piece: Piece


@dataclass
class RankState:
    """Everything one rank holds: per item its groups, oldest first (own contribution first)."""

    rank: int
    items: list[list[Group]] = field(default_factory=list)


class Incremental:
    """Aggregate at every stage: a transfer is one merged piece."""

    name = "incremental"
    one_shot = False

    def parts(self, t: Transfer, n: int) -> list[int]:
        """Origin masks of the pieces a transfer carries, in wire order."""
        return [t.origins]


class OneShot:
    """Aggregate only once everything is there: a transfer carries each rank's piece separately."""

    name = "one-shot"
    one_shot = True

    def parts(self, t: Transfer, n: int) -> list[int]:
        """One piece per origin rank (ascending), or the aggregate when the item is complete."""
        if t.origins == full(n):
            return [t.origins]
        return [1 << r for r in range(n) if t.origins >> r & 1]


class Centralization:
    """One item, the whole tensor over [0, numel)."""

    name = "centralization"

    def __init__(self, numel: int) -> None:
        self.whole = RangeDomain(0, numel)

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
        for part, domain in zip(self.partition.split(chunk, meter), self._domains):
            state.items.append([Group(1 << rank, make_piece(part, domain, self._bits))])
        if self.n == 1:
            self._complete(state, range(len(state.items)), meter)
        return state

    def sources(self, stage: int, rank: int) -> list[int]:
        """Ranks that send to `rank` at `stage`, in ascending order."""
        return sorted(self._in[stage].get(rank, {}))

    def destinations(self, stage: int, rank: int) -> list[int]:
        """Ranks `rank` sends to at `stage`, in ascending order."""
        return sorted(self._out[stage].get(rank, {}))

    def sends(self, stage: int, rank: int, state: RankState, meter: Meter) -> dict[int, wire.Message]:
        """This rank's messages of `stage`: per destination, its transfers' pieces in plan order."""
        fmt = self.fmt(stage)
        out = {}
        for dst, transfers in self._out[stage].get(rank, {}).items():
            payloads = []
            for t in transfers:
                for piece in self._pieces_for(state, t, meter):
                    meter.add("encode", piece.nnz)
                    payloads.append(wire.encode(piece, fmt))
            out[dst] = wire.pack(payloads)
        return out

    def receive(self, stage: int, rank: int, state: RankState, inbox: dict[int, wire.Message],
                meter: Meter) -> RankState:
        """Take every source's pieces as groups, then aggregate each item that became complete."""
        touched = set()
        for src, transfers in sorted(self._in[stage].get(rank, {}).items()):
            payloads = iter(wire.unpack(inbox[src]))
            for t in transfers:
                for origins in self.aggregation.parts(t, self.n):
                    piece = wire.to_piece(next(payloads), bool(self._bits))
                    meter.add("decode", piece.nnz)
                    state.items[t.item].append(Group(origins, piece))
                touched.add(t.item)
        self._complete(state, sorted(touched), meter)
        return state

    def decode_message(self, stage: int, rank: int, src: int, buf: bytes) -> wire.Message:
        """Decode the bytes `src` sent `rank` at `stage` (emulator path)."""
        fmt = self.fmt(stage)
        layout = [(fmt, self._domains[t.item])
                  for t in self._in[stage][rank][src] for _ in self.aggregation.parts(t, self.n)]
        return wire.from_bytes(buf, layout, with_values=not self._bits)

    def result(self, rank: int, state: RankState) -> SparseChunk:
        """The rank's aggregated tensor (every item must be complete)."""
        pieces = []
        for j, groups in enumerate(state.items):
            if len(groups) != 1 or groups[0].origins != full(self.n):
                raise RuntimeError(f"{self.name}: rank {rank} ended without item {j} aggregated")
            pieces.append(groups[0].piece)
        return self.partition.result(pieces)

    def _pieces_for(self, state: RankState, t: Transfer, meter: Meter) -> list[Piece]:
        """The pieces carrying exactly `t.origins` of `t.item` (merged into one when Incremental)."""
        groups = state.items[t.item]
        cover = _cover(groups, t.origins)
        if cover is None:
            raise RuntimeError(f"{self.name}: rank {state.rank} cannot send item {t.item} "
                               f"with origins {t.origins:#x} (holds {[hex(g.origins) for g in groups]})")
        if self.aggregation.one_shot or len(cover) == 1:
            return [g.piece for g in sorted(cover, key=lambda g: g.origins)]
        meter.add("merge", sum(g.piece.nnz for g in cover))
        merged = Group(t.origins, union([g.piece for g in cover]))
        own = groups[0]
        groups[:] = [own] + [g for g in groups[1:] if g.origins & ~t.origins] + [merged]
        return [merged.piece]

    def _complete(self, state: RankState, items: Sequence[int], meter: Meter) -> None:
        """Aggregate every listed item whose groups now cover all ranks."""
        everyone = full(self.n)
        for j in items:
            groups = state.items[j]
            if len(groups) == 1 and groups[0].origins == everyone:
                continue
            cover = _cover(groups, everyone)
            if cover is None:
                continue
            meter.add("merge", sum(g.piece.nnz for g in cover))
            state.items[j] = [Group(everyone, union([g.piece for g in cover]))]


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
    """Transfers of a stage indexed [src][dst] (key 'src') or [dst][src] (key 'dst'), plan order."""
    other = "dst" if key == "src" else "src"
    index: dict[int, dict[int, list[Transfer]]] = {}
    for t in stage:
        index.setdefault(getattr(t, key), {}).setdefault(getattr(t, other), []).append(t)
    return index
