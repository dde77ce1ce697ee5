"""Stage programs composed from parts: a plan (communication), an aggregation, a partition, formats.

The protocol every program follows (docs/architecture.md; zensim.run drives it):
`name, n, numel, num_stages, caps`, `start`, `sends`, `sources`, `destinations`, `receive`,
`decode`, `result`. A rank holds, for every item, a list of *groups*: pieces and the mask of ranks
whose contributions they carry. Its own contribution is a group that is never dropped. To send
`Transfer(item, origins)` it covers `origins` exactly with held groups (most recently acquired
first); then

- Incremental aggregation merges the cover into one piece, sends it, and keeps it as a group
  (dropping the groups it subsumes);
- One-shot aggregation sends the cover's pieces side by side (a bundle, in the order of their
  origin ranks); the receiver keeps them as one group (it never needs to split it again).

An item whose held groups cover every rank is aggregated at once (after the stage's receives):
that is One-shot's single aggregation and Incremental's last merge. Centralization has one item,
the whole tensor; Parallelism splits with a partitioner into n items, reduce-scatters them with
the plan, then all-gathers the aggregated items (step 2, the pull).

Values: a rank's contribution enters as its push format carries it (rounded to the wire dtype,
explicit zeros dropped where the format cannot carry them); what a rank sends, it keeps as sent;
merges sum in the order of the contributing ranks; a complete aggregate is kept in the wire's
value dtype on every rank, whether it is sent on or not. So every rank that ends with an item holds the
same bits, except where the plan makes ranks associate their sums differently (Ring with
Incremental Centralization: each rank is the root of its own ring), which `caps` declares.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from zensim.run.context import RunContext, Tables
from zensim.run.log import MessageLog
from zensim.run.program import Capabilities, ClosedForm
from zensim.schemes import sized, wire
from zensim.schemes.aggregation import Aggregation
from zensim.schemes.partitioning import Centralization, Parallelism
from zensim.schemes.pieces import ChunkPiece, Piece, make_bit_pieces, union
from zensim.schemes.plans import Stage, Transfer, full
from zensim.schemes.workkinds import merge_work, payload_work
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.formats import Format

Partition = Centralization | Parallelism


class Group:
    """Held pieces and the mask of ranks whose contributions they carry: one merged piece, or under
    One-shot the separate pieces of those ranks in ascending rank order (payloads cached). `keys`,
    when given, names each piece's lowest origin rank (a bundle of merged pieces, e.g. one per team)."""

    __slots__ = ("origins", "pieces", "nnz", "_wire", "keys")

    def __init__(self, origins: int, pieces: tuple[Piece, ...], payloads: tuple | None = None,
                 fmt: Format | None = None, keys: Sequence[int] | None = None) -> None:
        self.origins, self.pieces, self.keys = origins, pieces, keys
        self.nnz = sum(p.nnz for p in pieces)
        self._wire: tuple[int, tuple] | None = (id(fmt), payloads) if payloads is not None else None

    def keyed(self) -> list[tuple[int, Piece]]:
        """(origin rank, piece) pairs: a merged piece is keyed by its lowest origin."""
        if self.keys is not None:
            return list(zip(self.keys, self.pieces))
        if len(self.pieces) == 1:
            return [(lowest(self.origins), self.pieces[0])]
        return list(zip(bits(self.origins), self.pieces))

    def payloads(self, fmt: Format, ctx: RunContext) -> tuple:
        """The pieces encoded in `fmt` (cached: forwarding re-sends the same payloads). With values,
        the group then holds its pieces as sent (rounded, zeros dropped), as the receivers do."""
        if self._wire is None or self._wire[0] != id(fmt):
            payloads = tuple(wire.encode(p, fmt, ctx) for p in self.pieces)
            self._wire = (id(fmt), payloads)
            held = tuple(wire.as_sent(p, e) for p, e in zip(self.pieces, payloads))
            if any(h is not p for h, p in zip(held, self.pieces)):
                self.pieces = held
                self.nnz = sum(p.nnz for p in self.pieces)
        return self._wire[1]


def lowest(mask: int) -> int:
    """The lowest rank in `mask`."""
    return (mask & -mask).bit_length() - 1


