"""Message logs from counts: the plans whose every message size and work count follow from how many
ids each rank holds in each item and how many distinct ids a set of ranks holds, without running
the ranks.

The simulator's driver runs every rank's stage program (`zensim.run.run_ranks`): at 1024 ranks a
ring is 2046 stages x 1024 rank steps, two million steps of Python, although every size it logs is
a function of counts. For these programs, run indices-only with a format whose size depends only on
the element count (`Format.size_from_count`: dense, COO, bitmap, hash bitmap), the log follows from

- `own[r, j]`: ids of rank r in item j (what the partitioner puts there; one item under
  Centralization);
- the size of unions the plan makes: a ring's reduce-scatter merges item j over the ranks j+1,
  j+2, ... in ring order, so its k-th message carries the ids that any of the first k+1 ranks holds
  (`prefix[j, k]`, from each id's first holder in that order); point-to-point and one-shot plans
  only ever merge every rank (`prefix[j, n-1]`).

Every plan owns its rule (`counted(n, one_shot, central)` of zensim.schemes.plans: which of the
rules below writes its log, or None); `ComposedProgram.sized_log` runs it through `counted_log`.
Each rule writes exactly the log the driver writes: the same messages in the same order and the
same work records (hash, encode, decode, merge: the program's rules of what it counts, restated
here per plan), and the same statistics (`split`, `held`). `zensim.schemes.conformance.check_scheme`
checks it for every scheme it runs, tests/test_sized.py column by column on traces with empty
ranks, duplicates and n from 2 up. One-shot Parallelism on the ring bundles the pieces it forwards
(a uint32 length per piece, as zensim.schemes.wire packs them) and merges once, at the item's owner.
Programs of any other shape (values carried, blocks, folded hierarchies, re-selection) have no rule
and run through the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from zensim.run.context import Meter, RunContext, Tables
from zensim.run.log import IDS, MessageLog
from zensim.schemes import wire
from zensim.schemes.workkinds import format_work, merge_work
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import ExplicitDomain
from zensim.sparse.formats import Counted

# (program, chunks, log, ctx) -> None: writes the program's messages, work and statistics from counts
CountRule = Callable[[Any, Sequence[SparseChunk], "CountedLog", RunContext], None]


def countable(program: Any) -> bool:
    """Whether a composed program's log can follow from counts at all: two ranks or more, formats
    whose size is a function of the element count (not `switch`, whose work is the format each
    payload picks), an aggregation that neither needs values nor loses ids."""
    if program.n < 2 or not (program.push.size_from_count and program.pull.size_from_count):
        return False
    if "switch" in (program.push.name, program.pull.name):
        return False
    return not program.caps.needs_values and program.caps.lossless


def counted_log(program: Any, chunks: Sequence[SparseChunk], tables: Tables | None,
                rule: CountRule) -> tuple[MessageLog, RunContext]:
    """The log and run context (with its statistics) that `run_ranks(program, chunks)` makes for an
    indices-only run, written by `rule` from counts."""
    ctx = RunContext(Meter(program.n, program.num_stages), tables, False)
    log = CountedLog(program.n, program.num_stages)
    rule(program, chunks, log, ctx)
    built = log.build()
    return (built.fused() if program.caps.collective else built), ctx


def _sizers(program: Any, stage: int) -> list[Sizer]:
    """A Sizer per item (domain) in the program's format at `stage`."""
    return [Sizer(program.fmt(stage), d) for d in program.partition.domains()]


def _split(program: Any, chunks: Sequence[SparseChunk], log: CountedLog, ctx: RunContext, own: np.ndarray) -> None:
    """Parallelism's split: the `split` statistic and every rank's hash (or slice) of its ids."""
    ctx.stats["split"] = own.copy()
    log.work(0, 0, "hash" if program.partition.hashed else "slice", _nnz(chunks))


def _nnz(chunks: Sequence[SparseChunk]) -> np.ndarray:
    """Ids per rank."""
    return np.array([c.nnz for c in chunks], np.int64)


def ring_gather(program: Any, chunks: Sequence[SparseChunk], log: CountedLog, ctx: RunContext) -> None:
    """Ring, One-shot Centralization (the ring all-gather): `_ring_gather`."""
    _ring_gather(log, _nnz(chunks), _sizers(program, 0)[0])


