"""Fusion strategies in scenarios: `strategy` and `fusion_degree` of the `training:` section as keys and
sweep axes, each point as `zensim iteration --strategy` prices it (run_strategy)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.test_train_schedule import digits_profile
from zensim.cli import main
from zensim.net.costs import Costs
from zensim.sim.scenario import load_scenario
from zensim.sim.sweep import records_of, run_scenario
from zensim.train.fusion.schedule import COSTS, run_strategy
from zensim.train.fusion.strategies import Compression

TRACE = Path("traces/digits-cnn-16w.zt").absolute()


@pytest.fixture(scope="module")
def layers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("layers") / "digits.layers.json"
    digits_profile(scale=10.0).save(path)
    return path


def scenario(folder: Path, layers: Path, training: str = "", sweep: str = "", extra: str = "") -> Path:
    text = (f"trace: {TRACE}\ncluster: {{machines: 2, gpus_per_machine: 8, nic: 25Gbps}}\n"
            f"schemes: [agsparse-ring]\ntraining:\n  layers: {layers}\n  iterations: 1\n"
            + ("" if "compression_cost" in training else "  compression_cost: threshold\n")
            + ("" if "strategy" in training or "strategy" in sweep else "  strategy: cupcake\n") + training
            + (f"sweep:\n{sweep}" if sweep else "") + extra)
    path = folder / "scn.yaml"
    path.write_text(text)
    return path


def test_strategy_and_degree_sweep_rows_equal_run_strategy(tmp_path: Path, layers: Path) -> None:
    path = scenario(tmp_path, layers, sweep="  strategy: [none, behind, cupcake]\n  fusion_degree: [0, 1]\n",
                    extra="outputs: {csv: out/s.csv, json: out/s.json, plot: out/s.png}\n")
    scn = load_scenario(path, tmp_path)
    # the degree is DDP's cap: it applies to none and behind; cupcake decides its own groups and runs once
    assert [(p.training.strategy, p.training.fusion_degree) for p in scn.points] == [
        ("none", 0.0), ("none", 1.0), ("behind", 0.0), ("behind", 1.0), ("cupcake", None)]
    outcome = run_scenario(scn)
    records = records_of(outcome.results)
    assert [r.strategy["name"] for r in records] == ["none", "none", "behind", "behind", "cupcake"]
    costs = Costs.of(scn.points[0].cluster, None)
    comp = Compression(encode=COSTS["threshold"])
    for p, rec in zip(scn.points, records):
        direct = run_strategy(p.training.strategy, digits_profile(scale=10.0), "agsparse-ring", costs, compression=comp,
                              degree=p.training.fusion_degree, trace=TRACE, iterations=1)
        assert rec.iteration_s == pytest.approx(direct.iteration_s, rel=1e-12)
        assert rec.strategy["missing_rate"] == direct.strategy["missing_rate"]
        assert rec.sweep == p.values
    # every strategy's speedup is over dense DDP with its default buckets, the capped none included
    base = {r.dense_iteration_s for r in records}
    assert len(base) == 1 and records[0].speedup_vs_dense == pytest.approx(base.pop() / records[0].iteration_s)
    behind = {r.strategy["degree"]: r for r in records if r.strategy["name"] == "behind"}
    assert behind[0.0].strategy["missing_rate"] == 0 and len(behind[1.0].buckets) == 1
    assert main(["sweep", str(path), "--out", str(tmp_path), "--workers", "0"]) == 0
    rows = list(csv.DictReader((tmp_path / "out/s.csv").open()))
    assert [r["sweep.strategy"] for r in rows] == ["none", "none", "behind", "behind", "cupcake"]
    assert rows[3]["sweep.fusion_degree"] == "1" and "strategy.missing_rate" in rows[0]
    assert len(json.loads((tmp_path / "out/s.json").read_text())["records"]) == 5
    assert (tmp_path / "out/s.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("training,sweep,extra,key", [
    ("", "  strategy: [none, fastest]\n", "", "sweep.strategy"),
    ("", "  fusion_degree: [0, 2]\n", "", "sweep.fusion_degree"),
    ("  density: 0\n", "", "", "training.density"),
    ("  compression_cost: fast\n", "", "", "training.compression_cost"),
    ("  sparsifier: cltk\n", "", "", "training.sparsifier"),
    ("  bucketing: per-tensor\n", "", "", "training.bucketing"),
    ("  strategy: none\n  fusion_degree: 0.5\n  bucket_mb: 1\n", "", "", "training.fusion_degree"),
])
def test_training_errors_name_file_and_key(tmp_path: Path, layers: Path, capsys: pytest.CaptureFixture,
                                           training: str, sweep: str, extra: str, key: str) -> None:
    path = scenario(tmp_path, layers, training, sweep, extra)
    assert main(["run", str(path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{path}: {key}" in err


def test_a_degree_needs_a_strategy_and_a_strategy_a_sparse_scheme(tmp_path: Path, layers: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    path = scenario(tmp_path, layers, "  strategy: null\n", "  fusion_degree: [0, 1]\n")
    assert main(["run", str(path)]) == 2
    assert "sweep.fusion_degree: only with a strategy" in capsys.readouterr().err
    dense_only = scenario(tmp_path, layers)
    dense_only.write_text(dense_only.read_text().replace("[agsparse-ring]", "[dense-allreduce]"))
    assert main(["run", str(dense_only)]) == 2
    assert "schemes: a strategy other than none needs a sparse scheme" in capsys.readouterr().err
