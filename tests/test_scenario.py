"""YAML scenarios and sweeps: schema errors name the file and key, a sweep is the cartesian product of
points and each row is what simulate() gives for that point, outputs are written whole or not at all."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from zensim.cli import main
from zensim.errors import ConfigError
from zensim.sim import run as run_mod
from zensim.sim.cluster import build_cluster
from zensim.sim.run import simulate
from zensim.sim.scenario import load_scenario
from zensim.sim.sweep import records_of, run_scenario, write_outputs
from zensim.trace import TensorSpec, TraceWriter

NUMEL = 3000
SCHEMES = ["dense-allreduce", "zen", "agsparse-ring"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny synthetic trace: 8 workers, 2 iterations, ~5% density with a hot range (skew)."""
    path = tmp_path_factory.mktemp("trace") / "tiny.zt"
    rng = np.random.default_rng(7)
    with TraceWriter(path, [TensorSpec("w", NUMEL)], workers=8, iterations=2) as w:
        for it, worker in itertools.product(range(2), range(8)):
            idx = np.concatenate([rng.choice(NUMEL, 80, replace=False), rng.choice(200, 60, replace=False)])
            w.write(it, worker, 0, np.unique(idx))
    return path


def write_scenario(folder: Path, text: str, name: str = "scn.yaml") -> Path:
    """Write a scenario file into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


GOOD = """
trace: {{path: {trace}, iteration: 1}}
cluster: {{gpus_per_machine: 1, nic: 10Gbps, nic_latency: 2us}}
schemes: [dense-allreduce, zen, agsparse-ring]
sweep:
  machines: [2, 4, 8]
  nic: [10Gbps, 40Gbps]
