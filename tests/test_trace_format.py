"""Trace format: round trips, laziness, exact sizes, and a one-line TraceError for every bad input."""

from __future__ import annotations

import json
import os
import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import zensim.trace.format as fmt
from zensim.errors import TraceError
from zensim.trace import LayerSpec, TensorSpec, Trace, TraceWriter

SPECS = [
    TensorSpec("emb", 1000),
    TensorSpec("bucket", 300, (LayerSpec("fc.weight", 0, 256), LayerSpec("fc.bias", 256, 44))),
]


def sample_sets(rng: np.random.Generator, workers: int, iterations: int) -> dict[tuple[int, int, int], np.ndarray]:
    """Random index sets including element 0, the last element, an empty set and a full set."""
    sets = {}
    for it in range(iterations):
        for w in range(workers):
            for t, spec in enumerate(SPECS):
                idx = np.flatnonzero(rng.random(spec.numel) < 0.05)
                sets[it, w, t] = np.union1d(idx, [0, spec.numel - 1]) if w == 0 else idx
    sets[0, 1, 0] = np.empty(0, np.int64)
    sets[1, 1, 1] = np.arange(SPECS[1].numel)
    return sets


def write_trace(path: Path, sets: dict, value_dtype: str | None, workers: int = 3, iterations: int = 2) -> dict:
    """Write `sets` in shuffled order; return the values written per chunk."""
    rng = np.random.default_rng(1)
    values = {}
    keys = list(sets)
    rng.shuffle(keys)
    with TraceWriter(path, SPECS, workers, iterations, value_dtype, batch_size=8, workload="test",
                     provenance={"generator": "test", "seed": 1}) as w:
        for key in keys:
            vals = None if value_dtype is None else rng.standard_normal(len(sets[key])).astype(np.float32)
            values[key] = vals
            w.write(*key, sets[key], vals)
    return values


@pytest.mark.parametrize("value_dtype", [None, "float32", "float16"])
def test_round_trip(tmp_path: Path, value_dtype: str | None) -> None:
    sets = sample_sets(np.random.default_rng(0), 3, 2)
    path = tmp_path / "t.zt"
    values = write_trace(path, sets, value_dtype)
    with Trace.open(path) as t:
        assert (t.workers, t.iterations, t.numel, t.value_dtype) == (3, 2, 1300, value_dtype)
        assert t.tensors == tuple(SPECS)
        assert t.meta["batch_size"] == 8 and t.meta["workload"] == "test" and t.meta["provenance"]["seed"] == 1
        for (it, w, k), idx in sets.items():
            got = t.indices(it, w, k)
            assert got.dtype == np.int64 and np.array_equal(got, idx)
            assert t.nnz(it, w, k) == len(idx)
            vals = t.values(it, w, SPECS[k].name)
            if value_dtype is None:
                assert vals is None and t.read(it, w, k).values is None
            else:
                assert vals.dtype == np.dtype(value_dtype)
                assert np.array_equal(vals, values[it, w, k].astype(value_dtype))
                assert t.read(it, w, k).values.dtype == np.float32
        flat = t.flat_indices(1, 0)
        assert np.array_equal(flat, np.concatenate([sets[1, 0, 0], sets[1, 0, 1] + 1000]))
        assert t.nnz(1, 0) == len(flat)


