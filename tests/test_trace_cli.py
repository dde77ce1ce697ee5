"""`zensim trace synth|stats`: output, JSON keys, and exit status 2 with one stderr line on bad traces."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import zensim.trace.format as fmt
from zensim.cli import main
from zensim.trace import TensorSpec, TraceWriter


def synth(path: Path, *extra: str) -> int:
    return main(["trace", "synth", "--workers", "6", "--numel", "50000", "--density", "0.02", "--overlap", "0.3",
                 "--skew", "2", "--iterations", "2", "--seed", "4", "-o", str(path), *extra])


def test_synth_then_stats_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.zt"
    assert synth(path, "--values", "float32") == 0
    capsys.readouterr()
    assert main(["trace", "stats", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"density", "overlap", "densification", "skewness", "tensors", "trace"} <= set(out)
    assert out["trace"]["workers"] == 6 and out["trace"]["value_dtype"] == "float32"
    assert out["density"]["mean"] == pytest.approx(0.02)
    assert [r["k"] for r in out["densification"]] == [1, 2, 4, 6]
    assert out["tensors"]["synthetic"]["overlap"] == out["overlap"]


def test_stats_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.zt"
    assert main(["trace", "synth", "--workers", "3", "--tensors", "emb=4000,fc=900", "--density", "0.1",
                 "-o", str(path)]) == 0
    capsys.readouterr()
    assert main(["trace", "stats", str(path)]) == 0
    out = capsys.readouterr().out
    assert "densification" in out and "skewness" in out and "emb" in out and "fc" in out


def bad_trace(path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Write a trace that is bad in the way `kind` says."""
    indices = {"unsorted": [9, 4], "out-of-range": [4, 5000]}.get(kind, [4, 9])
    if kind in ("unsorted", "out-of-range"):
        monkeypatch.setattr(fmt, "_check_indices", lambda *a: None)
    with TraceWriter(path, [TensorSpec("g", 1000)], 2, 1) as w:
        w.write(0, 0, 0, np.array(indices))
        w.write(0, 1, 0, np.array(indices))
    monkeypatch.undo()
    data = bytearray(path.read_bytes())
    if kind == "truncated":
        path.write_bytes(bytes(data[:-10]))
    if kind == "version":
        data[8:12] = struct.pack("<I", 2)
        path.write_bytes(bytes(data))


@pytest.mark.parametrize("kind", ["truncated", "version", "unsorted", "out-of-range"])
def test_bad_trace_exits_2_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = tmp_path / "bad.zt"
    bad_trace(path, kind, monkeypatch)
    assert main(["trace", "stats", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"zensim: error: {path}: ")


def test_bad_synth_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert synth(tmp_path / "s.zt", "--values", "float16") == 0
    capsys.readouterr()
    assert main(["trace", "synth", "--workers", "2", "--numel", "100", "--density", "0.5", "--skew", "5",
                 "-o", str(tmp_path / "x.zt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zensim: error: --skew 5.0") and err.count("\n") == 1
    assert not (tmp_path / "x.zt").exists()
    assert main(["trace", "synth", "--workers", "2", "--tensors", "a=1,b", "--density", "0.5",
                 "-o", str(tmp_path / "x.zt")]) == 2


def test_negative_synth_seed_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "synth", "--workers", "2", "--numel", "100", "--density", "0.5", "--seed", "-1",
                 "-o", str(tmp_path / "x.zt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zensim: error: --seed -1") and err.count("\n") == 1
    assert not (tmp_path / "x.zt").exists()


def test_negative_stats_seed_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert synth(tmp_path / "s.zt") == 0
    capsys.readouterr()
    assert main(["trace", "stats", str(tmp_path / "s.zt"), "--pairs", "1", "--seed", "-1"]) == 2
    assert capsys.readouterr().err == "zensim: error: --seed -1: must be at least 0\n"