model: [fifo, maxmin]
"""


@pytest.mark.parametrize("body, key", [
    ("trace: {path: T}\nclustr: {machines: 2}\n", "clustr"),
    ("trace: {path: T}\ncluster: {machines: 2, nics: 1Gbps}\n", "cluster.nics"),
    ("trace: {path: T}\nsweep: {trace: [a, b]}\n", "sweep.trace"),
    ("trace: {path: T}\noutputs: {pdf: x.pdf}\n", "outputs.pdf"),
    ("trace: {path: T, iter: 1}\n", "trace.iter"),
    ("trace: {path: T}\ncluster: {machines: 2, nic: 25Gbs}\n", "cluster.nic"),
    ("trace: {path: T}\ncluster: {machines: 2, nic: 25}\n", "cluster.nic"),
    ("trace: {path: T}\ncluster: {machines: 2, nic_latency: 5 parsecs}\n", "cluster.nic_latency"),
    ("trace: {path: T}\nsweep: {machines: [2, 4], nic: [1Gbps, fast]}\n", "sweep.nic"),
    ("cluster: {machines: 2}\n", "trace"),
    ("trace: {path: missing.zt}\n", "trace.path"),
    ("trace: {path: T}\ncluster: {machines: eight}\n", "cluster.machines"),
    ("trace: {path: T}\ncluster: {machines: 2.5}\n", "cluster.machines"),
    ("trace: {path: T}\ncluster: [2, 1]\n", "cluster"),
    ("trace: {path: T, iteration: -1}\n", "trace.iteration"),
    ("trace: {path: T}\nschemes: 3\n", "schemes"),
    ("trace: {path: T}\nschemes: [zen, nope]\n", "schemes"),
    ("trace: {path: T}\nmodel: tcp\n", "model"),
    ("trace: {path: T}\nmodel: [fifo, tcp]\n", "model"),
    ("trace: {path: T}\nsweep: {machines: 4}\n", "sweep.machines"),
    ("trace: {path: T}\nsweep: {machines: []}\n", "sweep.machines"),
    ("trace: {path: T}\nmodel: [fifo]\nsweep: {model: [maxmin]}\n", "model"),
    ("trace: {path: T}\ncluster: {fabric: torus}\n", "cluster.fabric"),
    ("trace: {path: T}\ncluster: {oversubscription: 0.5}\n", "cluster.oversubscription"),
    ("trace: {path: T}\ncluster: {machines: 16}\n", "cluster"),
    ("trace: {path: T, iteration: 2}\ncluster: {machines: 2}\n", "trace.iteration"),
    ("trace: {path: T}\ncluster: {machines: 2}\nmodel: analytic\noutputs: {timeline: t.json}\n", "outputs.timeline"),
    ("trace: {path: T}\ncluster: {machines: 2, profile: nothere.json}\n", "cluster.profile"),
    ("trace: {path: T}\nsweep: {machines: [2, 4]}\nmodel: [fifo, maxmin]\noutputs: {plot: p.png}\n", "outputs.plot"),
    ("trace: {path: T}\nsweep: {machines: [2, 4]}\noutputs: {plot: 'p-{nic}.png'}\n", "outputs.plot"),
])
def test_schema_errors_name_file_and_key(tmp_path: Path, trace: Path, body: str, key: str,
                                         capsys: pytest.CaptureFixture) -> None:
    assert_refused(write_scenario(tmp_path, body.replace("{path: T", f"{{path: {trace}")), key, capsys)


def assert_refused(path: Path, key: str, capsys: pytest.CaptureFixture) -> None:
    """Loading the scenario is a one-line ConfigError naming the file and `key`; `zensim run` exits 2."""
    with pytest.raises(ConfigError) as err:
        load_scenario(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {key}") and "\n" not in message
    assert main(["run", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"zensim: error: {path}: ")


def test_unreadable_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"scenario not found"):
        load_scenario(tmp_path / "nothing.yaml")
    bad = write_scenario(tmp_path, "trace: [unclosed\n")
    with pytest.raises(ConfigError, match=rf"^{bad}: not valid YAML"):
        load_scenario(bad)
    with pytest.raises(ConfigError, match=rf"^{bad}: a scenario is a YAML mapping"):
        load_scenario(write_scenario(tmp_path, "- just\n- a list\n"))


def test_non_utf8_scenario_is_one_line(tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(f"trace: {trace}\n# caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=rf"^{path}: not UTF-8 text \(byte 0xe9 at offset \d+\)$"):
        load_scenario(path)
    assert main(["run", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("body, line, key", [
    ("trace: T\ncluster: {machines: 2}\ncluster: {machines: 4}\n", 3, "cluster"),
    ("trace: T\ncluster:\n  machines: 2\n  nic: 1Gbps\n  machines: 4\n", 5, "machines"),
    ("trace: T\ncluster: {machines: 2, machines: 4}\n", 2, "machines"),
    ("trace: T\nsweep: {nic: [1Gbps]}\nmodel: fifo\nsweep: {machines: [2, 4]}\n", 4, "sweep"),
])
def test_duplicate_keys_are_refused(tmp_path: Path, trace: Path, body: str, line: int, key: str) -> None:
    path = write_scenario(tmp_path, body.replace("trace: T", f"trace: {trace}"))
    with pytest.raises(ConfigError, match=rf"^{path}: line {line}: duplicate key '{key}' \(first given at line \d\)$"):
        load_scenario(path)


@pytest.mark.parametrize("body, key", [
    ("cluster: {machines: 4, oversubscription: 2}\n", "cluster.oversubscription"),
    ("cluster: {machines: 4, machines_per_leaf: 2}\n", "cluster.machines_per_leaf"),
    ("cluster: {machines: 4}\nsweep: {oversubscription: [1, 2]}\n", "sweep.oversubscription"),
    ("cluster: {machines: 4, oversubscription: 2}\nsweep: {fabric: [leafspine, switch]}\n", "cluster.oversubscription"),
])
def test_leafspine_keys_without_a_leafspine_are_refused(tmp_path: Path, trace: Path, body: str, key: str) -> None:
    path = write_scenario(tmp_path, f"trace: {trace}\n" + body)
    with pytest.raises(ConfigError, match=rf"^{path}: {key}: only for a leaf-spine fabric \(fabric is 'switch'"):
        load_scenario(path)
    ok = write_scenario(tmp_path, f"trace: {trace}\ncluster: {{fabric: leafspine, machines: 4, oversubscription: 2}}\n",
                        "ok.yaml")
    assert load_scenario(ok).points[0].cluster.oversub == 2.0


def test_fattree_tiers_are_a_cluster_key_and_sweepable(tmp_path: Path, trace: Path) -> None:
    body = f"trace: {trace}\ncluster: {{machines: 8, fabric: fattree}}\nsweep: {{tiers: ['2:1,2:1', '2:1,2:4']}}\n"
    scn = load_scenario(write_scenario(tmp_path, body))
    assert [p.cluster.tiers for p in scn.points] == [((2, 1.0), (2, 1.0)), ((2, 1.0), (2, 4.0))]
    for bad, message in (("cluster: {machines: 8, fabric: fattree}\n", "cluster.tiers: a fat-tree needs its tiers"),
                         ("cluster: {machines: 8, tiers: '2:1'}\n", "cluster.tiers: only for a fat-tree fabric"),
                         ("cluster: {machines: 8, fabric: fattree, tiers: [2, 1]}\n", "cluster.tiers: expected"),
                         ("cluster: {machines: 8, fabric: fattree, tiers: '2x1'}\n", "cluster.tiers: cannot parse")):
        path = write_scenario(tmp_path, f"trace: {trace}\n" + bad, "bad.yaml")
        with pytest.raises(ConfigError, match=rf"^{path}: {message}"):
            load_scenario(path)


def _comparable(row: dict) -> dict:
    """A record's fields without the wall-clock time it took, its sweep point and its provenance."""
    return {k: v for k, v in row.items() if k not in ("wall_s", "driver_s", "log_cached", "point", "sweep", "provenance")}


