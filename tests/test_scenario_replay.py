"""A scenario's iterations: section replays sparsifier + scheme pairs over iterations of a dense
trace (as `zensim simulate --iterations`): one record per (point, method, iteration), the same
figures as the command, every value applied or kept; bad sections are one-line errors naming the key."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.replay import make_methods, replay_iterations
from zensim.sim.scenario import load_scenario
from zensim.sim.sweep import records_of, run_scenario, write_outputs
from zensim.trace import Trace
from zensim.trace.gradients import TraceGradients

DIGITS = Path(__file__).resolve().parent.parent / "traces" / "digits-cnn-16w.zt"


def scenario(folder: Path, body: str) -> Path:
    path = folder / "replay.yaml"
    path.write_text(f"trace: {DIGITS}\ncluster: {{nic: 10Gbps, nic_latency: 20us}}\n{body}")
    return path


def test_replay_scenario_sweeps_and_equals_the_replay(tmp_path: Path) -> None:
    path = scenario(tmp_path, "schemes: [topka, spardl, exdyna+cltk]\noptions: {teams: 2}\n"
                              "iterations: {range: '2:6', density: 0.02}\nsweep: {machines: [4, 8]}\n"
                              "outputs: {csv: r.csv, plot: 'r-{machines}.png', json: r.json}\n")
    scn = load_scenario(path, tmp_path)
    outcome = run_scenario(scn)
    assert not outcome.failures
    write_outputs(scn, outcome.results)
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert len(rows) == 2 * 3 * 4  # points x methods x iterations
    assert {r["method"] for r in rows} == {"topka", "spardl", "exdyna+cltk"}
    assert all(float(r["conservation"]) < 1e-5 for r in rows)
    assert (tmp_path / "r-4.png").stat().st_size and (tmp_path / "r-8.png").stat().st_size
    point, records = outcome.results[1]
    with Trace.open(DIGITS) as t:
        source = TraceGradients(t)
        methods = make_methods("topka,spardl,exdyna+cltk", None, 0.02, 8, source.numel, 0, {"teams": 2}, default=[])
        want = replay_iterations(source, methods, 2, 6, Costs.of(point.cluster, point.profile))
    assert [(r.method, r.iteration, r.bytes, r.actual_density, r.time_s) for r in records] == \
        [(r.method, r.iteration, r.bytes, r.actual_density, r.time_s) for r in want]
    assert len(records_of(outcome.results)) == 24


@pytest.mark.parametrize("body,key", [
    ("iterations: '0:999'\n", "iterations: 0:999: must satisfy"),
    ("iterations: {range: 3}\n", "iterations.range: expected A:B"),
    ("iterations: {range: '0:4', density: 2}\n", "iterations.density: expected a number in (0, 1]"),
    ("iterations: '0:4'\nschemes: [spardl+nosuch]\n", "schemes: --scheme spardl+nosuch: unknown sparsifier 'nosuch'"),
    ("iterations: '0:4'\noptions: {nosuch: 1}\n", "options.nosuch: no scheme of"),
    ("iterations: '0:4'\noutputs: {timeline: t.json}\n", "outputs.timeline: not with iterations:"),
])
def test_bad_iterations_section_is_one_line(tmp_path: Path, body: str, key: str) -> None:
    path = scenario(tmp_path, body)
    with pytest.raises(ConfigError) as err:
        load_scenario(path, tmp_path)
    assert str(err.value).startswith(f"{path}: ") and key in str(err.value) and "\n" not in str(err.value)
