"""merge_shards: rank shards become one trace; a wrong set of shards is a one-line TraceError."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zensim.cli import main
from zensim.errors import TraceError
from zensim.trace.format import Trace, TensorSpec, TraceWriter
from zensim.trace.merge import merge_shards

SPECS = [TensorSpec("emb", 100), TensorSpec("fc", 10)]


def chunk(it: int, rank: int, t: int) -> np.ndarray:
    rng = np.random.default_rng([it, rank, t])
    numel = SPECS[t].numel
    return np.sort(rng.choice(numel, size=rng.integers(0, numel // 3), replace=False)).astype(np.int64)


def shard(path: Path, rank: int, world: int, iterations: int = 2, specs: list[TensorSpec] = SPECS,
          values: bool = True, provenance: dict | None = None) -> str:
    prov = {"shard": {"rank": rank, "world_size": world}} if provenance is None else provenance
    with TraceWriter(path, specs, workers=1, iterations=iterations, value_dtype="float32" if values else None,
                     workload="w", batch_size=4, provenance={**prov, "seed": 7}) as w:
        for it in range(iterations):
            for t in range(len(specs)):
                idx = chunk(it, rank, t)
                w.write(it, 0, t, idx, idx.astype(np.float32) * (rank + 1) if values else None)
    return str(path)


def test_merge_orders_by_rank_and_keeps_everything(tmp_path: Path) -> None:
    paths = [shard(tmp_path / f"s{r}.zt", r, 3) for r in (2, 0, 1)]
    merge_shards(paths, str(tmp_path / "m.zt"))
    m = Trace.open(tmp_path / "m.zt")
    assert (m.workers, m.iterations, m.value_dtype) == (3, 2, "float32")
    assert m.meta["provenance"] == {"seed": 7, "merged_from": 3} and m.meta["batch_size"] == 4
    for it in range(2):
        for r in range(3):
            for t in range(2):
                idx = chunk(it, r, t)
                np.testing.assert_array_equal(m.indices(it, r, t), idx)
                np.testing.assert_array_equal(m.values(it, r, t), idx.astype(np.float32) * (r + 1))


def test_merge_cli(tmp_path: Path) -> None:
    paths = [shard(tmp_path / f"s{r}.zt", r, 2, values=False) for r in range(2)]
    assert main(["trace", "merge", *paths, "-o", str(tmp_path / "m.zt")]) == 0
    assert Trace.open(tmp_path / "m.zt").workers == 2


def bad_set(tmp: Path, case: str) -> tuple[list[str], str]:
    """The shard files of one bad case and the message expected."""
    s = lambda name, *a, **k: shard(tmp / name, *a, **k)  # noqa: E731
    cases = {
        "missing rank": lambda: ([s("a0", 0, 3), s("a1", 1, 3)], "rank 2 missing"),
        "duplicate rank": lambda: ([s("b0", 0, 2), s("b1", 0, 2)], "rank 0 also in"),
        "rank out of range": lambda: ([s("c0", 0, 2), s("c1", 5, 2)], "rank 5 out of range"),
        "world sizes differ": lambda: ([s("d0", 0, 2), s("d1", 1, 3)], "world size differs"),
        "iterations differ": lambda: ([s("e0", 0, 2), s("e1", 1, 2, iterations=3)], "iterations differs"),
        "tensors differ": lambda: (
            [s("f0", 0, 2), s("f1", 1, 2, specs=[TensorSpec("emb", 100), TensorSpec("fc", 11)])], "tensors differs"),
        "values differ": lambda: ([s("g0", 0, 2), s("g1", 1, 2, values=False)], "value_dtype differs"),
        "not a shard": lambda: ([s("h0", 0, 2), s("h1", 1, 2, provenance={})], "not a shard"),
    }
    return cases[case]()


BAD_CASES = ["missing rank", "duplicate rank", "rank out of range", "world sizes differ", "iterations differ",
             "tensors differ", "values differ", "not a shard"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_merge_rejects_bad_shard_sets(tmp_path: Path, case: str) -> None:
    paths, message = bad_set(tmp_path, case)
    with pytest.raises(TraceError, match=message) as err:
        merge_shards(paths, str(tmp_path / "out.zt"))
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out.zt").exists()


def test_merge_of_nothing_and_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no shards"):
        merge_shards([], str(tmp_path / "out.zt"))
    with pytest.raises(TraceError, match="cannot open"):
        merge_shards([str(tmp_path / "nope.zt")], str(tmp_path / "out.zt"))
