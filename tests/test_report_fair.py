"""Fair by default (issue 26, item 4): every table and plot puts lossless schemes first and marks the
lossy ones (from the schemes' capabilities, recorded with each simulated record), defines its columns
where it shows them, gives every series its own style, and writes GPU counts on its axes."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from zensim.replay.iterations import ReplayIterationRecord, summarize
from zensim.replay.report import iterations_figure, render_iterations, render_summary, render_training
from zensim.replay.training import TrainingRecord, loss_figure
from zensim.report.iteration import SimulatedIterationRecord
from zensim.report.iteration import iteration_table, throughput_figure
from zensim.report.plots import LOSSY_LEGEND, comparison_figure, run_figure, sweep_figure
from zensim.report.record import SCHEMA, RunRecord
from zensim.report.runs import split_runs
from zensim.report.table import render_comparison, render_records, render_sweep
from zensim.schemes import build_scheme
from zensim.sim import simulate
from zensim.sim.cluster import build_cluster
from zensim.trace.synth import SynthParams, synthesize
from zensim.train.fusion.plots import strategy_figure

LOSSY = {"spardl", "gtopk"}


def record(scheme: str, time_s: float, *, gpus: int = 16, point: int | None = None, machines: int = 16,
           run: str = "a") -> RunRecord:
    """A simulated record of `scheme` (lossy when in LOSSY), at sweep point `point` over machines."""
    sweep = {} if point is None else {"machines": machines}
    return RunRecord(scheme, "simulated", "maxmin", "flat", gpus, time_s, time_s / 2e-3, [100, 200], [150, 150],
                     lossless=scheme not in LOSSY, program=scheme, point=point, sweep=sweep,
                     cluster={"description": run, "machines": machines}, trace={"path": "t.zt", "sha256": "ab"})


def scheme_rows(table: str, names) -> list[list[str]]:
    """The rows of `table` that start with one of `names`, split into cells."""
    return [line.split() for line in table.splitlines() if line.split() and line.split()[0] in names]


def test_simulated_records_carry_the_schemes_capabilities(tmp_path):
    """simulate() records each scheme's lossless capability, as the scheme registry builds it."""
    path = tmp_path / "t.zt"
    synthesize(path, 4, [("w", 4000)], SynthParams(0.05), iterations=1, seed=1)
    names = ["zen", "spardl", "gtopk", "dense-allreduce"]
    records = simulate(path, names, build_cluster(4, 1, nic="25Gbps")[0], "fifo")
    assert [r.lossless for r in records] == [build_scheme(n, 4, 4000).caps.lossless for n in names]
    assert [r.lossless for r in records] == [True, False, False, True]
    assert RunRecord.from_dict(records[1].to_dict()).lossless is False


def test_run_table_puts_lossless_first_and_marks_the_lossy_ones():
    table = render_records([record("spardl", 1e-3), record("zen", 2e-3), record("gtopk", 1.5e-3),
                            record("dense-allreduce", 4e-3)])
    rows = scheme_rows(table, ["zen", "spardl", "gtopk", "dense-allreduce"])
    assert [row[0] for row in rows] == ["zen", "dense-allreduce", "spardl", "gtopk"]
    assert [row[1] for row in rows] == ["2", "4", "yes", "yes"]  # the lossy column, empty on lossless rows
    head = table.splitlines()[1].split()
    assert head[:3] == ["scheme", "lossy", "time"]
    notes = {line.split(":")[0].strip() for line in table.splitlines() if line.startswith("  ")}
    assert {"lossy", "vs dense", "max sent MB"} <= notes


def test_run_table_of_lossless_schemes_has_no_lossy_column():
    table = render_records([record("zen", 2e-3), record("dense-allreduce", 4e-3)])
    assert "lossy" not in table


def test_sweep_and_comparison_tables_put_lossless_first_and_mark_the_lossy_ones():
    records = [record(s, t * m, point=i, machines=m) for i, m in enumerate((2, 4))
               for s, t in (("spardl", 1e-3), ("zen", 2e-3), ("dense-allreduce", 4e-3))]
    sweep = render_sweep(records)
    assert [row[:2] for row in scheme_rows(sweep, ["zen", "spardl", "dense-allreduce"])] == [
        ["zen", "2"], ["dense-allreduce", "4"], ["spardl", "yes"]]
    assert "  lossy: yes: the scheme does not end with the dense sum" in sweep and "  dense ms: " in sweep
    runs = split_runs([record(s, t, run=run) for run in ("a", "b") for s, t in (("gtopk", 1e-3), ("zen", 2e-3))])
    comparison = render_comparison(runs)
    assert [row[:2] for row in scheme_rows(comparison, ["zen", "gtopk"])] == [["zen", "2"], ["gtopk", "yes"]]
    assert "  lossy: " in comparison and "  B/A: " in comparison and "  A vs dense: " in comparison


