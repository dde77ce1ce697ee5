"""Index codecs: LEB128 round trips at every byte length, exact sizes, and rejection of malformed bytes."""

from __future__ import annotations

import numpy as np
import pytest

from zensim.trace import codec


def test_varint_round_trip_and_sizes() -> None:
    values = np.array([0, 1, 127, 128, 16383, 16384, 2**35, 2**63 - 1, 2**64 - 1], np.uint64)
    encoded = codec.varint_encode(values)
    # independent size: 7 payload bits per byte, at least one byte
    assert len(encoded) == sum(max(1, -(-int(v).bit_length() // 7)) for v in values)
    assert np.array_equal(codec.varint_decode(encoded), values)
    assert codec.varint_encode(np.array([300], np.uint64)) == bytes([0xAC, 0x02])  # LEB128 reference value


@pytest.mark.parametrize(
    "data,pattern",
    [(bytes([0x80]), "ends inside"), (bytes([0x80] * 10 + [0x01]), "longer than 10"), (bytes([0xFF] * 9 + [0x02]), "overflows")],
)
def test_varint_rejects_malformed(data: bytes, pattern: str) -> None:
    with pytest.raises(codec.CodecError, match=pattern):
        codec.varint_decode(data)


@pytest.mark.parametrize("numel,density", [(1000, 0.01), (1000, 0.5), (1001, 1.0), (7, 0.0)])
def test_encode_picks_the_smaller(numel: int, density: float) -> None:
    idx = np.flatnonzero(np.random.default_rng(0).random(numel) < density) if density < 1 else np.arange(numel)
    enc, data = codec.encode_indices(idx, numel)
    varint_len = len(codec.varint_encode(codec.index_deltas(idx)))
    assert len(data) == min(varint_len, (numel + 7) // 8)
    assert enc == (codec.VARINT if varint_len <= (numel + 7) // 8 else codec.BITMAP)
    assert np.array_equal(codec.decode_indices(enc, data, len(idx), numel), idx)


def test_bitmap_rejects_padding_bits_and_wrong_length() -> None:
    with pytest.raises(codec.CodecError, match="past the last element"):
        codec.decode_bitmap_indices(bytes([0x80]), 7)
    with pytest.raises(codec.CodecError, match="bitmap of 2 bytes"):
        codec.decode_bitmap_indices(bytes(2), 7)
