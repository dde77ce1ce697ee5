"""Index codecs of the trace format: LEB128 varint deltas and a bitmap, both numpy-vectorized.

A dense chunk (DENSE) stores no index bytes at all: its indices are every element of the tensor.
Encoders take a validated sorted unique int64 array; decoders take raw bytes and raise
`CodecError` (a plain message, turned into a `TraceError` naming the file by the caller) on any
malformed input, and return the decoded indices without checking order (the caller checks order,
range and count so that every error names the chunk).
"""

from __future__ import annotations

import numpy as np

from zensim.sparse.bits import bitmap_bytes

VARINT = 0  # first index, then successive differences, each LEB128 (7 bits a byte, low first)
BITMAP = 1  # one bit per element of the tensor, LSB first within a byte (np.packbits 'little')
DENSE = 2  # every element, no index bytes: a dense gradient (values only)
ENCODINGS = (VARINT, BITMAP, DENSE)

_MAX_VARINT_BYTES = 10  # a uint64 needs at most ceil(64 / 7) bytes


class CodecError(ValueError):
    """Malformed encoded index bytes."""


def varint_sizes(values: np.ndarray) -> np.ndarray:
    """Number of LEB128 bytes each uint64 in `values` takes (1..10)."""
    sizes = np.ones(len(values), np.int64)
    for k in range(1, _MAX_VARINT_BYTES):
        sizes += values >= np.uint64(1 << (7 * k))
    return sizes


def varint_encode(values: np.ndarray) -> bytes:
    """LEB128-encode a uint64 array, vectorized over values (one pass per byte position)."""
    values = np.asarray(values, np.uint64)
    sizes = varint_sizes(values)
    starts = np.cumsum(sizes) - sizes
    out = np.empty(int(sizes.sum()), np.uint8)
    for k in range(int(sizes.max(initial=0))):
        sel = sizes > k
        byte = (values[sel] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (sizes[sel] > k + 1).astype(np.uint64) << np.uint64(7)
        out[starts[sel] + k] = (byte | more).astype(np.uint8)
    return out.tobytes()


def varint_decode(buf: bytes | np.ndarray) -> np.ndarray:
    """Decode a concatenation of LEB128 values into a uint64 array."""
    data = np.frombuffer(buf, np.uint8) if not isinstance(buf, np.ndarray) else buf
    if len(data) == 0:
        return np.empty(0, np.uint64)
    ends = np.flatnonzero(data < 0x80)
    if len(ends) == 0 or ends[-1] != len(data) - 1:
        raise CodecError("varint stream ends inside a value")
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    sizes = ends - starts + 1
    if sizes.max() > _MAX_VARINT_BYTES:
        raise CodecError("varint longer than 10 bytes")
    if (sizes == _MAX_VARINT_BYTES).any() and (data[ends[sizes == _MAX_VARINT_BYTES]] > 1).any():
        raise CodecError("varint overflows 64 bits")
    values = np.zeros(len(ends), np.uint64)
    for k in range(int(sizes.max())):
        sel = sizes > k
        values[sel] |= (data[starts[sel] + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
    return values


def index_deltas(indices: np.ndarray) -> np.ndarray:
    """First index then the gaps to the previous one (all >= 1 for sorted unique input), as uint64."""
    deltas = np.empty(len(indices), np.uint64)
    if len(indices):
        deltas[0] = indices[0]
        deltas[1:] = np.diff(indices).astype(np.uint64)
    return deltas


def decode_varint_indices(buf: bytes, nnz: int) -> np.ndarray:
    """Inverse of varint-encoded `index_deltas`; a decreasing index decodes as a smaller value (caught later)."""
    deltas = varint_decode(buf)
    if len(deltas) != nnz:
        raise CodecError(f"{len(deltas)} encoded indices, table says {nnz}")
    return np.cumsum(deltas.view(np.int64), dtype=np.int64)


def bitmap_nbytes(numel: int) -> int:
    """Bytes of the bitmap encoding of a tensor of `numel` elements."""
    return (numel + 7) // 8


def encode_bitmap_indices(indices: np.ndarray, numel: int) -> bytes:
    """One bit per element of [0, numel), padding bits zero."""
    return bitmap_bytes(indices, numel).tobytes()


def decode_bitmap_indices(buf: bytes, numel: int) -> np.ndarray:
    """Inverse of `encode_bitmap_indices`; rejects a wrong length or set padding bits."""
    if len(buf) != bitmap_nbytes(numel):
        raise CodecError(f"bitmap of {len(buf)} bytes for {numel} elements")
    bits = np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little")
    if bits[numel:].any():
        raise CodecError("bitmap sets bits past the last element")
    return np.flatnonzero(bits).astype(np.int64)


def encode_indices(indices: np.ndarray, numel: int) -> tuple[int, bytes]:
    """Encode with whichever of varint deltas and bitmap is smaller; returns (encoding, bytes)."""
    deltas = index_deltas(indices)
    if int(varint_sizes(deltas).sum()) > bitmap_nbytes(numel):
        return BITMAP, encode_bitmap_indices(indices, numel)
    return VARINT, varint_encode(deltas)


def decode_indices(encoding: int, buf: bytes, nnz: int, numel: int) -> np.ndarray:
    """Decode a chunk's index bytes; order, range and uniqueness are checked by the caller."""
    if encoding == VARINT:
        return decode_varint_indices(buf, nnz)
    if encoding == BITMAP:
        return decode_bitmap_indices(buf, numel)
    if encoding == DENSE:
        if len(buf) or nnz != numel:
            raise CodecError(f"dense chunk with {len(buf)} index bytes and {nnz} of {numel} elements")
        return np.arange(numel, dtype=np.int64)
    raise CodecError(f"unknown index encoding {encoding}")
