"""One record type for simulated and emulated runs (kernel item 4a, issue 12 item 4): provenance in every
record, exact JSON and CSV round trips, `zensim report` re-rendering and comparing without simulating,
plots whose series never share a colour and marker, pandas DataFrames."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import matplotlib.colors as mcolors
import pytest

import zensim
from zensim.cli import main
from zensim.errors import ConfigError
from zensim.report.plots import comparison_figure, run_figure, series_styles, sweep_figure
from zensim.report.record import ORDER, Emulated, RunRecord, load_results, results_csv, results_json, to_dataframe
from zensim.report.runs import group_sweep, same_program, split_runs
from zensim.sim import run as run_mod
from zensim.sim.cluster import build_cluster
from zensim.sim.run import simulate
from zensim.trace.synth import SynthParams, synthesize

SCHEMES = ["dense-allreduce", "zen", "zen-coo", "p2p-parallel-balanced", "sparcml", "hier-central", "agsparse-ring"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    synthesize(path, 8, [("w", 6000)], SynthParams(0.02, 0.4, 2.0), iterations=2, seed=5)
    return path


@pytest.fixture(scope="module")
def records(trace: Path) -> list[RunRecord]:
    cluster, _ = build_cluster(4, 2, nic="10Gbps", nic_latency="3us", nvlink_latency="1us")
    return simulate(trace, SCHEMES, cluster, "maxmin", iteration=1)


def emulated(trace: Path) -> list[RunRecord]:
    """Records as emulate.summary.run_records makes them from an emulation's summaries."""
    from emulate.summary import run_records
    from zensim.report.provenance import provenance, trace_info
    from zensim.trace import Trace

    summaries = [{"kind": "scheme", "name": name, "ranks": 2, "repeats": 3, "time_s": t, "min_s": t * 0.9,
                  "max_s": t * 1.2, "times_s": [t * 0.9, t, t * 1.2], "sent": [100, 120], "received": [110, 110],
                  "wire_tx": [300, 320], "correct": name != "zen", "control_sent": [8, 8], "stages": 2,
                  "errors": ["rank 1: wrong; values differ"] if name == "zen" else []}
                 for name, t in (("dense-allreduce", 0.02), ("zen", 0.005))]
    summaries.append({"kind": "peer", "name": "dense", "ranks": 2, "repeats": 3, "time_s": 0.01, "min_s": 0.01,
                      "max_s": 0.01, "times_s": [0.01] * 3, "sent": [None, None], "received": [None, None],
                      "wire_tx": [1, 2], "correct": True, "errors": []})
    cluster = {"ranks": 2, "rate_bps": 200e6, "tbf_burst_bytes": 1, "tbf_limit_bytes": 2, "mtu": 1500,
               "subnet": "10.0.0.0/24", "bridge_ns": "zsim-br"}
    with Trace.open(trace) as t:
        return run_records(summaries, trace_info(t, 0), cluster, provenance("zensim emulate ..."))


def test_every_record_says_what_made_it(trace, records):
    sha = hashlib.sha256(trace.read_bytes()).hexdigest()
    for rec in records:
        assert rec.source == "simulated" and rec.model == "maxmin"
        assert rec.trace == {"path": str(trace), "sha256": sha, "iteration": 1, "workers": 8, "numel": 6000,
                             "workload": rec.trace["workload"]}
        assert rec.cluster["machines"] == 4 and rec.cluster["gpus_per_machine"] == 2
        assert rec.cluster["nic_bandwidth"] == 10e9 / 8 and rec.cluster["nvlink_bandwidth"] == 300e9
        assert rec.cluster["nic_latency"] == pytest.approx(3e-6) and rec.cluster["nvlink_latency"] == pytest.approx(1e-6)
        assert rec.cluster["description"].startswith("4x2 GPUs, NIC 10Gbps")
        assert rec.provenance["zensim"] == zensim.__version__
        assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", rec.provenance["commit"])  # tests run from a git checkout
        assert rec.provenance["command"] is None and rec.provenance["created"]


