"""Dense chunks: values for every element and no index bytes; read back dense or as chunks; merged
as dense; validated; old (sparse) traces read as before and give dense vectors too."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from zensim.errors import TraceError
from zensim.trace import TensorSpec, Trace, TraceWriter
from zensim.trace.merge import merge_shards

SPECS = [TensorSpec("a", 300), TensorSpec("b", 45)]


def grads(it: int, w: int, numel: int) -> np.ndarray:
    return np.random.default_rng([it, w, numel]).standard_normal(numel).astype(np.float32)


def write_dense(path: Path, workers: int = 2, iterations: int = 3, dtype: str = "float32") -> None:
    with TraceWriter(path, SPECS, workers=workers, iterations=iterations, value_dtype=dtype) as w:
        for it in range(iterations):
            for wk in range(workers):
                for spec in SPECS:
                    w.write_dense(it, wk, spec.name, grads(it, wk, spec.numel))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_dense_round_trip_costs_only_the_values(tmp_path: Path, dtype: str) -> None:
    path = tmp_path / "d.zt"
    write_dense(path, dtype=dtype)
    t = Trace.open(path)
    assert t.is_dense and t.chunk_is_dense(1, 1, "b")
    itemsize = np.dtype(dtype).itemsize
    values = 3 * 2 * 345 * itemsize
    header = int.from_bytes(path.read_bytes()[12:16], "little")
    assert os.path.getsize(path) == 24 + header + values + 3 * 2 * 2 * 49 + 32  # no index bytes at all
    expected = grads(2, 1, 300).astype(dtype).astype(np.float32)
    np.testing.assert_array_equal(t.dense(2, 1, "a"), expected)
    np.testing.assert_array_equal(t.indices(2, 1, "a"), np.arange(300))
    np.testing.assert_array_equal(t.read(2, 1, "a").values, expected)
    flat = t.flat_dense(2, 1)
    np.testing.assert_array_equal(flat[:300], expected)
    np.testing.assert_array_equal(flat[300:], grads(2, 1, 45).astype(dtype).astype(np.float32))
    assert t.nnz(0, 0) == 345


def test_sparse_traces_still_read_and_give_dense_vectors(tmp_path: Path) -> None:
    path = tmp_path / "s.zt"
    with TraceWriter(path, SPECS, workers=1, iterations=1, value_dtype="float32") as w:
        w.write(0, 0, "a", np.array([2, 7]), np.array([1.5, -2.0]))
        w.write_dense(0, 0, "b", np.ones(45))  # chunks of both kinds may mix
    t = Trace.open(path)
    assert not t.is_dense and not t.chunk_is_dense(0, 0, "a")
    dense = t.dense(0, 0, "a")
    assert dense[2] == 1.5 and dense[7] == -2.0 and np.count_nonzero(dense) == 2
    assert t.flat_dense(0, 0)[300:].tolist() == [1.0] * 45
    with TraceWriter(tmp_path / "i.zt", SPECS, workers=1, iterations=1) as w:
        for spec in SPECS:
            w.write(0, 0, spec.name, np.array([1]))
    with pytest.raises(TraceError, match="no values in this trace"):
        Trace.open(tmp_path / "i.zt").dense(0, 0)


def test_dense_writer_checks(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="needs 300 values, got shape \\(299,\\)"):
        with TraceWriter(tmp_path / "x.zt", SPECS, workers=1, iterations=1, value_dtype="float32") as w:
            w.write_dense(0, 0, "a", np.zeros(299))
    with pytest.raises(TraceError, match="a dense chunk needs values"):
        with TraceWriter(tmp_path / "y.zt", SPECS, workers=1, iterations=1) as w:
            w.write_dense(0, 0, "a", np.zeros(300))
    assert not (tmp_path / "x.zt").exists() and not (tmp_path / "y.zt").exists()


def test_a_corrupt_dense_entry_is_named(tmp_path: Path) -> None:
    path = tmp_path / "d.zt"
    write_dense(path, workers=1, iterations=1)
    data = bytearray(path.read_bytes())
    table_offset = int.from_bytes(data[-32:-24], "little")
    nnz_at = table_offset + 41  # first entry's nnz field (u64 at byte 41 of the 49-byte entry)
    data[nnz_at:nnz_at + 8] = (299).to_bytes(8, "little")
    data[nnz_at - 8:nnz_at] = (299 * 4).to_bytes(8, "little")  # keep value bytes = nnz x 4
    import zlib
    table = bytes(data[table_offset:len(data) - 32])
    data[-16:-12] = zlib.crc32(table).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match="dense chunk with index bytes or fewer values than elements"):
        Trace.open(path)


def test_merge_keeps_dense_chunks_dense(tmp_path: Path) -> None:
    for rank in range(2):
        with TraceWriter(tmp_path / f"s{rank}.zt", SPECS, workers=1, iterations=2, value_dtype="float16",
                         provenance={"shard": {"rank": rank, "world_size": 2}}) as w:
            for it in range(2):
                for spec in SPECS:
                    w.write_dense(it, 0, spec.name, grads(it, rank, spec.numel))
    merge_shards([tmp_path / "s1.zt", tmp_path / "s0.zt"], tmp_path / "m.zt")
    m = Trace.open(tmp_path / "m.zt")
    assert m.is_dense and m.workers == 2
    np.testing.assert_array_equal(m.dense(1, 1, "b"), grads(1, 1, 45).astype(np.float16).astype(np.float32))
