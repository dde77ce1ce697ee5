"""Pieces on the wire: encode through the sparse formats, bundle several pieces, decode back.

A message carries one piece (an `Encoded` of zensim.sparse) or, under One-shot aggregation and
in all-gathers, several pieces concatenated: a `Bundle`, laid out as one little-endian uint32
byte length per part followed by the parts (the receiver knows how many parts and their domains
from the stage program, not their lengths). Byte counts always come from the format: `size` for a
chunk, `bitset_size` for a bitset piece (indices only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from zensim.run.context import RunContext
from zensim.sparse import xp as backend
from zensim.schemes.pieces import BitPiece, ChunkPiece, DensePiece, Piece, make_piece
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import Domain
from zensim.sparse.formats import Dense, Encoded, Format
from zensim.sparse.formats.dense import DenseEncoded

BUNDLE_HEADER = 4  # bytes per part: uint32 length


@dataclass(frozen=True)
class BitEncoded:
    """A bitset piece in a wire format: exact `nbytes` from the format, bytes made on demand."""

    fmt: Format
    nbytes: int
    piece: BitPiece

    @property
    def domain(self) -> Domain:
        """The piece's domain."""
        return self.piece.domain

    @property
    def chunk(self) -> SparseChunk:
        """The piece as an indices-only chunk (materialized)."""
        return self.piece.to_chunk()

    def to_buffer(self) -> np.ndarray:
        """The exact wire bytes (values written as 1.0, as the format does in indices-only mode), uint8."""
        return self.fmt.encode(self.chunk, self.domain).to_buffer()

    def to_bytes(self) -> bytes:
        """The exact wire bytes."""
        return self.to_buffer().tobytes()


Payload = Encoded | BitEncoded | DenseEncoded


@dataclass(frozen=True)
class Bundle:
    """Several payloads in one message: a uint32 length per part, then the parts; `nbytes` is
    the header plus every part's exact bytes."""

    parts: tuple[Payload, ...]
    nbytes: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nbytes", BUNDLE_HEADER * len(self.parts) + sum(p.nbytes for p in self.parts))

    @property
    def fmt(self) -> Format:
        """The format of the first part (all parts of a message share one format)."""
        return self.parts[0].fmt

    def to_buffer(self) -> backend.Array:
        """The exact wire bytes, lengths then parts, as a uint8 array of the parts' library and device."""
        bufs = [p.to_buffer() for p in self.parts]
        header = backend.as_bytes_of(np.array([b.shape[0] for b in bufs], "<u4"))
        return backend.concat_bytes([backend.like(header, bufs[0]), *bufs], bufs[0])

    def to_bytes(self) -> bytes:
        """The exact wire bytes, on the host."""
        return backend.host(self.to_buffer()).tobytes()


Message = Payload | Bundle


def encode(piece: Piece, fmt: Format, ctx: RunContext) -> Payload:
    """`piece` in format `fmt`, sized exactly by the format; values the wire dtype flushes to zero
    are counted in `ctx.flushed`. A dense piece in the dense format stays dense."""
    if isinstance(piece, DensePiece):
        if isinstance(fmt, Dense):
            payload, flushed = fmt.encode_dense(piece.values, piece.domain)
            ctx.flushed += flushed
            return payload
        piece = ChunkPiece(piece.domain, piece.to_chunk())
    if isinstance(piece, ChunkPiece):
        chunk, flushed = fmt.received(piece.chunk)
        ctx.flushed += flushed
        return Encoded(fmt, fmt.size(chunk, piece.domain), chunk, piece.domain)
    return BitEncoded(fmt, fmt.bitset_size(piece.words, piece.nnz, piece.domain, piece.memo), piece)


def pack(payloads: Sequence[Payload]) -> Message:
    """One message from the payloads: the payload itself when alone, else a bundle."""
    return payloads[0] if len(payloads) == 1 else Bundle(tuple(payloads))


def unpack(message: Message) -> tuple[Payload, ...]:
    """The payloads of a message."""
    return message.parts if isinstance(message, Bundle) else (message,)


def to_piece(payload: Payload, bits: bool) -> Piece:
    """The piece a receiver holds after decoding `payload` (a bitset when `bits`); a dense payload
    with values gives a dense piece, whichever transport carried it (objects or bytes)."""
    if isinstance(payload, BitEncoded):
        return payload.piece
    if bits:
        return make_piece(payload.chunk, payload.domain, True)
    if isinstance(payload, DenseEncoded):
        return DensePiece(payload.domain, payload.values)
    piece = ChunkPiece(payload.domain, payload.chunk)
    return DensePiece.of(piece) if isinstance(payload.fmt, Dense) else piece


def received(piece: Piece, fmt: Format, ctx: RunContext) -> Piece:
    """`piece` as `fmt` would deliver it (values rounded to the wire dtype, flushed ones counted in
    `ctx.flushed`, zeros dropped where the format has no ids), without sizing or serializing it."""
    if isinstance(piece, DensePiece) and isinstance(fmt, Dense):
        return as_sent(piece, encode(piece, fmt, ctx))  # dense values: a rounding at most
    if isinstance(piece, BitPiece):
        return piece
    chunk = piece.chunk if isinstance(piece, ChunkPiece) else piece.to_chunk()
    out, flushed = fmt.received(chunk)
    ctx.flushed += flushed
    return piece if out is chunk else ChunkPiece(piece.domain, out)


def as_sent(piece: Piece, payload: Payload) -> Piece:
    """The piece a sender holds after sending `payload` of `piece`: the piece itself when the payload
    carries exactly its values, else what the receivers hold (rounded, zeros dropped)."""
    if isinstance(piece, BitPiece):
        return piece
    if isinstance(piece, ChunkPiece) and isinstance(payload, Encoded) and payload.chunk is piece.chunk:
        return piece
    if isinstance(piece, DensePiece) and isinstance(payload, DenseEncoded) and payload.values is piece.values:
        return piece
    return to_piece(payload, False)


def from_bytes(buf: bytes | backend.Array, layout: Sequence[tuple[Format, Domain]], with_values: bool,
               like: backend.Array | None = None) -> Message:
    """Decode a message (bytes-like, or a uint8 array of any library, decoded on its device) whose
    parts have the given (format, domain) layout (ValueError if malformed), into the array library
    and device of `like` when given. A bundle's header (4 bytes a part) is read on the host."""
    if len(layout) == 1:
        fmt, domain = layout[0]
        return fmt.from_bytes(buf, domain, with_values=with_values, like=like)
    buf = backend.as_buffer(buf)
    head = BUNDLE_HEADER * len(layout)
    if buf.shape[0] < head:
        raise ValueError(f"bundle of {len(layout)} parts: {buf.shape[0]} bytes, shorter than its header")
    lengths = backend.host(buf[:head]).view("<u4").astype(np.int64)
    if head + int(lengths.sum()) != buf.shape[0]:
        raise ValueError(f"bundle: header says {head + int(lengths.sum())} bytes, got {buf.shape[0]}")
    ends = head + np.cumsum(lengths)
    starts = ends - lengths
    return Bundle(tuple(fmt.from_bytes(buf[int(a):int(b)], domain, with_values=with_values, like=like)
                        for (fmt, domain), a, b in zip(layout, starts, ends)))