def test_cli_records_carry_the_command(trace, capsys):
    argv = ["simulate", "--trace", str(trace), "--machines", "2", "--scheme", "zen", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "zensim-results/1"
    assert doc["records"][0]["provenance"]["command"] == "zensim " + " ".join(argv)


def test_version_names_the_commit():
    out = subprocess.run([sys.executable, "-m", "zensim.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert re.fullmatch(rf"zensim {re.escape(zensim.__version__)} \(commit [0-9a-f]{{40}}(\+dirty)?\)\n", out.stdout)


def _saved(recs: list[RunRecord]) -> list[dict]:
    return [r.to_dict() for r in recs]


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_results_round_trip_exactly(trace, records, tmp_path, fmt):
    """Simulated and emulated records, mixed in one file, come back field for field (floats bit for bit)."""
    mixed = records + emulated(trace)
    path = tmp_path / f"r.{fmt}"
    path.write_text(results_json(mixed) if fmt == "json" else results_csv(mixed))
    back = load_results(path)
    assert _saved(back) == _saved(mixed)
    assert [r.time_s for r in back] == [r.time_s for r in mixed]


def test_a_record_has_the_part_of_its_source_and_the_file_is_flat(trace, records):
    """Item 4 of issue 25: what only a simulated or only an emulated run has is a typed part; the results
    file keeps its flat fields in their order (the other source's as defaults)."""
    emu = emulated(trace)
    assert all(r.emulated is None and r.simulated.link_bytes and r.simulated.timing is not None for r in records)
    assert all(r.simulated is None and r.emulated.times_s for r in emu)
    assert all(list(r.to_dict()) == list(ORDER) for r in records + emu)
    assert emu[0].to_dict()["link_bytes"] == [] and records[0].to_dict()["times_s"] == []
    with pytest.raises(ValueError, match="a simulated record has no emulated part"):
        RunRecord("x", "simulated", "fifo", "flat", 2, emulated=Emulated())


def test_csv_has_dotted_columns_and_number_lists(records):
    rows = list(csv.DictReader(io.StringIO(results_csv(records))))
    assert rows[0]["trace.sha256"] == records[0].trace["sha256"] and rows[0]["cluster.nic_latency"] == repr(3e-6)
    assert rows[0]["bytes_sent"] == ";".join(map(str, records[0].bytes_sent))
    assert "provenance.commit" in rows[0] and "timing" not in rows[0]


@pytest.mark.parametrize("text, message", [
    ("", "not a results file"),
    ("[1, 2]", "expected a zensim-results/1 document"),
    ('{"schema": "zensim-results/1", "records": [{"scheme": "x"}]}', "missing field"),
    ('{"schema": "zensim-results/1", "records": [{"scheme": "x", "source": "simulated", "model": "f", '
     '"layout": "flat", "gpus": 2, "colour": 3}]}', "unknown field(s) colour"),
    ('{"schema": "zensim-results/1", "records": [{"scheme": "x", "source": "measured", "model": "f", '
     '"layout": "flat", "gpus": 2}]}', "source must be one of"),
    ('{"schema": "zensim-results/1", "records": [{"scheme": "x", "source": "emulated", "model": "emulated", '
     '"layout": "flat", "gpus": 2, "link_bytes": [5]}]}', "link_bytes: only a simulated record has it"),
    ("a,b\n1,2\n", "not a results file"),
])
def test_bad_results_files_are_one_line(tmp_path, capsys, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_results(path)
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err


def test_same_program_is_marked(records):
    same = same_program(records)
    assert same == {"p2p-parallel-balanced": "zen-coo", "hier-central": "sparcml"}
    by = {r.scheme: r for r in records}
    assert by["zen"].program != by["zen-coo"].program  # a different pull format: a different program


def test_report_compares_two_runs_without_simulating(trace, tmp_path, capsys, monkeypatch):
    a, b = tmp_path / "a.json", tmp_path / "b.csv"
    common = ["simulate", "--trace", str(trace), "--scheme", "dense-allreduce,zen,sparcml"]
    assert main([*common, "--machines", "4", "--json"]) == 0
    a.write_text(capsys.readouterr().out)
    assert main([*common, "--machines", "8", "--nic", "100Gbps", "--model", "maxmin", "--csv", str(b)]) == 0
    capsys.readouterr()
    monkeypatch.setattr(run_mod, "simulate", lambda *a, **k: pytest.fail("zensim report simulated"))
    plot, merged = tmp_path / "cmp.svg", tmp_path / "all.csv"
    assert main(["report", str(a), str(b), "--plot", str(plot), "--csv", str(merged)]) == 0
    out = capsys.readouterr().out
    ra, rb = load_results(a), load_results(b)
    assert "A = a.json: 4x1 GPUs, NIC 25Gbps" in out and "B = b.csv: 8x1 GPUs, NIC 100Gbps" in out
    comparison = out[out.index("comparison of 2 runs"):]
    line = next(l for l in comparison.splitlines() if l.startswith("zen "))
    cells = line.split()
    assert float(cells[1]) == pytest.approx(ra[1].time_s * 1e3, rel=1e-3)
    assert float(cells[3]) == pytest.approx(rb[1].time_s / ra[1].time_s, rel=1e-3)
    diffs = out[out.index("parameters that differ:"):]
    assert "model: A=fifo | B=maxmin" in diffs and "cluster.machines: A=4 | B=8" in diffs
    assert "trace.sha256" not in diffs  # the same trace
    assert plot.read_text().lstrip().startswith("<?xml")
    assert _saved(load_results(merged)) == _saved(ra + rb)


def test_report_of_a_sweep_prints_its_tables(trace, tmp_path, capsys, monkeypatch):
    from zensim.sim import sweep as sweep_mod
    from zensim.sim.scenario import load_scenario

    scn = tmp_path / "s.yaml"
    scn.write_text(f"trace: {trace}\nschemes: [dense-allreduce, zen]\nsweep: {{machines: [2, 4], nic: [10Gbps, 40Gbps]}}\n"
                   "outputs: {json: r.json}\n")
    loaded = load_scenario(scn, tmp_path)
    results = sweep_mod.run_scenario(loaded).results
    sweep_mod.write_outputs(loaded, results)
    monkeypatch.setattr(run_mod, "simulate", lambda *a, **k: pytest.fail("zensim report simulated"))
    assert main(["report", str(tmp_path / "r.json"), "--plot", str(tmp_path / "p.png")]) == 2  # two groups
    assert "one figure each" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert out == sweep_mod.render_results(results) + "\n"
    assert "time / dense ring all-reduce, nic=10Gbps" in out and "machines=2" in out


def _line_styles(fig) -> list[tuple[str, str]]:
    return [(mcolors.to_hex(line.get_color()), line.get_marker()) for line in fig.axes[0].get_lines()
            if line.get_label() and not line.get_label().startswith("_")]


def test_series_styles_are_distinct():
    styles = series_styles(230)
    assert len({(mcolors.to_hex(c), m) for c, m in styles[:220]}) == 220
    assert len({mcolors.to_hex(c) for c, _ in styles[:20]}) == 20


def test_sweep_figure_styles_titles_and_marks(trace):
    recs = []
    for point, machines in enumerate((2, 4, 8)):
        cluster, _ = build_cluster(machines, 1)
        for rec in simulate(trace, ["all"], cluster, "fifo"):
            rec.point, rec.sweep = point, {"machines": machines}
            recs.append(rec)
    ((group, x_key, runs),) = group_sweep(recs)
    fig = sweep_figure(runs, x_key, group)
    styles = _line_styles(fig)
    assert len(styles) == len(runs[0].records) and len(set(styles)) == len(styles)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert "hier-central = sparcml" in labels and "p2p-parallel-balanced = zen-coo" in labels
    title = fig._suptitle.get_text()
    assert "trace t.zt (sha256" in title and "iteration 0" in title and "1x1 GPUs" not in title
    assert [ax.get_ylabel() for ax in fig.axes[:3]] == ["time (ms)", "time / dense ring all-reduce",
                                                        "max MB sent per rank"]


def test_run_and_comparison_figures(records, trace):
    fig = run_figure(records)
    assert "trace t.zt" in fig._suptitle.get_text() and "4x2 GPUs" in fig._suptitle.get_text()
    assert [ax.get_xlabel() for ax in fig.axes[:3]] == ["time (ms)", "time / dense ring all-reduce", "MB sent per rank"]
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "hier-central = sparcml" in ticks
    runs = split_runs(records, "sim") + split_runs(emulated(trace), "emu")
    fig = comparison_figure(runs)
    assert len(fig.axes[0].containers) == 2
    assert [ax.get_xlabel() for ax in fig.axes[:4]] == ["time (ms)", "time / run A's time",
                                                        "time / dense ring all-reduce", "max MB sent per rank"]
    title = fig._suptitle.get_text()
    assert "trace t.zt" in title and "A: 4x2 GPUs" in title and "B: emulated 2 ranks" in title
    # the same program in both simulated runs of a comparison of two clusters: marked
    other = simulate(trace, SCHEMES, build_cluster(4, 2, nic="40Gbps")[0], "maxmin", iteration=1)
    fig = comparison_figure(split_runs(records, "a") + split_runs(other, "b"))
    assert "hier-central = sparcml" in [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len({tuple(bar.get_facecolor()) for c in fig.axes[0].containers for bar in c}) == 2


def test_emulated_records_go_through_the_same_table(trace):
    from zensim.report.table import render

    text = render(emulated(trace))
    head, columns = text.splitlines()[:2]
    assert head.startswith("emulated 2 ranks x 200Mbps NIC") and "trace" in head
    assert columns.split() == ["scheme", "time", "ms", "min", "ms", "max", "ms", "vs", "dense", "max", "sent", "MB",
                               "max", "recv", "MB", "correct"]
    assert "dense (torch)" in text and " NO" in text


def test_dataframe(records):
    df = to_dataframe(records)
    assert list(df["scheme"]) == SCHEMES
    assert (df["trace.sha256"] == records[0].trace["sha256"]).all() and "cluster.nic_latency" in df.columns


def test_dataframe_without_pandas(records, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ConfigError, match="pandas is not installed"):
        to_dataframe(records)
