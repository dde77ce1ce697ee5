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
