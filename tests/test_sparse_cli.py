"""`zensim partition`: rows per partitioner and iteration, JSON/CSV output, one-line errors."""

from __future__ import annotations

import json

import numpy as np

from zensim.cli import main
from zensim.report.provenance import file_sha256
from zensim.sparse import Contiguous, SparseChunk, push_imbalance
from zensim.trace import TensorSpec, TraceWriter


def _trace(path, workers: int = 4, iterations: int = 3, numel: int = 5000) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(0)
    sets = [[np.unique((numel * rng.random(400) ** 2).astype(np.int64)) for _ in range(workers)]
            for _ in range(iterations)]
    with TraceWriter(path, [TensorSpec("t", numel)], workers=workers, iterations=iterations) as w:
        for it, per_worker in enumerate(sets):
            for wk, ids in enumerate(per_worker):
                w.write(it, wk, 0, ids)
    return sets


def test_partition_command_rows_json_and_csv(tmp_path, capsys) -> None:
    sets = _trace(tmp_path / "t.zt")
    csv_path = tmp_path / "rows.csv"
    assert main(["partition", str(tmp_path / "t.zt"), "--json", "--csv", str(csv_path), "--period", "2"]) == 0
    doc = json.loads(capsys.readouterr().out)  # a zensim-partition/1 document: what made it, the rows
    assert doc["schema"] == "zensim-partition/1" and doc["trace"]["sha256"] == file_sha256(tmp_path / "t.zt")
    assert doc["provenance"]["command"].startswith("zensim partition") and doc["partitioners"]["zen"]["k"] == 3
    rows = doc["records"]
    assert len(rows) == 4 * 3
    assert {r["partitioner"] for r in rows} == {"contiguous", "thresholds", "single_hash", "zen"}
    for r in rows:
        if r["partitioner"] == "contiguous":
            chunks = [SparseChunk(ids) for ids in sets[r["iteration"]]]
            assert r["push"] == push_imbalance(Contiguous(5000, 4), chunks)
        if r["partitioner"] == "zen":
            assert r["lost_rate"] == 0 and r["push"] <= r["push_bound"]
    assert len(csv_path.read_text().splitlines()) == 1 + len(rows)


def test_partition_command_errors(tmp_path, capsys) -> None:
    _trace(tmp_path / "t.zt")
    assert main(["partition", str(tmp_path / "t.zt"), "--partitioners", "zen,ring"]) == 2
    assert "--partitioners" in capsys.readouterr().err
    assert main(["partition", str(tmp_path / "missing.zt")]) == 2
    assert "missing.zt" in capsys.readouterr().err
    assert main(["partition", str(tmp_path / "t.zt"), "--iterations", "0"]) == 2
    assert capsys.readouterr().err == "zensim: error: --iterations 0: must be at least 1\n"
