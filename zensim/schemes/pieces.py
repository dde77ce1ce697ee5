"""Pieces: immutable sparse sets over a domain, the unit a stage program holds, merges and sends.

Three representations with the same operations:

- `ChunkPiece` wraps a `SparseChunk` (global ids, values or None): exact values, used whenever
  values are carried (checks, value-dependent schemes, the emulator);
- `DensePiece` holds a value for every position of its domain (0.0 where absent): what a rank
  holds, with values, once it has received a dense payload; a sum of two is one array addition
  (the dense ring all-reduce: no ids to sort, merge or search);
- `BitPiece` is a packed bitset (numpy uint64 words, bit p = domain position p): indices-only
  mode at scale, where a union is one `np.bitwise_or` and a count one `np.bitwise_count`.

Every piece has a process-unique `serial`. Pieces never change, so a union of the same pieces
is the same set: `union` memoizes on the serials of its inputs in the run's context (a small LRU
shared by all ranks of an in-memory run), which makes the identical final unions of 128 ranks cost
one. This is exact caching, not estimation. Sums of values are taken in the order the caller gives
(programs give a canonical order, so every rank sums alike).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from zensim.errors import ValueRangeError
from zensim.run.context import RunContext
from zensim.sparse.bits import bit_positions, pack_positions
from zensim.sparse.chunk import SparseChunk, sum_chunks
from zensim.sparse import xp as backend
from zensim.sparse.domain import Domain
from zensim.sparse.formats.dense import dense_to_chunk

_serials = itertools.count()


class ChunkPiece:
    """A piece held as a `SparseChunk` of global ids (with values or indices-only)."""

    __slots__ = ("domain", "chunk", "serial")

    def __init__(self, domain: Domain, chunk: SparseChunk) -> None:
        self.domain, self.chunk, self.serial = domain, chunk, next(_serials)

    @property
    def nnz(self) -> int:
        """Number of elements."""
        return self.chunk.nnz

    def to_chunk(self, ctx: RunContext | None = None) -> SparseChunk:
        """The piece as a chunk of global ids."""
        return self.chunk


class BitPiece:
    """A piece held as a packed bitset over its domain's positions (indices only)."""

    __slots__ = ("domain", "words", "nnz", "serial", "memo")

    def __init__(self, domain: Domain, words: np.ndarray, nnz: int | None = None) -> None:
        self.domain, self.words, self.serial = domain, words, next(_serials)
        self.nnz = popcount(words) if nnz is None else int(nnz)
        self.memo: dict = {}  # what formats derive from the bitset (e.g. its occupied blocks)

    def positions(self) -> np.ndarray:
        """Sorted positions (int64) of the set bits."""
        return bit_positions(self.words)

    def to_chunk(self, ctx: RunContext | None = None) -> SparseChunk:
        """The piece as an indices-only chunk of global ids. With a context, equal sets over the same
        domain give one chunk object (the last two made are kept): the n ranks that end with the
        same aggregate hold one chunk, not n."""
        if ctx is None:
            return SparseChunk(self.domain.ids(self.positions()), None)
        made: list = ctx.remember(("chunks", id(self.domain), self.nnz), list)
        for words, chunk in made:
            if words is self.words or np.array_equal(words, self.words):
                return chunk
        chunk = SparseChunk(self.domain.ids(self.positions()), None)
        made[:] = [(self.words, chunk)] + made[:1]
        return chunk


class DensePiece:
    """A piece held as float32 values of every position of its domain, 0.0 where absent (values
    only). A sum with another piece adds into a copy: the float32 sum of two values is correctly
    rounded, as the float64 sum of the sparse path rounded to float32 is, so both give the same bits."""

    __slots__ = ("domain", "values", "serial", "_nnz")

    def __init__(self, domain: Domain, values: np.ndarray) -> None:
        self.domain, self.values, self.serial = domain, values, next(_serials)
        self._nnz: int | None = None

    @property
    def nnz(self) -> int:
        """Number of non-zero positions (counted on first use: a pass over every position)."""
        if self._nnz is None:
            self._nnz = int(backend.namespace(self.values).count_nonzero(self.values))
        return self._nnz

    @classmethod
    def of(cls, piece: ChunkPiece) -> "DensePiece":
        """A chunk piece laid out densely over its domain (explicit zeros become absent)."""
        ids = piece.chunk.indices
        xp = backend.namespace(ids)
        values = xp.zeros(piece.domain.size, dtype=xp.float32, device=backend.device(ids))
        values[piece.domain.positions(ids)] = piece.chunk.values
        return cls(piece.domain, values)

    def to_chunk(self, ctx: RunContext | None = None) -> SparseChunk:
        """The non-zero positions as a chunk of global ids."""
        return dense_to_chunk(self.values, self.domain)


Piece = ChunkPiece | BitPiece | DensePiece


def popcount(words: np.ndarray) -> int:
    """Number of set bits."""
    return int(np.bitwise_count(words).sum(dtype=np.uint64))


def make_piece(chunk: SparseChunk, domain: Domain, bits: bool) -> Piece:
    """A piece of `chunk` (all ids inside `domain`): a bitset when `bits`, else the chunk itself."""
    if not bits:
        return ChunkPiece(domain, chunk)
    return make_bit_pieces([chunk], [domain])[0]


