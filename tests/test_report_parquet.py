"""Results as Parquet beside CSV (issue 26, item 8): `--parquet FILE` wherever a command has `--csv`, the
same columns and values as the CSV, provenance included; without the `parquet` extra a one-line error
before any work."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from zensim.cli import build_parser, main
from zensim.sim import run as run_mod
from zensim.trace.synth import SynthParams, synthesize


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    synthesize(path, 8, [("w", 4000)], SynthParams(0.02, 0.3, 1.0), iterations=2, seed=3)
    return path


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every (sub)command's parser by its full name ('trace synth')."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[f"{prefix}{name}"] = sub
                found.update(_commands(sub, f"{prefix}{name} "))
    return found


def test_every_command_with_csv_has_parquet():
    commands = _commands(build_parser())
    with_csv = sorted(name for name, p in commands.items() if "--csv" in p._option_string_actions)
    assert {"simulate", "report", "emulate", "iteration", "converge", "partition"} <= set(with_csv)
    assert [name for name in with_csv if "--parquet" not in commands[name]._option_string_actions] == []


def _same_table(csv: Path, parquet: Path) -> pd.DataFrame:
    """The Parquet file as pandas reads it, checked equal to the CSV as pandas reads it."""
    got = pd.read_parquet(parquet)
    pd.testing.assert_frame_equal(got, pd.read_csv(csv))
    return got


def test_simulate_parquet_holds_the_csv_rows_and_provenance(trace, tmp_path, capsys):
    csv, parquet = tmp_path / "r.csv", tmp_path / "r.parquet"
    assert main(["simulate", "--trace", str(trace), "--machines", "4", "--scheme", "zen,sparcml,dense-allreduce",
                 "--csv", str(csv), "--parquet", str(parquet)]) == 0
    table = _same_table(csv, parquet)
    assert list(table["scheme"]) == ["zen", "sparcml", "dense-allreduce"]
    assert table["time_s"].dtype == float and (table["time_s"] > 0).all()
    assert set(table["provenance.command"]) == {f"zensim simulate --trace {trace} --machines 4 --scheme "
                                                f"zen,sparcml,dense-allreduce --csv {csv} --parquet {parquet}"}
    assert {"provenance.zensim", "provenance.commit", "provenance.created", "trace.sha256"} <= set(table.columns)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.parquet"]  # no temporary file left


def test_partition_parquet_holds_the_csv_rows(trace, tmp_path, capsys):
    csv, parquet = tmp_path / "p.csv", tmp_path / "p.parquet"
    assert main(["partition", str(trace), "--csv", str(csv), "--parquet", str(parquet)]) == 0
    table = _same_table(csv, parquet)
    assert len(table) == 2 * 4 and table["provenance.command"].str.startswith("zensim partition").all()


def test_parquet_without_the_extra_is_one_line_before_any_work(trace, tmp_path, monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] == "pyarrow" else real(name, *a))

    def boom(*args, **kwargs):
        raise AssertionError("simulated before the outputs were checked")
    monkeypatch.setattr(run_mod, "simulate", boom)
    assert main(["simulate", "--trace", str(trace), "--machines", "4", "--scheme", "zen",
                 "--csv", str(tmp_path / "r.csv"), "--parquet", str(tmp_path / "r.parquet")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("zensim: error: --parquet: needs pyarrow, which is not installed "
                   "(pip install 'zensim[parquet]')")
    assert list(tmp_path.iterdir()) == []


def _scenario(tmp_path: Path, trace: Path, body: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"trace: {trace}\n{body}\noutputs: {{csv: out/r.csv, parquet: out/r.parquet}}\n")
    return path


def test_scenario_parquet_output_holds_the_csv_rows(trace, tmp_path, capsys):
    """outputs.parquet: the csv output's table as Parquet, for a sweep and for training iterations."""
    sweep = _scenario(tmp_path, trace, "schemes: [zen, dense-allreduce]\nsweep: {machines: [2, 4]}")
    assert main(["sweep", str(sweep), "--out", str(tmp_path), "--workers", "0", "--cache", "none"]) == 0
    table = _same_table(tmp_path / "out" / "r.csv", tmp_path / "out" / "r.parquet")
    assert list(zip(table["gpus"], table["scheme"])) == [(2, "zen"), (2, "dense-allreduce"),
                                                            (4, "zen"), (4, "dense-allreduce")]
    deepfm = Path(__file__).resolve().parents[1] / "traces" / "deepfm-128w.zt"
    training = _scenario(tmp_path, deepfm, "schemes: [zen]\ncluster: {machines: 2}\ntraining: {device: v100, "
                                           "iterations: 1}")
    assert main(["run", str(training), "--out", str(tmp_path / "t")]) == 0
    table = _same_table(tmp_path / "t" / "out" / "r.csv", tmp_path / "t" / "out" / "r.parquet")
    assert list(table["scheme"]) == ["dense-allreduce", "zen"] and (table["iteration_s"] > 0).all()


def test_scenario_parquet_without_the_extra_is_one_line_before_any_work(trace, tmp_path, monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] == "pyarrow" else real(name, *a))
    path = _scenario(tmp_path, trace, "schemes: [zen]\nsweep: {machines: [2, 4]}")
    assert main(["sweep", str(path), "--out", str(tmp_path), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"zensim: error: {path}: outputs.parquet: needs pyarrow, which is not installed "
                   "(pip install 'zensim[parquet]')")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]
