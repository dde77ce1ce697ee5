"""`simulate --iterations` and `converge` outputs say what made them (commit, command, trace hash or
workload, cluster) and `zensim report` reads them back (issue 26, item 5)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from zensim.cli import main
from zensim.report.provenance import file_sha256, git_commit

ROOT = Path(__file__).resolve().parents[1]
DIGITS = ROOT / "traces" / "digits-cnn-16w.zt"


def _json_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_replay_document_carries_provenance_and_report_reads_it(tmp_path, capsys):
    argv = ["simulate", "--trace", str(DIGITS), "--replay", "0:2", "--scheme", "spardl,topka", "--machines", "4",
            "--nic", "10Gbps", "--json"]
    doc = _json_of(argv, capsys)
    assert doc["schema"] == "zensim-replay/1"
    assert doc["provenance"]["commit"] == git_commit() and doc["provenance"]["command"].startswith("zensim simulate")
    assert doc["trace"]["sha256"] == file_sha256(DIGITS) and doc["trace"]["iterations"] == [0, 2]
    assert doc["cluster"]["nic_bandwidth"] == 10e9 / 8 and doc["cluster"]["model"] == "fifo"
    assert sorted(r["method"] for r in doc["records"]) == ["spardl", "spardl", "topka", "topka"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path), "--csv", str(tmp_path / "r.csv")]) == 0
    out = capsys.readouterr().out
    assert f"sha256 {doc['trace']['sha256'][:12]}" in out and "4x1 GPUs, NIC 10Gbps" in out
    rows = [line.split()[:2] for line in out.splitlines()[3:] if not line.startswith("  ")]  # the summary table
    assert rows == [["topka", "2"], ["spardl", "yes"]]  # lossless first, the lossy one marked
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert len(rows) == 4 and {r["trace.sha256"] for r in rows} == {doc["trace"]["sha256"]}
    assert {r["provenance.commit"] for r in rows} == {str(git_commit() or "")}
    assert main(["report", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == doc


def test_training_document_carries_provenance_and_report_reads_it(tmp_path, capsys):
    doc = _json_of(["converge", "--workers", "4", "--iterations", "2", "--scheme", "spardl", "--json"], capsys)
    assert doc["schema"] == "zensim-training/1" and doc["provenance"]["commit"] == git_commit()
    assert doc["workload"]["name"] == "digits-cnn" and doc["cluster"]["machines"] == 4
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "workload digits-cnn" in out and "zensim converge" in out and "\nspardl " in out


def test_partition_document_is_read_by_report(tmp_path, capsys):
    lstm = ROOT / "traces" / "lstm-lm-16w.zt"
    doc = _json_of(["partition", str(lstm), "--iterations", "1", "--partitioners", "zen", "--json"], capsys)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"sha256 {file_sha256(lstm)[:12]}" in out and "partitioners zen" in out
    assert out.splitlines()[-1].split()[:2] == ["zen", "0"]


def test_a_malformed_replay_document_is_one_line(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema": "zensim-replay/1", "records": [{"method": "x"}], "summary": []}))
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"zensim: error: {path}: malformed zensim-replay/1 document")
