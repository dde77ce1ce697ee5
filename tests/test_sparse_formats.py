"""Wire formats: exact round trips, exact byte counts from independent formulas, bad payloads."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zensim.errors import ConfigError
from zensim.sparse import FORMATS, ExplicitDomain, RangeDomain, SparseChunk, make_format, value_codec

DTYPES = ["float32", "float16", "bfloat16"]


def _domains(rng: np.random.Generator) -> list:
    """A range domain not starting at 0 and an explicit (hash-like) domain."""
    elements = np.sort(rng.choice(4000, 700, replace=False))
    return [RangeDomain(50, 1049), ExplicitDomain(elements.astype(np.int32), bound=4000)]


def _chunk(rng: np.random.Generator, domain, nnz: int, ends: bool = True) -> SparseChunk:
    """Random non-zero values at random positions, with the first and last positions if `ends`."""
    pos = rng.choice(domain.size, min(nnz, domain.size), replace=False)
    if ends:
        pos = np.concatenate([pos, [0, domain.size - 1]])
    ids = np.unique(domain.ids(pos))
    vals = rng.uniform(0.5, 2.0, len(ids)).astype(np.float32) * rng.choice([-1, 1], len(ids))
    return SparseChunk(ids, vals.astype(np.float32))


def _formats(domain, block_size: int = 7):
    for name in FORMATS:
        if name == "hash_bitmap" and isinstance(domain, RangeDomain):
            continue
        for dtype in DTYPES:
            yield make_format(name, dtype, block_size=block_size)


@pytest.mark.parametrize("nnz", [0, 1, 40, 10_000])
def test_round_trip_every_format(nnz: int) -> None:
    rng = np.random.default_rng(nnz)
    for domain in _domains(rng):
        chunk = _chunk(rng, domain, nnz, ends=nnz > 0)
        for fmt in _formats(domain):
            enc = fmt.encode(chunk, domain)
            buf = enc.to_bytes()
            assert len(buf) == enc.nbytes
            back = fmt.from_bytes(buf, domain, n_values=chunk.nnz)
            assert np.array_equal(back.chunk.indices, chunk.indices), fmt
            assert np.array_equal(back.chunk.values, enc.chunk.values), fmt
            assert back.nbytes == enc.nbytes


def test_index_zero_and_last_of_whole_tensor() -> None:
    numel = 1000
    chunk = SparseChunk(np.array([0, 999], np.int64), np.array([3.0, -1.5], np.float32))
    for fmt in _formats(RangeDomain(0, numel)):
        back = fmt.from_bytes(fmt.encode(chunk, RangeDomain(0, numel)).to_bytes(), RangeDomain(0, numel))
        assert back.chunk.indices.tolist() == [0, 999]
        assert back.chunk.values.tolist() == [3.0, -1.5]


def test_indices_only_mode_counts_values_and_round_trips_indices() -> None:
    rng = np.random.default_rng(3)
    for domain in _domains(rng):
        full = _chunk(rng, domain, 60)
        bare = SparseChunk(full.indices, None)
        for fmt in _formats(domain):
            enc = fmt.encode(bare, domain)
            assert enc.nbytes == fmt.encode(full, domain).nbytes
            back = fmt.from_bytes(enc.to_bytes(), domain, with_values=False)
            assert back.chunk.values is None
            assert np.array_equal(back.chunk.indices, bare.indices)


def test_coo_bytes_int32_float32_is_8_per_element() -> None:
    chunk = SparseChunk(np.arange(0, 3000, 3, dtype=np.int64), None)
    assert make_format("coo").encode(chunk, RangeDomain(0, 3000)).nbytes == 8 * chunk.nnz
    assert make_format("coo", "float16").encode(chunk, RangeDomain(0, 3000)).nbytes == 6 * chunk.nnz
    big = RangeDomain(0, 2**31)  # ids up to 2**31 - 1 still fit int32, but numel 2**31 does not
    assert make_format("coo").encode(chunk, big).nbytes == 12 * chunk.nnz
    assert make_format("coo").encode(chunk, RangeDomain(0, 2**31 - 1)).nbytes == 8 * chunk.nnz


def test_bitmap_and_dense_bytes() -> None:
    chunk = SparseChunk(np.array([5, 9, 20], np.int64), None)
    dom = RangeDomain(3, 24)  # 21 positions -> 3 bitmap bytes
    assert make_format("bitmap").encode(chunk, dom).nbytes == 3 + 3 * 4
    assert make_format("bitmap", "bfloat16").encode(chunk, dom).nbytes == 3 + 3 * 2
    assert make_format("dense").encode(chunk, dom).nbytes == 21 * 4
    assert make_format("dense", "float16").encode(SparseChunk.empty(False), dom).nbytes == 21 * 2


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 600), st.integers(1, 40), st.data())
def test_blocks_bytes_match_independent_count(size: int, block_size: int, data) -> None:
    pos = sorted(data.draw(st.sets(st.integers(0, size - 1), max_size=60)))
    domain = RangeDomain(11, 11 + size)
    chunk = SparseChunk(np.array(pos, np.int64) + 11, np.ones(len(pos), np.float32))
    carried = {p // block_size for p in pos}
    values = sum(min(block_size, size - b * block_size) for b in carried)
    fmt = make_format("blocks", block_size=block_size)
    enc = fmt.encode(chunk, domain)
    assert enc.nbytes == 4 * len(carried) + 4 * values
    back = fmt.from_bytes(enc.to_bytes(), domain)
    assert back.chunk.indices.tolist() == chunk.indices.tolist()


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 2**31 - 2), max_size=50), st.sampled_from(DTYPES))
def test_coo_round_trip_large_ids(ids: set, dtype: str) -> None:
    domain = RangeDomain(0, 2**31 - 1)
    idx = np.array(sorted(ids), np.int64)
    chunk = SparseChunk(idx, np.linspace(-3, 3, len(idx)).astype(np.float32))
    fmt = make_format("coo", dtype)
    back = fmt.from_bytes(fmt.encode(chunk, domain).to_bytes(), domain)
    assert np.array_equal(back.chunk.indices, idx)
    assert np.array_equal(back.chunk.values, value_codec(dtype).quantize(chunk.values))


def test_bfloat16_matches_torch_round_to_nearest_even() -> None:
    rng = np.random.default_rng(7)
    v = np.concatenate([rng.standard_normal(5000).astype(np.float32) * 1e3,
                        np.array([0.0, -0.0, np.inf, -np.inf, 3.4e38, 1e-40, 1.00390625, 1.01171875], np.float32)])
    ours = value_codec("bfloat16").quantize(v)
    theirs = torch.from_numpy(v).to(torch.bfloat16).to(torch.float32).numpy()
    assert np.array_equal(ours, theirs)
    assert np.isnan(value_codec("bfloat16").quantize(np.array([np.nan], np.float32))[0])
    packed = value_codec("bfloat16").pack(v)
    assert len(packed) == 2 * len(v)
    assert np.array_equal(value_codec("bfloat16").unpack(packed, len(v)), theirs)


def test_float16_values_to_precision() -> None:
    v = np.array([1.0, 1.0 + 2**-12, 65504.0, -2.5e-3], np.float32)
    assert np.array_equal(value_codec("float16").quantize(v), v.astype(np.float16).astype(np.float32))


def test_ids_outside_domain_rejected() -> None:
    chunk = SparseChunk(np.array([1, 50], np.int64), None)
    for fmt in _formats(RangeDomain(0, 10)):
        with pytest.raises(ValueError):
            fmt.encode(chunk, RangeDomain(0, 10)).to_bytes()
    explicit = ExplicitDomain(np.array([1, 3, 5], np.int64))
    with pytest.raises(ValueError):
        make_format("hash_bitmap").encode(SparseChunk(np.array([2], np.int64)), explicit).to_bytes()


def test_hash_bitmap_needs_explicit_domain_and_bad_names() -> None:
    with pytest.raises(ValueError):
        make_format("hash_bitmap").encode(SparseChunk.empty(False), RangeDomain(0, 8))
    with pytest.raises(ConfigError, match="format 'csr'"):
        make_format("csr")
    with pytest.raises(ConfigError, match="value dtype"):
        make_format("coo", "float8")
    with pytest.raises(ConfigError, match="block size"):
        make_format("blocks", block_size=0)


def test_truncated_payloads_rejected() -> None:
    domain = RangeDomain(0, 100)
    chunk = SparseChunk(np.array([1, 50, 99], np.int64), np.ones(3, np.float32))
    for fmt in _formats(domain):
        buf = fmt.encode(chunk, domain).to_bytes()
        with pytest.raises(ValueError):
            fmt.from_bytes(buf[:-1], domain)
    with pytest.raises(ValueError, match="expected 2"):
        make_format("coo").from_bytes(make_format("coo").encode(chunk, domain).to_bytes(), domain, n_values=2)


def test_bitmap_size_formula_ceil() -> None:
    for size in (0, 1, 7, 8, 9, 1000):
        domain = RangeDomain(0, size)
        assert make_format("bitmap").encode(SparseChunk.empty(False), domain).nbytes == math.ceil(size / 8)