def leb128_len(value: int) -> int:
    """Independent LEB128 length: 7 payload bits a byte."""
    return max(1, -(-value.bit_length() // 7))


def test_lazy_read_reads_exactly_one_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sets = sample_sets(np.random.default_rng(2), 3, 2)
    path = tmp_path / "t.zt"
    write_trace(path, sets, "float32")
    t = Trace.open(path)
    reads: list[tuple[int, int]] = []
    real_pread = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, off: reads.append((n, off)) or real_pread(fd, n, off))
    idx = t.indices(1, 2, 0)
    gaps = np.diff(np.concatenate([[0], idx]))
    assert reads == [(sum(leb128_len(int(g)) for g in gaps) + 4 * len(idx), reads[0][1])]
    reads.clear()
    assert len(t.indices(1, 1, 1)) == 300  # a full set is stored as a bitmap of ceil(300 / 8) bytes
    assert reads[0][0] == 38 + 4 * 300


def test_other_chunk_corruption_is_isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sets = sample_sets(np.random.default_rng(3), 3, 2)
    path = tmp_path / "t.zt"
    write_trace(path, sets, None)
    t = Trace.open(path)
    entry = t._table[(0 * 3 + 2) * 2 + 0]  # iteration 0, worker 2, tensor 0
    data = bytearray(path.read_bytes())
    data[int(entry["offset"]) + 1] ^= 0x40
    path.write_bytes(bytes(data))
    t = Trace.open(path)
    assert np.array_equal(t.indices(1, 2, 0), sets[1, 2, 0])
    with pytest.raises(TraceError, match=rf"^{path}: iteration 0 worker 2 tensor 'emb': corrupt chunk \(CRC32"):
        t.indices(0, 2, 0)


def test_compact_at_one_percent(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    numel, workers = 2_000_000, 4
    path = tmp_path / "t.zt"
    total = 0
    with TraceWriter(path, [TensorSpec("g", numel)], workers, 1) as w:
        for k in range(workers):
            idx = np.sort(rng.choice(numel, numel // 100, replace=False))
            total += len(idx)
            w.write(0, k, 0, idx)
    assert path.stat().st_size / total <= 1.5


def patch_header(path: Path, old: str, new: str) -> None:
    """Replace text in the JSON header (same length) and fix its CRC, so only the content is wrong."""
    data = bytearray(path.read_bytes())
    magic, version, length, _, zero = fmt.PREFIX.unpack_from(data)
    header = bytes(data[fmt.PREFIX.size : fmt.PREFIX.size + length]).replace(old.encode(), new.encode())
    assert len(header) == length and json.loads(header)
    data[: fmt.PREFIX.size + length] = fmt.PREFIX.pack(magic, version, length, zlib.crc32(header), zero) + header
    path.write_bytes(bytes(data))


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.zt"
    with TraceWriter(path, [TensorSpec("g", 100)], 2, 2, "float32") as w:
        for it in range(2):
            for k in range(2):
                w.write(it, k, 0, np.array([0, 7, 99]), np.ones(3))
    return path


def one_line_error(path: Path, pattern: str, read: bool = False) -> None:
    with pytest.raises(TraceError) as info:
        t = Trace.open(path)
        if read:
            t.indices(1, 1)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert re.search(pattern, message), message


@pytest.mark.parametrize("cut", [5, 30, 60, -1, -33, -40])
def test_truncated(good: Path, cut: int) -> None:
    data = good.read_bytes()
    good.write_bytes(data[:cut])
    one_line_error(good, r"truncated|no footer|bad magic|header")


def test_bad_magic_and_version(good: Path) -> None:
    data = bytearray(good.read_bytes())
    data[8:12] = struct.pack("<I", 7)
    good.write_bytes(bytes(data))
    one_line_error(good, r"unknown schema version 7")
    data[0] = ord("X")
    good.write_bytes(bytes(data))
    one_line_error(good, r"bad magic")


def test_corrupt_header_and_table(good: Path) -> None:
    data = bytearray(good.read_bytes())
    data[fmt.PREFIX.size + 3] ^= 1
    good.write_bytes(bytes(data))
    one_line_error(good, r"corrupt header")
    data[fmt.PREFIX.size + 3] ^= 1
    data[-fmt.FOOTER.size - 5] ^= 1
    good.write_bytes(bytes(data))
    one_line_error(good, r"corrupt chunk table")


@pytest.mark.parametrize("where, offset", [("footer", -12), ("prefix", 20)])
def test_flipped_reserved_field_is_refused(good: Path, where: str, offset: int) -> None:
    """The reserved u32 of prefix (bytes 20..24) and footer (the 4 bytes before the end magic) is 0."""
    data = bytearray(good.read_bytes())
    assert data[offset:offset + 4 or None] == b"\0\0\0\0"
    data[offset] ^= 0x10
    good.write_bytes(bytes(data))
    one_line_error(good, rf"corrupt {where} \(reserved field is 0x10, schema 1 writes 0\)")


def test_missing_worker_in_file(good: Path) -> None:
    patch_header(good, '"workers": 2', '"workers": 3')
    one_line_error(good, r"missing worker or iteration \(iteration 0 worker 2")


def test_out_of_range_in_file(good: Path) -> None:
    patch_header(good, '"numel": 100', '"numel":  99')  # elements now [0, 99), index 99 stored
    one_line_error(good, r"index 99 out of range \[0, 99\)", read=True)


@pytest.mark.parametrize("indices,pattern", [([5, 3, 8], "unsorted"), ([2, 2, 8], "duplicate")])
def test_unsorted_or_duplicate_in_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indices: list[int], pattern: str
) -> None:
    path = tmp_path / "bad.zt"
    monkeypatch.setattr(fmt, "_check_indices", lambda *a: None)  # let the writer store bad input
    with TraceWriter(path, [TensorSpec("g", 1000)], 2, 2) as w:  # large enough to store varints, not a bitmap
        for it in range(2):
            for k in range(2):
                w.write(it, k, 0, np.array(indices))
    monkeypatch.undo()
    one_line_error(path, pattern, read=True)


def test_value_count_mismatch_in_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bad.zt"
    monkeypatch.setattr(TraceWriter, "_value_bytes", lambda self, v, n, where: b"\0" * (4 * n + 4))
    with TraceWriter(path, [TensorSpec("g", 10)], 1, 1, "float32") as w:
        w.write(0, 0, 0, np.array([1, 2]), np.ones(2))
    monkeypatch.undo()
    one_line_error(path, "value count mismatch")


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_missing_chunk_at_close_leaves_nothing(tmp_path: Path) -> None:
    w = TraceWriter(tmp_path / "t.zt", [TensorSpec("g", 10)], 2, 2)
    w.write(0, 0, 0, [1])
    w.write(0, 1, 0, [1])
    w.write(1, 0, 0, [1])
    with pytest.raises(TraceError, match=r"iteration 1 worker 1 tensor 'g': never written \(1 chunks missing"):
        w.close()
    assert leftovers(tmp_path) == []


def test_exception_inside_with_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        with TraceWriter(tmp_path / "t.zt", [TensorSpec("g", 10)], 1, 1) as w:
            w.write(0, 0, 0, [1, 2])
            raise KeyboardInterrupt
    assert leftovers(tmp_path) == []


def test_close_replaces_atomically(good: Path) -> None:
    before = good.read_bytes()
    with pytest.raises(TraceError):
        with TraceWriter(good, [TensorSpec("g", 10)], 1, 1) as w:
            w.write(0, 0, 0, [11])
    assert good.read_bytes() == before and leftovers(good.parent) == ["good.zt"]


@pytest.mark.parametrize(
    "call,pattern",
    [
        (lambda w: w.write(0, 0, 0, [3, 1]), "unsorted indices"),
        (lambda w: w.write(0, 0, 0, [1, 1]), "duplicate indices"),
        (lambda w: w.write(0, 0, 0, [10]), r"index 10 out of range \[0, 10\)"),
        (lambda w: w.write(0, 0, 0, [-1]), r"index -1 out of range"),
        (lambda w: w.write(0, 0, 0, [0.5]), "1-D integer array"),
        (lambda w: w.write(0, 0, 0, [1, 2], [1.0]), r"value count mismatch \(1 values for 2 indices\)"),
        (lambda w: w.write(0, 0, 0, [1]), "values missing"),
        (lambda w: w.write(2, 0, 0, [1], [1.0]), r"iteration 2 out of range \[0, 2\)"),
        (lambda w: w.write(0, 5, 0, [1], [1.0]), r"worker 5 out of range"),
        (lambda w: w.write(0, 0, "nope", [1], [1.0]), "unknown tensor 'nope'"),
        (lambda w: [w.write(0, 0, 0, [1], [1.0]) for _ in range(2)], "chunk written twice"),
    ],
)
def test_writer_rejects_bad_input(tmp_path: Path, call, pattern: str) -> None:
    path = tmp_path / "t.zt"
    w = TraceWriter(path, [TensorSpec("g", 10)], 2, 2, "float16")
    with pytest.raises(TraceError, match=pattern) as info:
        call(w)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)
    w.abort()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        ({"workers": 0}, "workers must be a positive integer"),
        ({"value_dtype": "int8"}, "value_dtype must be"),
        ({"tensors": [TensorSpec("g", 0)]}, "numel must be a positive integer"),
        ({"tensors": [TensorSpec("g", 5), TensorSpec("g", 5)]}, "tensor names repeat"),
        ({"tensors": [TensorSpec("b", 5, (LayerSpec("x", 0, 3), LayerSpec("y", 2, 3)))]}, "layer 'y' overlaps"),
        ({"provenance": {"f": object()}}, "provenance is not JSON-serializable"),
    ],
)
def test_writer_rejects_bad_metadata(tmp_path: Path, kwargs: dict, pattern: str) -> None:
    args = {"tensors": [TensorSpec("g", 10)], "workers": 1, "iterations": 1} | kwargs
    with pytest.raises(TraceError, match=pattern):
        TraceWriter(tmp_path / "t.zt", **args)
    assert leftovers(tmp_path) == []


def test_open_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"nope.zt: cannot open"):
        Trace.open(tmp_path / "nope.zt")


def test_writer_to_a_directory_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "out.zt").mkdir()
    with pytest.raises(TraceError, match=r"out.zt: is a directory"):
        TraceWriter(tmp_path / "out.zt", [TensorSpec("g", 10)], 1, 1)
    assert leftovers(tmp_path) == ["out.zt"]