def bits(mask: int) -> list[int]:
    """The ranks in `mask`, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class ComposedProgram:
    """A scheme instance for n ranks composed from parts (see the module docstring): a
    zensim.run.program.StageProgram. `counted` is the plan's rule for writing its log from counts
    (zensim.schemes.sized; the plan's `counted`), None where only the driver can run it; it is kept
    only where the formats and the aggregation allow counting (`sized.countable`)."""

    def __init__(self, name: str, n: int, numel: int, stages: list[Stage], step2_start: int,
                 aggregation: Aggregation, partition: Partition, push: Format, pull: Format,
                 symmetric: bool = True, closed_form: ClosedForm | None = None,
                 counted: sized.CountRule | None = None) -> None:
        self.name, self.n, self.numel = name, n, numel
        self.aggregation, self.partition, self.push, self.pull = aggregation, partition, push, pull
        self.step2_start = step2_start
        self._stages = stages or [[]]  # at least one stage (n = 1 has one stage and no messages)
        self._index: OrderedDict[tuple[int, str], dict[int, dict[int, list[Transfer]]]] = OrderedDict()
        self._domains = partition.domains()
        incremental_central = not aggregation.one_shot and isinstance(partition, Centralization)
        self.caps = Capabilities(
            needs_values=aggregation.needs_values, lossless=aggregation.lossless and partition.lossless,
            replicas_identical=symmetric or not incremental_central or n <= 2,
            keeps_zeros=push.keeps_zeros and pull.keeps_zeros, closed_form=closed_form,
            collective=push.size_from_domain and pull.size_from_domain)
        self.counted = counted if counted is not None and sized.countable(self) else None

    def sized_log(self, chunks: Sequence[SparseChunk],
                  tables: Tables | None = None) -> tuple[MessageLog, RunContext] | None:
        """The log and context of `run_ranks(self, chunks, check=False)` from counts by the plan's rule
        (`counted`), for indices-only chunks of every rank; None otherwise."""
        if self.counted is None or len(chunks) != self.n or any(c.values is not None for c in chunks):
            return None
        return sized.counted_log(self, chunks, tables, self.counted)

    def _by(self, stage: int, key: str) -> dict[int, dict[int, list[Transfer]]]:
        """Stage `stage`'s transfers indexed by `key` ('src' or 'dst'; see `_by`), made on first use;
        the last few are kept (the driver walks the stages in order), not all: a ring plan of 1024
        ranks indexed at once would hold two million transfers."""
        found = self._index.get((stage, key))
        if found is None:
            found = self._index[stage, key] = _by(self._stages[stage], key)
            if len(self._index) > 4:
                self._index.popitem(last=False)
        return found

    @property
    def num_stages(self) -> int:
        """Number of stages S."""
        return len(self._stages)

    @property
    def value_dtype(self) -> str:
        """The value dtype on the wire."""
        return self.push.value.name

    def fmt(self, stage: int) -> Format:
        """The wire format used at `stage` (push, or pull from step 2 on)."""
        return self.pull if stage >= self.step2_start else self.push

    def start(self, rank: int, chunk: SparseChunk, ctx: RunContext) -> list[list[Group]]:
        """Split the rank's chunk into its own item pieces (bitsets in indices-only mode); values
        enter as the push format carries them."""
        if chunk.values is not None:
            chunk, flushed = self.push.received(chunk)
            ctx.flushed += flushed
        parts = self.partition.split(rank, chunk, ctx)
        if not ctx.values:
            pieces = make_bit_pieces(parts, self._domains, self.partition.position_of())
        else:
            pieces = [ChunkPiece(domain, part) for part, domain in zip(parts, self._domains)]
        items = [[Group(1 << rank, (piece,))] for piece in pieces]
        if self.n == 1:
            self._complete(rank, items, range(len(items)), ctx)
        return items

    def sources(self, stage: int, rank: int) -> list[int]:
        """Ranks that send to `rank` at `stage`, in ascending order."""
        return list(self._by(stage, "dst").get(rank, ()))

    def destinations(self, stage: int, rank: int) -> list[int]:
        """Ranks `rank` sends to at `stage`, in ascending order."""
        return list(self._by(stage, "src").get(rank, ()))

    def sends(self, stage: int, rank: int, items: list[list[Group]], ctx: RunContext) -> dict[int, wire.Message]:
        """This rank's messages of `stage`: per destination, its transfers' pieces in plan order."""
        fmt = self.fmt(stage)
        out = {}
        for dst, transfers in self._by(stage, "src").get(rank, {}).items():
            payloads: tuple = ()
            for t in transfers:
                for g, which in self._groups_for(rank, items, t, ctx):
                    sent = g.payloads(fmt, ctx)
                    payloads += sent if len(which) == len(sent) else tuple(sent[i] for i in which)
            for payload in payloads:
                for kind, count in payload_work("encode", payload):
                    ctx.add(kind, count)
            out[dst] = wire.pack(payloads)
        return out

    def receive(self, stage: int, rank: int, items: list[list[Group]], inbox: dict[int, wire.Message],
                ctx: RunContext) -> list[list[Group]]:
        """Take every transfer's pieces as one group, then aggregate each item that became complete."""
        touched, fmt, bits, to_piece = set(), self.fmt(stage), not ctx.values, wire.to_piece
        for src, transfers in self._by(stage, "dst").get(rank, {}).items():
            payloads, at = wire.unpack(inbox[src]), 0
            for t in transfers:
                mine = payloads[at:at + self.count(t)]
                at += len(mine)
                group = Group(t.origins, tuple([to_piece(p, bits) for p in mine]), mine, fmt, self.piece_keys(t))
                for payload in mine:
                    for kind, count in payload_work("decode", payload):
                        ctx.add(kind, count)
                items[t.item].append(group)
                touched.add(t.item)
            if at != len(payloads):
                raise RuntimeError(f"{self.name}: stage {stage} rank {rank} got {len(payloads)} pieces "
                                   f"from {src}, expected {at}")
        self._complete(rank, items, sorted(touched), ctx)
        return items

    def decode(self, stage: int, rank: int, src: int, buf: bytes, ctx: RunContext) -> wire.Message:
        """Decode the bytes `src` sent `rank` at `stage` (the bytes transports)."""
        fmt = self.fmt(stage)
        layout = [(fmt, self._domains[t.item])
                  for t in self._by(stage, "dst")[rank][src] for _ in range(self.count(t))]
        return wire.from_bytes(buf, layout, with_values=ctx.values, like=ctx.like)

    def count(self, t: Transfer) -> int:
        """Number of pieces transfer `t` carries (the aggregation's; programs may bundle otherwise)."""
        return self.aggregation.count(t, self.n)

    def piece_keys(self, t: Transfer) -> Sequence[int] | None:
        """The lowest origin rank of each piece of `t` when it is neither one piece nor one per
        origin rank (None: the default keys, see Group.keyed)."""
        return None

    def bundles(self, t: Transfer) -> bool:
        """Whether `t` sends the held groups side by side instead of merging them (One-shot)."""
        return self.aggregation.one_shot

    def result(self, rank: int, items: list[list[Group]], ctx: RunContext) -> SparseChunk:
        """The rank's aggregated tensor (every item must be complete)."""
        pieces = []
        for j, groups in enumerate(items):
            if len(groups) != 1 or groups[0].origins != full(self.n) or len(groups[0].pieces) != 1:
                raise RuntimeError(f"{self.name}: rank {rank} ended without item {j} aggregated")
            pieces.append(groups[0].pieces[0])
        return self.partition.result(pieces, ctx)

    def _groups_for(self, rank: int, items: list[list[Group]], t: Transfer,
                    ctx: RunContext) -> list[tuple[Group, range | list[int]]]:
        """The groups carrying exactly `t.origins` of `t.item`, each with the indices of its pieces
        to send (one merged group when Incremental). With values, One-shot pieces go in the order of
        their origin ranks (the receiver relies on it to sum in that order); indices-only, in cover
        order (a union does not depend on order)."""
        groups = items[t.item]
        cover = cover_groups(groups, t.origins)
        if cover is None:
            raise RuntimeError(f"{self.name}: rank {rank} cannot send item {t.item} "
                               f"with origins {t.origins:#x} (holds {[hex(g.origins) for g in groups]})")
        if len(cover) > 1 and not self.bundles(t):
            merged = self._merge(rank, cover, t.origins, ctx)
            groups[:] = [groups[0]] + [g for g in groups[1:] if g.origins & ~t.origins] + [merged]
            cover = [merged]
        if len(cover) == 1 or not ctx.values:
            return [(g, range(len(g.pieces))) for g in cover]
        picked = sorted(((key, gi, pi) for gi, g in enumerate(cover) for pi, (key, _) in enumerate(g.keyed())),
                        key=lambda x: x[0])
        return [(cover[gi], [pi]) for _, gi, pi in picked]

    def _merge(self, rank: int, cover: list[Group], origins: int, ctx: RunContext) -> Group:
        """One group aggregating every piece of `cover` in origin order (merge work counted), then
        the aggregation's hook."""
        if ctx.values:
            pieces = [p for _, p in sorted((kp for g in cover for kp in g.keyed()), key=lambda kp: kp[0])]
        else:
            pieces = [p for g in cover for p in g.pieces]
        for kind, count in merge_work(self.push.name == "dense", pieces[0].domain.size, sum(p.nnz for p in pieces),
                                      len(pieces)):
            ctx.add(kind, count)
        return Group(origins, (self.aggregation.after_merge(union(pieces, ctx), rank, ctx),))

    def _complete(self, rank: int, items: list[list[Group]], which: Sequence[int], ctx: RunContext) -> None:
        """Aggregate every listed item whose groups now cover all ranks."""
        everyone = full(self.n)
        for j in which:
            groups = items[j]
            if len(groups) == 1 and groups[0].origins == everyone and len(groups[0].pieces) == 1:
                continue
            cover = cover_groups(groups, everyone)
            if cover is not None:
                merged = self._merge(rank, cover, everyone, ctx)
                if ctx.values:  # the aggregate in the wire's value dtype on every rank, sent or not
                    piece = merged.pieces[0]
                    merged = Group(everyone, (wire.received(piece, self.pull, ctx),))
                items[j] = [merged]


def cover_groups(groups: list[Group], target: int) -> list[Group] | None:
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
    index: dict[int, dict[int, list[Transfer]]] = {}
    ordered = True  # plans list their transfers in rank order: sorting is then not needed
    last = (-1, -1)
    for t in stage:
        k, o = (t.src, t.dst) if key == "src" else (t.dst, t.src)
        inner = index.get(k)
        if inner is None:
            inner = index[k] = {}
        held = inner.get(o)
        if held is None:
            inner[o] = [t]
        else:
            held.append(t)
        ordered = ordered and (k, o) >= last
        last = (k, o)
    if ordered:
        return index
    return {k: dict(sorted(v.items())) for k, v in sorted(index.items())}