def ring_windows(program: Any, chunks: Sequence[SparseChunk], log: CountedLog, ctx: RunContext) -> None:
    """Ring, Incremental Centralization (each rank merges a window of ranks): `_ring_windows`."""
    _ring_windows(log, _windows(chunks, program.numel), _sizers(program, 0)[0])


def p2p_gather(program: Any, chunks: Sequence[SparseChunk], log: CountedLog, ctx: RunContext) -> None:
    """Point-to-point, Incremental Centralization: `_p2p_gather`."""
    _p2p_gather(log, _nnz(chunks), _sizers(program, 0)[0])


def ring_reduce(program: Any, chunks: Sequence[SparseChunk], log: CountedLog, ctx: RunContext, *, bundles: bool) -> None:
    """Ring Parallelism (reduce-scatter, all-gather; One-shot `bundles`): `_ring_reduce`."""
    own, prefix = _items(program, chunks, program.partition.domains(), True)
    _split(program, chunks, log, ctx, own)
    ctx.stats["held"] = _ring_reduce(log, own, prefix, _sizers(program, 0), _sizers(program, program.step2_start),
                                     bundles=bundles)


def p2p_reduce(program: Any, chunks: Sequence[SparseChunk], log: CountedLog, ctx: RunContext) -> None:
    """Point-to-point Parallelism, Incremental (push to the owner, pull from it): `_p2p_reduce`."""
    own, prefix = _items(program, chunks, program.partition.domains(), False)
    _split(program, chunks, log, ctx, own)
    ctx.stats["held"] = _p2p_reduce(log, own, prefix, _sizers(program, 0), _sizers(program, program.step2_start))


def hier_central(program: Any, chunks: Sequence[SparseChunk], log: CountedLog, ctx: RunContext, *, bundles: bool) -> None:
    """Recursive doubling of the whole tensor, n a power of two: `_hier_central`."""
    _hier_central(log, _block_unions(chunks, program.partition.domains()), _sizers(program, 0)[0], bundles)


def hier_reduce(program: Any, chunks: Sequence[SparseChunk], log: CountedLog, ctx: RunContext, *, bundles: bool) -> None:
    """Recursive halving then doubling, n a power of two: `_hier_reduce`."""
    unions = _block_unions(chunks, program.partition.domains())
    _split(program, chunks, log, ctx, unions[0])
    ctx.stats["held"] = _hier_reduce(log, unions[0], unions, _sizers(program, 0),
                                     _sizers(program, program.step2_start), bundles)


class Sizer:
    """Exact wire bytes of counts of ids of `domain` in `fmt`. The count-sized formats' `size` is
    arithmetic in the count, so one call sizes a whole array of counts (a format whose formula does
    not take an array is asked count by count)."""

    def __init__(self, fmt, domain) -> None:  # type: ignore[no-untyped-def]
        self.name, self._fmt, self._domain = fmt.name, fmt, domain
        self.positions, self.hashed = domain.size, isinstance(domain, ExplicitDomain)

    def work(self, op: str, counts: np.ndarray, positions: np.ndarray | int) -> list:
        """The work records (zensim.schemes.workkinds.format_work) of encoding (`op` 'encode') or
        decoding payloads of this format holding `counts` elements over domains of `positions`."""
        return format_work(op, self._fmt, self.hashed, counts, positions)

    @property
    def dense(self) -> bool:
        """Whether merges of this (push) format are dense additions."""
        return self.name == "dense"

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        counts = np.asarray(counts, np.int64)
        try:
            got = np.asarray(self._fmt.size(Counted(counts), self._domain), np.int64)  # type: ignore[arg-type]
            return np.broadcast_to(got, counts.shape).copy()
        except (TypeError, ValueError):
            return np.array([self._fmt.size(Counted(int(k)), self._domain) for k in counts.ravel()],
                            np.int64).reshape(counts.shape)


def _item_of(domains, numel: int) -> np.ndarray:
    """The item (domain) of every id."""
    item_of = np.empty(numel, np.int32)
    for j, d in enumerate(domains):
        item_of[d.ids(np.arange(d.size))] = j
    return item_of


