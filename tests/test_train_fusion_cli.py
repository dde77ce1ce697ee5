"""`zensim fusion missing` and `zensim fusion strategies`: outputs and one-line errors."""

import json

import pytest

from zensim.cli import main

DENSE = "traces/digits-cnn-16w.zt"


def test_missing_on_a_dense_trace(capsys, tmp_path):
    plot = tmp_path / "m.png"
    assert main(["fusion", "missing", "--trace", DENSE, "--sparsifier", "topk", "--by", "bytes",
                 "--degrees", "0,1", "--json", "--plot", str(plot)]) == 0
    out = json.loads(capsys.readouterr().out)
    rates = out["curves"]["topk / by bytes"]
    assert out["tensors"] == 8 and rates[0] == 0.0 and 0 < rates[1] < 1
    assert plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("argv,message", [
    (["--trace", "traces/lstm-lm-16w.zt"], "not a dense-gradient trace"),
    (["--trace", DENSE, "--sparsifier", "cltk"], "--sparsifier cltk"),
    (["--trace", DENSE, "--degrees", "0,2"], "--degrees"),
    (["--trace", DENSE, "--plot", "x.unknown"], "--plot"),
])
def test_missing_errors(capsys, argv, message):
    assert main(["fusion", "missing", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_strategies_json(capsys):
    assert main(["fusion", "strategies", "--model", "bert-base", "--machines", "4", "--gpus-per-machine", "2",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = [p["strategy"] for p in out["plans"]]
    assert names == ["none", "layerwise", "behind", "safusion", "cupcake"]
    cupcake = out["plans"][-1]
    assert all(cupcake["iteration_s"] <= p["iteration_s"] + 1e-12 for p in out["plans"] if p["strategy"] in ("layerwise", "behind"))
    assert main(["fusion", "strategies", "--model", "resnet"]) == 2


@pytest.mark.parametrize("flag", ["--machines", "--gpus-per-machine", "--tokens", "--batch-size"])
def test_strategies_name_the_count_that_is_not_positive(capsys, flag):
    assert main(["fusion", "strategies", flag, "0"]) == 2
    assert capsys.readouterr().err == f"zensim: error: {flag} 0: must be at least 1\n"


@pytest.fixture
def digits_layers(tmp_path):
    """A layer profile of the digits CNN (the dense trace's model) with made-up times."""
    from tests.test_train_schedule import digits_profile

    path = tmp_path / "digits.layers.json"
    digits_profile(scale=10.0).save(path)
    return str(path)


def test_iteration_with_strategies(capsys, tmp_path, digits_layers):
    csv, plot = tmp_path / "s.csv", tmp_path / "s.png"
    argv = ["iteration", "--trace", DENSE, "--layers", digits_layers, "--scheme", "agsparse-ring", "--machines", "2",
            "--gpus-per-machine", "8", "--iterations", "1", "--strategy", "all", "--fusion-degree", "0,1",
            "--compression-cost", "threshold", "--csv", str(csv), "--plot", str(plot)]
    assert main(argv + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = [(r["strategy"]["name"], r["strategy"]["degree"]) for r in out]
    assert got == [("none", 0.0), ("none", 1.0), ("layerwise", None), ("behind", 0.0), ("behind", 1.0),
                   ("safusion", None), ("cupcake", None)]
    behind = {r["strategy"]["degree"]: r for r in out if r["strategy"]["name"] == "behind"}
    assert len(behind[0.0]["buckets"]) == 8 and len(behind[1.0]["buckets"]) == 1
    assert behind[0.0]["strategy"]["missing_rate"] == 0 and behind[1.0]["compression_s"] > 0
    assert all(r["speedup_vs_dense"] > 0 for r in out)
    header = csv.read_text().splitlines()[0].split(",")
    assert "strategy.missing_rate" in header and "strategy.fitted_g.alpha_s" in header
    assert plot.read_bytes()[:4] == b"\x89PNG"
    assert main(argv[:-4] + ["--fusion-degree", "0.5"]) == 0
    assert "missing" in capsys.readouterr().out  # the table has the strategies' columns


@pytest.mark.parametrize("extra,message", [
    (["--strategy", "cupcake", "--bucketing", "per-tensor"], "--bucketing"),
    (["--strategy", "behind", "--fusion-degree", "2"], "--fusion-degree"),
    (["--strategy", "behind", "--fusion-degree", "0.5", "--bucket-mb", "1"], "give one"),
    (["--strategy", "behind", "--compression-cost", "fast"], "--compression-cost"),
    (["--strategy", "fastest"], "--strategy"),
    (["--strategy", "behind", "--sparsifier", "cltk"], "--sparsifier"),
    (["--strategy", "behind", "--density", "0"], "--density"),
    (["--strategy", "cupcake", "--scheme", "dense-allreduce"], "--scheme: a strategy other than none needs a sparse scheme"),
])
def test_iteration_strategy_errors(capsys, tmp_path, digits_layers, extra, message):
    plot = tmp_path / "never.png"
    assert main(["iteration", "--trace", DENSE, "--layers", digits_layers, "--scheme", "agsparse-ring",
                 "--machines", "2", "--plot", str(plot), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not plot.exists()