def _lines(ax):
    """The labelled lines of `ax` (matplotlib names unlabelled ones '_child...')."""
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_sweep_figure_gives_18_series_18_styles_lossy_dotted_and_gpu_ticks():
    """18 schemes (two lossy, first in input order): 18 distinct (colour, marker) pairs on each
    panel, lossless lines first, the lossy ones dotted and labelled, the legend note, GPU counts."""
    names = ["spardl", "gtopk", *(f"s{i}" for i in range(16))]
    records = [record(s, (k + 1) * 1e-4 * m, gpus=8 * m, point=i, machines=m)
               for i, m in enumerate((2, 4, 8, 16)) for k, s in enumerate(names)]
    fig = sweep_figure(split_runs(records), "machines")
    fig.canvas.draw()
    for ax in fig.axes:
        lines = _lines(ax)
        assert len({(str(line.get_color()), line.get_marker()) for line in lines}) == 18
        labels = [line.get_label() for line in lines]
        assert labels[-2:] == ["spardl (lossy)", "gtopk (lossy)"] and labels[0] == "s0"
        assert [line.get_linestyle() for line in lines[-2:]] == [":", ":"]
        assert {line.get_linestyle() for line in lines[:-2]} == {"-"}
        assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "32", "64", "128"]
        assert ax.get_xlabel() == "GPUs"
    assert LOSSY_LEGEND in [t.get_text() for t in fig.texts]


def test_bar_figures_put_lossless_first_and_label_the_lossy_ones():
    records = [record("spardl", 1e-3), record("zen", 2e-3), record("dense-allreduce", 4e-3)]
    fig = run_figure(records)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["zen", "dense-allreduce", "spardl (lossy)"]
    assert LOSSY_LEGEND in [t.get_text() for t in fig.texts]
    fig = comparison_figure(split_runs([record(s, t, run=run) for run in ("a", "b") for s, t in
                                        (("gtopk", 1e-3), ("zen", 2e-3))]))
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["zen", "gtopk (lossy)"]


@pytest.mark.parametrize("count", [3, 12])
def test_throughput_figure_writes_gpu_counts_and_keeps_the_legend_off_the_lines(count):
    records = [SimpleNamespace(scheme=f"s{k}", gpus=g, samples_per_s=1e3 * g * (k + 1), speedup_vs_dense=1 + k / 10)
               for k in range(count) for g in (16, 32, 64, 128)]
    fig = throughput_figure(records, "title")
    fig.canvas.draw()
    for ax in fig.axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "32", "64", "128"]
        assert ax.get_legend() is None  # the legend is the figure's, below the panels
        assert len({(str(line.get_color()), line.get_marker()) for line in _lines(ax)}) == count
    assert len(fig.legends) == 1


def iteration_record(method: str, it: int, lossless: bool) -> ReplayIterationRecord:
    """A replay record of `method` at iteration `it`."""
    return ReplayIterationRecord(method, it, 1e-3 * (it + 1), 1000, 0.01, 0.02, 0.01, 0.015, 2.0, 0.5, 1e-7, 0, 0.1,
                           lossless)


def test_replay_tables_put_lossless_methods_first_and_define_their_columns():
    records = [iteration_record(m, it, m != "spardl") for m in ("spardl", "zen", "sparcml") for it in range(3)]
    summary = render_summary(summarize(records))
    assert [row[:2] for row in scheme_rows(summary, ["spardl", "zen", "sparcml"])] == [
        ["zen", "3"], ["sparcml", "3"], ["spardl", "yes"]]
    notes = {line.split(":")[0].strip() for line in summary.splitlines() if line.startswith("  ")}
    assert {"lossy", "d", "d'", "|d'-d|", "f(t)", "global err", "kept err"} <= notes
    per_iteration = render_iterations(records, "zen")
    assert "  f(t): the padding cost" in per_iteration and "  global err: global error" in per_iteration
    training = render_training([{"method": "gtopk", "iterations": 2, "final_loss": 1.0, "test_loss": None,
                                 "test_accuracy": None, "density_mean": 0.1, "sync_s_mean": 0.1, "clock_s": 1.0,
                                 "lossless": False}])
    assert "  lossy: " in training and "  clock s: " in training and "  d': " in training