def _block_unions(chunks: Sequence[SparseChunk], domains) -> list[np.ndarray]:
    """[k][c, j]: the distinct ids of item j (domain j) that the ranks of aligned block c (ranks
    c 2^k .. c 2^k + 2^k - 1) hold, for k = 0 .. log2 n (n a power of two). Each rank's ids as a
    bitset with every item on whole words of its own; a block's bitset is the OR of its two halves,
    made as soon as both exist (at most log2 n held at a time), counted per item."""
    n, numel = len(chunks), sum(d.size for d in domains)
    words = np.array([(d.size + 63) // 64 for d in domains], np.int64)
    ends = np.cumsum(words)
    slot_of = np.empty(max(numel, 1), np.int64)  # id -> its bit
    for j, d in enumerate(domains):
        slot_of[d.ids(np.arange(d.size))] = 64 * (ends[j] - words[j]) + np.arange(d.size)
    starts, ends = np.concatenate(([0], ends[:-1])), ends
    out = [np.zeros((n >> k, len(domains)), np.int64) for k in range(n.bit_length())]

    def count(bitset: np.ndarray) -> np.ndarray:
        ones = np.concatenate(([0], np.cumsum(np.bitwise_count(bitset), dtype=np.int64)))
        return ones[ends] - ones[starts]

    held: list[tuple[int, np.ndarray]] = []  # (level, bitset) of the blocks waiting for their sibling
    for r, c in enumerate(chunks):
        flags = np.zeros(64 * int(ends[-1]), np.bool_)
        flags[slot_of[c.indices]] = True
        bitset = np.packbits(flags, bitorder="little").view(np.uint64)
        k = 0
        out[0][r] = count(bitset)
        while held and held[-1][0] == k:
            bitset = held.pop()[1] | bitset
            k += 1
            out[k][r >> k] = count(bitset)
        held.append((k, bitset))
    return out


def _bundled(sizes: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """Message bytes of pieces of `sizes` bytes in all: a uint32 length per piece where there are
    several (zensim.schemes.wire.pack)."""
    return sizes + np.where(parts > 1, wire.BUNDLE_HEADER * parts, 0)


def _hier_central(log: CountedLog, unions: list[np.ndarray], size: Sizer, bundles: bool) -> None:
    """Recursive doubling of the whole tensor: at stage k rank a sends partner a ^ 2^k what it holds
    of its block of 2^k ranks (merged, or with `bundles` each rank's piece side by side); after the
    last stage every rank merges."""
    n = len(unions[0])
    ranks = np.arange(n)
    own = unions[0][:, 0]
    for k in range(n.bit_length() - 1):
        block = ranks >> k
        if bundles:
            carried = np.add.reduceat(own, np.arange(0, n, 1 << k))[block]
            nbytes = _bundled(np.add.reduceat(size(own), np.arange(0, n, 1 << k))[block], np.full(n, 1 << k))
        else:
            carried = unions[k][block, 0]
            nbytes = size(carried)
        log.messages(k, ranks, ranks ^ (1 << k), nbytes, size.name)
        if k and not bundles:  # the partner's half of the block last received, and its own half
            log.merge(k, 0, size, unions[k - 1][(ranks >> (k - 1)) ^ 1, 0] + unions[k - 1][ranks >> (k - 1), 0], 2)
        parts = (1 << k) if bundles else 1
        log.io(k, 0, "encode", size, carried, parts * size.positions)
        log.io(k, 1, "decode", size, carried[ranks ^ (1 << k)], parts * size.positions)
    last = n.bit_length() - 2
    if bundles:
        log.merge(last, 1, size, np.full(n, own.sum()), n)
    else:
        log.merge(last, 1, size, unions[last][(ranks >> last) ^ 1, 0] + unions[last][ranks >> last, 0], 2)


def _hier_reduce(log: CountedLog, own: np.ndarray, unions: list[np.ndarray], push: list[Sizer], pull: list[Sizer],
                 bundles: bool) -> np.ndarray:
    """Recursive halving (stage k: a sends partner b = a ^ 2^k every item j with j = b on the low
    k+1 bits, what its block of 2^k ranks holds of it: merged from the pieces got at the stages
    before and its own, or with `bundles` those pieces side by side; item j completes at rank j),
    then recursive doubling of the aggregated items; the aggregated items' sizes."""
    n = len(own)
    levels = n.bit_length() - 1
    ranks, items = np.arange(n), np.arange(n)
    domain_sizes = np.array([p.positions for p in push], np.int64)
    held = unions[levels][0].copy()
    pieces = np.stack([push[j](own[:, j]) for j in range(n)], axis=1)  # [o, j]: rank o's piece of item j
    gathered = own.copy()  # [a, j]: what a would merge of item j at the next stage it sends it
    for k in range(levels):
        low = (1 << (k + 1)) - 1
        sends = (items[None, :] & low) == ((ranks[:, None] ^ (1 << k)) & low)  # [a, j]
        starts = np.arange(0, n, 1 << k)
        if bundles:
            carried = np.add.reduceat(own, starts, axis=0)[ranks >> k]
            part_bytes = np.add.reduceat(pieces, starts, axis=0)[ranks >> k]
            count = sends.sum(axis=1) << k
        else:
            carried = unions[k][ranks >> k]
            part_bytes = np.stack([push[j](carried[:, j]) for j in range(n)], axis=1)
            count = sends.sum(axis=1)
        nbytes = _bundled((part_bytes * sends).sum(axis=1), count)
        log.messages(k, ranks, ranks ^ (1 << k), nbytes, push[0].name)
        sizes = (domain_sizes[None, :] * sends).sum(axis=1)  # positions of the items a rank sends
        if k and not bundles:  # each item sent: its own piece and the k pieces got before
            log.merge(k, 0, push[0], (gathered * sends).sum(axis=1), k + 1, sizes)
        encoded = (carried * sends).sum(axis=1)
        parts = 1 << k if bundles else 1
        log.io(k, 0, "encode", push[0], encoded, parts * sizes)
        log.io(k, 1, "decode", push[0], encoded[ranks ^ (1 << k)], parts * sizes[ranks ^ (1 << k)])
        gathered += unions[k][(ranks >> k) ^ 1]  # the partner's block, got at this stage
    final = np.full(n, 0, np.int64)
    final[:] = own.sum(axis=0) if bundles else gathered[ranks, ranks]
    log.merge(levels - 1, 1, push[0], final, n if bundles else levels + 1, domain_sizes)
    pull_bytes = np.concatenate([pull[j](held[j:j + 1]) for j in range(n)])
    for t, k in enumerate(reversed(range(levels))):
        low = (1 << (k + 1)) - 1
        sends = (items[None, :] & low) == (ranks[:, None] & low)
        count = sends.sum(axis=1)
        log.messages(levels + t, ranks, ranks ^ (1 << k), _bundled((pull_bytes * sends).sum(axis=1), count),
                     pull[0].name)
        encoded = (held * sends).sum(axis=1)
        sizes = (domain_sizes[None, :] * sends).sum(axis=1)
        log.io(levels + t, 0, "encode", pull[0], encoded, sizes)
        log.io(levels + t, 1, "decode", pull[0], encoded[ranks ^ (1 << k)], sizes[ranks ^ (1 << k)])
    return held


def _items(program, chunks: Sequence[SparseChunk], domains, ring: bool) -> tuple[np.ndarray, np.ndarray]:
    """own[r, j] (ids of rank r in item j) and prefix[j, k], the distinct ids of item j that the
    first k+1 ranks of its reduce order hold (ring: j+1, j+2, ...; point-to-point: every rank at
    k = 0, so only prefix[j, n-1], the aggregate, is meant)."""
    n, numel = program.n, program.numel
    item_of = _item_of(domains, numel)
    own = np.zeros((n, n), np.int64)
    first = np.full(numel, n, np.int32)  # position of each id's first holder in its item's order
    for r, c in enumerate(chunks):
        items = item_of[c.indices]
        own[r] = np.bincount(items, minlength=n)
        if ring:
            pos = (r - 1 - items) % n
            np.minimum(first[c.indices], pos, out=pos)
            first[c.indices] = pos
        else:
            first[c.indices] = 0
    present = first < n
    counts = np.bincount(item_of[present].astype(np.int64) * n + first[present], minlength=n * n)
    return own, np.cumsum(counts.reshape(n, n), axis=1)


class CountedLog:
    """Messages and work in the driver's order. Work comes a step kind at a time for every rank
    (`work(stage, phase, kind, elements per rank)`); `build` drops zero counts and orders it as the
    meter records it: per stage all pre steps in rank order, then all post steps, the kinds of one
    step in the order they were counted."""

    def __init__(self, n: int, num_stages: int) -> None:
        self.n, self.num_stages = n, num_stages
        self.cols: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]] = []
        self.wcols: list[tuple[int, int, str, np.ndarray]] = []

    def messages(self, stage: int, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, fmt: str) -> None:
        """A stage's messages, in the order the driver makes them."""
        self.cols.append((stage, src, dst, nbytes, fmt))

    def work(self, stage: int, phase: int, kind: str, elements: np.ndarray) -> None:
        """Every rank's `kind` work at (stage, phase): elements[r] for rank r."""
        self.wcols.append((stage, phase, kind, np.broadcast_to(np.asarray(elements, np.int64), (self.n,))))

    def io(self, stage: int, phase: int, op: str, size: Sizer, counts: np.ndarray, positions: np.ndarray | int) -> None:
        """Every rank's encoding (`op` 'encode') or decoding of payloads in `size`'s format: counts[r]
        elements over domains of positions[r] in all."""
        for kind, value in size.work(op, counts, positions):
            self.work(stage, phase, kind, value)

    def merge(self, stage: int, phase: int, size: Sizer, total: np.ndarray, pieces: int,
              positions: np.ndarray | int | None = None) -> None:
        """Every rank's merge of `pieces` pieces of total[r] elements in all, of `size`'s (push) format
        (positions[r]: the domain positions of the items merged; default the format's domain)."""
        where = size.positions if positions is None else positions
        for kind, value in merge_work(size.dense, where, total, pieces):
            self.work(stage, phase, kind, value)

    def build(self) -> MessageLog:
        """The columnar log (its columns in MessageLog's compact dtypes, each made once, without the
        int64 rows and sort of every record: the driver's peak at 4096 ranks); empties this one."""
        fmts = list(dict.fromkeys(c[4] for c in self.cols))
        stage = np.concatenate([np.full(len(c[1]), c[0], IDS) for c in self.cols] + [np.zeros(0, IDS)])
        src, dst = (np.concatenate([c[i] for c in self.cols] + [np.zeros(0, IDS)], dtype=IDS) for i in (1, 2))
        nbytes = np.concatenate([c[3] for c in self.cols] + [np.zeros(0, np.int64)], dtype=np.int64)
        fmt = np.concatenate([np.full(len(c[1]), fmts.index(c[4]), np.int16) for c in self.cols] + [np.zeros(0, np.int16)])
        self.cols = []
        # the meter's order: by stage, phase, rank, then the order counted; every step kind covers every
        # rank, so each (stage, phase) is a (kinds x ranks) block read rank by rank, written into columns
        # sized first (each block dropped once written)
        kinds = list(dict.fromkeys(w[2] for w in self.wcols))
        steps: dict[tuple[int, int], list[tuple[int, np.ndarray]]] = {}
        for st, phase, kind, elements in self.wcols:
            steps.setdefault((st, phase), []).append((kinds.index(kind), elements))
        self.wcols = []
        keys = sorted(steps)
        sizes = [sum(np.count_nonzero(e) for _, e in steps[key]) for key in keys]
        wstage = np.repeat(np.array([key[0] for key in keys], IDS), sizes)
        wphase = np.repeat(np.array([key[1] for key in keys], np.int8), sizes)
        total = sum(sizes)
        rank, elements, kind = np.empty(total, IDS), np.empty(total, np.int64), np.empty(total, np.int16)
        n, at = self.n, 0
        for key, size in zip(keys, sizes):
            block = steps.pop(key)
            values = np.stack([e for _, e in block], axis=1).ravel()  # [rank, step]
            keep = values != 0
            rank[at:at + size] = np.repeat(np.arange(n, dtype=IDS), len(block))[keep]
            elements[at:at + size] = values[keep]
            kind[at:at + size] = np.tile(np.array([k for k, _ in block], np.int16), n)[keep]
            at += size
        # kind codes in first-seen order, as the meter's
        first = {k: int(np.argmax(kind == k)) for k in range(len(kinds)) if (kind == k).any()}
        used = sorted(first, key=first.get)
        recode = np.zeros(len(kinds), np.int16)
        recode[used] = np.arange(len(used))
        return MessageLog.from_columns(self.n, self.num_stages, (stage, src, dst, nbytes), fmt, fmts,
                                       (wstage, rank, wphase, elements), recode[kind], tuple(kinds[k] for k in used))


def _ring_gather(log: CountedLog, nnz: np.ndarray, size: Sizer) -> None:
    """One-shot ring all-gather of every rank's tensor: at stage s rank r forwards tensor r-s to r+1;
    the last receive merges all n."""
    n = len(nnz)
    ranks = np.arange(n)
    sizes = size(nnz)
    for s in range(n - 1):
        log.messages(s, ranks, (ranks + 1) % n, sizes[(ranks - s) % n], size.name)
        log.io(s, 0, "encode", size, nnz[(ranks - s) % n], size.positions)
        log.io(s, 1, "decode", size, nnz[(ranks - 1 - s) % n], size.positions)
    log.merge(n - 2, 1, size, nnz.sum(), n)


def _windows(chunks: Sequence[SparseChunk], numel: int) -> np.ndarray:
    """held[r, s]: the distinct ids that ranks r-s, ..., r (mod n) hold together. From the gaps
    between successive holders of each id: an id whose holder h is followed (ring order) by its next
    holder g ranks later is counted at ranks h, ..., h+g-1 in windows reaching back to h, so
    held[r, s] = #(holder h, gap g) with h = r-d, d <= s, g > d."""
    n = len(chunks)
    last, first = np.full(numel, -1, np.int64), np.full(numel, -1, np.int64)
    gaps = np.zeros(n * (n + 1), np.int64)  # [h, g]: holders h whose next holder is g ranks on
    for r, c in enumerate(chunks):
        prev = last[c.indices]
        seen = prev >= 0
        gaps += np.bincount(prev[seen] * (n + 1) + (r - prev[seen]), minlength=n * (n + 1))
        first[c.indices[~seen]] = r
        last[c.indices] = r
    held = first >= 0
    gaps += np.bincount(last[held] * (n + 1) + first[held] + n - last[held], minlength=n * (n + 1))
    longer = np.cumsum(gaps.reshape(n, n + 1)[:, ::-1], axis=1)[:, ::-1][:, 1:]  # [h, d]: gaps g > d
    ranks = np.arange(n)
    return np.cumsum(longer[(ranks[:, None] - ranks[None, :]) % n, ranks[None, :]], axis=1)


def _ring_windows(log: CountedLog, held: np.ndarray, size: Sizer) -> None:
    """Ring under Incremental Centralization: at stage s rank r merges the window it got (ranks
    r-s..r-1) with its own tensor and sends the window r-s..r to r+1; the last receive completes."""
    n = len(held)
    ranks = np.arange(n)
    sizes = size(held)
    own, got = held[:, 0], held[(ranks - 1) % n]
    for s in range(n - 1):
        log.messages(s, ranks, (ranks + 1) % n, sizes[:, s], size.name)
        if s:
            log.merge(s, 0, size, got[:, s - 1] + own, 2)
        log.io(s, 0, "encode", size, held[:, s], size.positions)
        log.io(s, 1, "decode", size, got[:, s], size.positions)
    log.merge(n - 2, 1, size, got[:, n - 2] + own, 2)


def _p2p_gather(log: CountedLog, nnz: np.ndarray, size: Sizer) -> None:
    """Every rank sends its tensor to every other; each merges all n."""
    n = len(nnz)
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    log.messages(0, src[keep], dst[keep], size(nnz)[src[keep]], size.name)
    total = nnz.sum()
    log.io(0, 0, "encode", size, (n - 1) * nnz, (n - 1) * size.positions)
    log.io(0, 1, "decode", size, total - nnz, (n - 1) * size.positions)
    log.merge(0, 1, size, total, n)


def _ring_reduce(log: CountedLog, own: np.ndarray, prefix: np.ndarray, push: list[Sizer], pull: list[Sizer],
                 bundles: bool = False) -> np.ndarray:
    """Ring reduce-scatter (stage s: r merges what it got with its own part of item r-1-s and sends
    it on, or with `bundles` (One-shot) sends the pieces it got and its own side by side, a uint32
    length per piece; item r completes at rank r), then ring all-gather (stage s: r forwards item
    r-s); the aggregated items' sizes."""
    n = len(own)
    ranks = np.arange(n)
    domain_sizes = np.array([p.positions for p in push], np.int64)
    held = prefix[:, n - 1].copy()
    if bundles:  # item j's pieces in ring order j+1, j+2, ...: what stage s carries is their first s+1
        along = own[(ranks[:, None] + 1 + ranks[None, :]) % n, ranks[:, None]]  # [j, k]: own[j+1+k, j]
        carried = np.cumsum(along, axis=1)
        parts = np.stack([push[j](along[j]) for j in range(n)])
        push_bytes = np.cumsum(parts, axis=1) + np.where(ranks > 0, wire.BUNDLE_HEADER * (ranks + 1), 0)
    else:
        carried = prefix
        push_bytes = np.stack([push[j](prefix[j]) for j in range(n)])
    for s in range(n - 1):
        item, got = (ranks - 1 - s) % n, (ranks - 2 - s) % n
        log.messages(s, ranks, (ranks + 1) % n, push_bytes[item, s], push[0].name)
        if s and not bundles:
            log.merge(s, 0, push[0], prefix[item, s - 1] + own[ranks, item], 2, domain_sizes[item])
        parts = s + 1 if bundles else 1
        log.io(s, 0, "encode", push[0], carried[item, s], parts * domain_sizes[item])
        log.io(s, 1, "decode", push[0], carried[got, s], parts * domain_sizes[got])
    log.merge(n - 2, 1, push[0], carried[ranks, n - 2] + own[ranks, ranks], n if bundles else 2, domain_sizes)
    pull_bytes = np.concatenate([pull[j](held[j:j + 1]) for j in range(n)])
    for t in range(n - 1):
        s = n - 1 + t
        log.messages(s, ranks, (ranks + 1) % n, pull_bytes[(ranks - t) % n], pull[0].name)
        log.io(s, 0, "encode", pull[0], held[(ranks - t) % n], domain_sizes[(ranks - t) % n])
        log.io(s, 1, "decode", pull[0], held[(ranks - 1 - t) % n], domain_sizes[(ranks - 1 - t) % n])
    return held


def _p2p_reduce(log: CountedLog, own: np.ndarray, prefix: np.ndarray, push: list[Sizer], pull: list[Sizer]) -> np.ndarray:
    """Push: rank r sends its part j to rank j, which merges all n; pull: rank j sends the aggregated
    item j to every other rank (each merges what it receives); the aggregated items' sizes."""
    n = len(own)
    held = prefix[:, n - 1].copy()
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    push_bytes = np.stack([push[j](own[:, j]) for j in range(n)], axis=1)
    log.messages(0, src, dst, push_bytes[src, dst], push[0].name)
    sizes = np.array([p.positions for p in push], np.int64)
    others = sizes.sum() - sizes  # positions of the items of every other rank
    log.io(0, 0, "encode", push[0], own.sum(axis=1) - own.diagonal(), others)
    log.io(0, 1, "decode", push[0], own.sum(axis=0) - own.diagonal(), (n - 1) * sizes)
    log.merge(0, 1, push[0], own.sum(axis=0), n, sizes)
    pull_bytes = np.concatenate([pull[j](held[j:j + 1]) for j in range(n)])
    log.messages(1, src, dst, pull_bytes[src], pull[0].name)
    log.io(1, 0, "encode", pull[0], (n - 1) * held, (n - 1) * sizes)
    log.io(1, 1, "decode", pull[0], held.sum() - held, others)
    return held