def make_bit_pieces(parts: Sequence[SparseChunk], domains: Sequence[Domain],
                    position_of: np.ndarray | None = None) -> list[BitPiece]:
    """Bitset pieces of `parts` (part j inside domain j), packed in one pass into one buffer.
    `position_of[id]`, if given, is each id's position in its domain (a lookup, not a search)."""
    sizes = np.array([(d.size + 63) // 64 for d in domains], np.int64)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    if position_of is not None:
        pos = [position_of[p.indices].astype(np.int64) for p in parts]
    else:
        pos = [d.positions(p.indices) for p, d in zip(parts, domains)]
    counts = [len(x) for x in pos]
    positions = np.concatenate(pos) if pos else np.empty(0, np.int64)
    base = np.repeat(offsets[:-1] * 64, counts)
    words = pack_positions(positions + base, int(offsets[-1]) * 64)
    return [BitPiece(d, words[offsets[j]:offsets[j + 1]], counts[j]) for j, d in enumerate(domains)]


def union(pieces: Sequence[Piece], ctx: RunContext) -> Piece:
    """The aggregate of `pieces` over one domain: union of ids, sum of values in the given order
    (memoized in the run's context, exact). A sum that overflows float32 is a ValueRangeError."""
    if len(pieces) == 1:
        return pieces[0]
    return ctx.remember(frozenset(p.serial for p in pieces), lambda: _union(pieces))


def _union(pieces: Sequence[Piece]) -> Piece:
    """union's body."""
    first = pieces[0]
    if isinstance(first, BitPiece):
        words = np.bitwise_or(first.words, pieces[1].words)
        for p in pieces[2:]:
            np.bitwise_or(words, p.words, out=words)
        return BitPiece(first.domain, words)
    if len(pieces) == 2 and any(isinstance(p, DensePiece) for p in pieces):
        return _dense_sum(pieces[0], pieces[1])
    with np.errstate(over="ignore"):  # an overflow is reported below, as a user error
        out = sum_chunks([p.to_chunk() for p in pieces])
    if out.values is not None:
        bad = _first_nonfinite(out.values)
        if bad is not None and all(_first_nonfinite(p.to_chunk().values) is None
                                   for p in pieces if not isinstance(p, BitPiece)):
            _overflow(int(out.indices[bad]))
    return ChunkPiece(first.domain, out)


def _first_nonfinite(values: backend.Array) -> int | None:
    """The position of the first NaN or infinity in `values`, None if all are finite."""
    xp = backend.namespace(values)
    finite = xp.isfinite(values)
    if bool(xp.all(finite)):
        return None
    return int(backend.flatnonzero(~finite)[0])


def _overflow(element: int) -> None:
    raise ValueRangeError(f"a sum of values overflows float32 at element {element} "
                          "(gradients of this magnitude cannot be aggregated in float32)")


def _dense_sum(a: Piece, b: Piece) -> DensePiece:
    """a + b as a dense piece (at least one of them dense), in float32 (see DensePiece)."""
    first, second = (a, b) if isinstance(a, DensePiece) else (b, a)
    xp = backend.namespace(first.values)
    out = xp.astype(first.values, xp.float32, copy=True)  # writable (received values may be a read-only view)
    with np.errstate(over="ignore"):  # an overflow is reported below, as a user error
        if isinstance(second, DensePiece):
            out += second.values
        else:
            pos = first.domain.positions(second.chunk.indices)
            out[pos] += second.chunk.values
    bad = _first_nonfinite(out)
    if bad is not None:
        theirs = second.values if isinstance(second, DensePiece) else second.chunk.values
        if _first_nonfinite(first.values) is None and _first_nonfinite(theirs) is None:
            _overflow(int(first.domain.ids(np.array([bad]))[0]))
    return DensePiece(first.domain, out)


def assemble(pieces: Sequence[Piece], ctx: RunContext) -> SparseChunk:
    """One chunk of global ids from pieces over disjoint domains (the n aggregated partitions),
    memoized in the run's context (n ranks holding the same pieces get one chunk)."""
    if len(pieces) == 1:
        return pieces[0].to_chunk(ctx)
    return ctx.remember(("assembled", frozenset(p.serial for p in pieces)), lambda: _assemble(pieces))


def _assemble(pieces: Sequence[Piece]) -> SparseChunk:
    """assemble's body."""
    if all(isinstance(p, BitPiece) for p in pieces):
        present = np.zeros(max(p.domain.bound for p in pieces), np.bool_)
        for p in pieces:
            present[p.domain.ids(p.positions())] = True
        return SparseChunk(np.flatnonzero(present), None)
    chunks = [p.to_chunk() for p in pieces]
    xp = backend.namespace(*[c.indices for c in chunks])
    ids = xp.concat([c.indices for c in chunks])
    values = None
    if all(c.values is not None for c in chunks):
        values = xp.concat([c.values for c in chunks])
    if ids.shape[0] > 1 and not bool(xp.all(ids[1:] > ids[:-1])):  # domains out of order (hashed partitions)
        order = backend.argsort(ids)
        ids, values = ids[order], values[order] if values is not None else None
    return SparseChunk(ids, values)