def test_sweep_is_the_cartesian_product_and_each_row_equals_simulate(tmp_path: Path, trace: Path) -> None:
    scn = load_scenario(write_scenario(tmp_path, GOOD.format(trace=trace)))
    table = [r.to_dict() for r in records_of(run_scenario(scn).results)]
    combos = list(itertools.product([2, 4, 8], ["10Gbps", "40Gbps"], ["fifo", "maxmin"]))
    assert len(table) == len(combos) * len(SCHEMES)
    for i, (machines, nic, model) in enumerate(combos):
        got = table[i * len(SCHEMES):(i + 1) * len(SCHEMES)]
        assert [r["point"] for r in got] == [i] * len(SCHEMES)
        assert all(r["sweep"] == {"machines": machines, "nic": nic, "model": model} for r in got)
        assert all(r["provenance"]["scenario"] == str(scn.path) for r in got)
        cluster, _ = build_cluster(machines, 1, nic=nic, nic_latency="2us")
        direct = simulate(trace, SCHEMES, cluster, model, iteration=1)
        assert [_comparable(r) for r in got] == [_comparable(rec.to_dict()) for rec in direct]


def test_cli_writes_outputs_relative_to_out_and_reads_trace_relative_to_scenario(
        tmp_path: Path, trace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    exp = tmp_path / "exp"
    (exp / "data").mkdir(parents=True)
    (exp / "data" / "t.zt").write_bytes(trace.read_bytes())
    path = write_scenario(exp, """
trace: data/t.zt
cluster: {gpus_per_machine: 2}
schemes: [dense-allreduce, zen]
sweep: {machines: [2, 4]}
outputs: {json: res/r.json, csv: res/r.csv, plot: res/r.png, timeline: res/t.json}
""")
    monkeypatch.chdir(tmp_path)  # neither the scenario's folder nor the output folder
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--json", "--workers", "0"]) == 0
    printed = json.loads(capsys.readouterr().out)
    res = tmp_path / "o" / "res"
    assert sorted(p.name for p in res.iterdir()) == ["r.csv", "r.json", "r.png", "t.json"]  # no temp files left
    assert not (tmp_path / "o" / ".zensim" / "points").exists()  # a timeline needs timings: no point is kept
    assert printed["schema"] == "zensim-results/1"
    assert _comparable(json.loads((res / "r.json").read_text())) == _comparable(printed)
    records = printed["records"]
    assert [r["gpus"] for r in records] == [4, 4, 8, 8] and [r["sweep"]["machines"] for r in records] == [2, 2, 4, 4]
    assert all(r["provenance"]["command"] == f"zensim sweep {path} --out {tmp_path / 'o'} --json --workers 0"
               for r in records)
    with open(res / "r.csv") as f:
        rows = list(csv.DictReader(f))
    assert [row["scheme"] for row in rows] == ["dense-allreduce", "zen"] * 2
    assert [row["sweep.machines"] for row in rows] == ["2", "2", "4", "4"]
    assert (res / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    events = json.loads((res / "t.json").read_text())["traceEvents"]
    assert len({e["pid"] for e in events if e["ph"] == "X"}) == 4  # one process of rank tracks per (point, scheme)
    assert len({e["pid"] for e in events if e["ph"] == "C"}) == 4  # and one of link counters


def test_failed_point_is_reported_keeps_the_others_and_a_rerun_resumes(
        tmp_path: Path, trace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    path = write_scenario(tmp_path, GOOD.format(trace=trace) + "outputs: {csv: r.csv}\n")
    (tmp_path / "r.csv").write_text("earlier results\n")
    calls = []

    def failing(*args: object, **kwargs: object) -> list:
        calls.append(args)
        if len(calls) == 3:
            raise MemoryError("simulated failure at the third point")
        return simulate(*args, **kwargs)

    monkeypatch.setattr(run_mod, "simulate", failing)  # what every point runs (SimulateRequest.run)
    argv = ["run", str(path), "--out", str(tmp_path), "--workers", "0"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "point 2 (machines=2, nic=40Gbps, model=fifo): MemoryError: simulated failure at the third point" in err
    assert "12 points: 0 kept" in err and "11 simulated" in err and "1 failed" in err
    assert (tmp_path / "r.csv").read_text() == "earlier results\n"  # no outputs from an incomplete sweep
    assert sorted(p.name for p in tmp_path.iterdir()) == [".zensim", "r.csv", "scn.yaml"]
    calls.clear()
    monkeypatch.setattr(run_mod, "simulate", lambda *a, **k: calls.append(a) or simulate(*a, **k))
    assert main(argv) == 0  # the rerun simulates only the failed point
    assert len(calls) == 1 and "12 points: 11 kept" in capsys.readouterr().err
    rows = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert [int(r["point"]) for r in rows] == [i for i in range(12) for _ in SCHEMES]
    fresh = tmp_path / "fresh"
    assert main(["run", str(path), "--out", str(fresh), "--workers", "0", "--cache", "none"]) == 0
    capsys.readouterr()
    again = list(csv.DictReader(open(fresh / "r.csv")))
    drop = ("wall_s", "driver_s", "log_cached", "provenance.created", "provenance.command")
    assert [{k: v for k, v in r.items() if k not in drop} for r in again] == \
        [{k: v for k, v in r.items() if k not in drop} for r in rows]
    assert not (fresh / ".zensim").exists()


def test_single_point_scenario_prints_the_simulate_table(tmp_path: Path, trace: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture) -> None:
    monkeypatch.chdir(tmp_path)  # the kept point goes to ./.zensim
    path = write_scenario(tmp_path, f"trace: {trace}\ncluster: {{machines: 4}}\nschemes: [zen]\nmodel: analytic\n")
    scn = load_scenario(path)
    assert not scn.is_sweep and len(scn.points) == 1
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / ".zensim" / "points").is_dir()
    assert out.startswith("4x1 GPUs") and "model analytic" in out and "\nzen " in out
    assert main(["sweep", str(path)]) == 2
    assert "no sweep" in capsys.readouterr().err


def test_sweep_plot_per_value_of_the_other_keys(tmp_path: Path, trace: Path) -> None:
    path = write_scenario(tmp_path, f"trace: {trace}\nsweep: {{machines: [2, 4]}}\nschemes: [zen-coo]\n"
                                    "model: [fifo, analytic]\noutputs: {plot: 'plots/{model}/s.png'}\n")
    scn = load_scenario(path, tmp_path)
    write_outputs(scn, run_scenario(scn).results)
    for model in ("fifo", "analytic"):
        assert (tmp_path / "plots" / model / "s.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["analytic", "fifo"]


def test_write_outputs_creates_folders(tmp_path: Path, trace: Path) -> None:
    path = write_scenario(tmp_path, f"trace: {trace}\ncluster: {{machines: 2}}\nschemes: [zen]\n"
                                    "outputs: {json: a/b/c.json}\n")
    scn = load_scenario(path, tmp_path / "deep")
    write_outputs(scn, run_scenario(scn).results)
    doc = json.loads((tmp_path / "deep" / "a" / "b" / "c.json").read_text())
    assert [r["scheme"] for r in doc["records"]] == ["zen"]


def test_profile_relative_to_scenario_and_explicit_links_win(tmp_path: Path, trace: Path) -> None:
    (tmp_path / "calib.json").write_text('{"schema": "zensim-profile/1", "nic_bandwidth": "1Gbps", '
                                         '"work_seconds_per_element": {"hash": 1e-9}}')
    path = write_scenario(tmp_path, f"trace: {trace}\ncluster: {{machines: 2, profile: calib.json}}\n"
                                    "sweep: {nic_latency: [1us, 3us], nic: [10Gbps]}\n")
    first, second = load_scenario(path).points
    assert first.profile is not None and first.profile.work.per_element["hash"] == 1e-9
    assert first.cluster.nic_bandwidth == 10e9 / 8 and first.cluster.nic_latency == pytest.approx(1e-6)
    assert second.cluster.nic_latency == pytest.approx(3e-6)
    plain = load_scenario(write_scenario(tmp_path, f"trace: {trace}\ncluster: {{machines: 2, profile: calib.json}}\n",
                                         "plain.yaml"))
    assert plain.points[0].cluster.nic_bandwidth == 1e9 / 8