@pytest.mark.parametrize("figure", ["iterations", "loss"])
def test_replay_figures_give_every_method_its_style_lossy_dotted(figure):
    methods = ["spardl", *(f"m{i}" for i in range(11))]
    if figure == "iterations":
        fig = iterations_figure([iteration_record(m, it, m != "spardl") for m in methods for it in range(4)])
    else:
        fig = loss_figure([TrainingRecord(m, it, 1.0 / (it + 1), 0.1, 0.2 * it, 0.01, None, None, m != "spardl")
                           for m in methods for it in range(4)])
    for ax in fig.axes:
        lines = [line for line in _lines(ax) if line.get_label() != "user-set d"]
        assert len({(str(line.get_color()), line.get_marker()) for line in lines}) == 12
        assert lines[-1].get_label() == "spardl (lossy)" and lines[-1].get_linestyle() == ":"
        assert ax.get_legend() is None
    assert len(fig.legends) == 1 and LOSSY_LEGEND in [t.get_text() for t in fig.texts]
    if figure == "iterations":  # iterations are whole numbers on the axis
        fig.canvas.draw()
        assert all("." not in t.get_text() for t in fig.axes[-1].get_xticklabels())


def test_iteration_table_defines_its_columns():
    record = SimulatedIterationRecord("zen", "2x8", 2, 16, "zen", "maxmin", "ddp", "v100", "measured", 32, 512, 3, 0.1,
                                  [0.1] * 3, 0.08, 0.02, 5120.0, 1.2, 0.12, 1e6, "nic-up 0", 0.5, [], 10, 0.1)
    table = iteration_table([record])
    notes = {line.split(":")[0].strip() for line in table.splitlines() if line.startswith("  ")}
    assert notes == {"iteration ms", "compute ms", "exposed ms", "samples/s", "vs dense", "NIC MB/it", "buckets",
                     "util"}


def test_records_without_the_capability_take_it_from_the_registry(tmp_path, capsys):
    """Files written before `lossless` was recorded: `zensim report` fills it in from the registry (the
    report layer itself reads only what records say)."""
    from zensim.cli import main
    from zensim.schemes.registry import with_lossless

    old = [RunRecord(s, "emulated", "emulated", "flat", 4, t, None, [1], [1]) for s, t in (("gtopk", 1e-3),
                                                                                            ("zen", 2e-3))]
    assert [r.lossless for r in with_lossless(old)] == [False, True]
    assert [row[:2] for row in scheme_rows(render_records(with_lossless(old)), ["zen", "gtopk"])] == \
        [["zen", "2"], ["gtopk", "yes"]]
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema": SCHEMA, "records": [{k: v for k, v in r.to_dict().items() if k != "lossless"}
                                                               for r in old]}))
    assert main(["report", str(path)]) == 0
    assert [row[:2] for row in scheme_rows(capsys.readouterr().out, ["zen", "gtopk"])] == [["zen", "2"], ["gtopk", "yes"]]


def test_emulated_records_carry_the_schemes_capabilities():
    from emulate.summary import run_records

    summaries = [{"kind": "scheme", "name": name, "time_s": 1e-3, "sent": [1], "received": [1], "repeats": 1,
                  "errors": [], "times_s": [1e-3], "correct": True, "wire_tx": [1], "control_sent": [0],
                  "stages": []} for name in ("zen", "gtopk")]
    cluster = {"ranks": 4, "rate_bps": 1e8}
    assert [r.lossless for r in run_records(summaries, {}, cluster, {})] == [True, False]


def test_fusion_strategy_figure_gives_every_line_its_own_style():
    """15 swept lines (GPU count x strategy x scheme) and 3 levels: no two share a (colour, marker or
    line style); the legend below the panels."""
    runs = [SimpleNamespace(gpus=g, scheme=s, samples_per_s=1e3 * d + g, strategy={"name": n, "degree": d,
                                                                                 "missing_rate": d / 2})
            for g in (16, 32) for n in ("behind", "none") for s in ("zen", "sparcml", "omnireduce", "agsparse-ring")
            for d in (0.25, 0.5)][:-2]
    runs += [SimpleNamespace(gpus=16, scheme="zen", samples_per_s=500.0 * k, strategy={"name": n, "degree": None})
             for k, n in enumerate(("cupcake", "safusion", "espresso"))]
    fig = strategy_figure(runs, "title")
    lines = [line for line in _lines(fig.axes[0]) if line.get_marker() not in ("None", None, "")]
    levels = [line for line in _lines(fig.axes[0]) if line.get_marker() in ("None", None, "")]
    assert len(lines) == 15 and len({(str(line.get_color()), line.get_marker()) for line in lines}) == 15
    assert len(levels) == 3 and len({(str(line.get_color()), line.get_linestyle()) for line in levels + lines}) == 18
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1
