"""`zensim layers`: record, estimate, show; errors are one line with exit status 2 and no output file."""

from __future__ import annotations

import json

import pytest

from zensim.cli import main
from zensim.train.layers import load_layers


def test_record_estimate_show_deepfm(tmp_path, capsys) -> None:
    measured, estimated = tmp_path / "m.json", tmp_path / "e.json"
    assert main(["layers", "record", "--workload", "deepfm", "--batch-size", "16", "--iterations", "2",
                 "--warmup", "1", "-o", str(measured)]) == 0
    prof = load_layers(measured)
    assert prof.kind == "measured" and prof.workload == "deepfm" and prof.batch_size == 16 and prof.iterations == 2
    assert prof.params[-1].name == "embedding.weight"  # the first layer's gradient is ready last
    assert main(["layers", "estimate", "--workload", "deepfm", "--batch-size", "16", "--device", "a100",
                 "--launch-us", "0", "-o", str(estimated)]) == 0
    est = load_layers(estimated)
    assert est.kind == "estimate" and "A100" in est.device and est.extra["flops_per_step"] > 0
    assert [p.name for p in est.params] == [p.name for p in prof.params]
    capsys.readouterr()
    assert main(["layers", "show", str(estimated), "--bucket-mb", "0.5", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert sum(len(b["params"]) for b in shown["buckets"]) == len(est.params)
    assert main(["layers", "show", str(estimated), "--own-bucket", "embedding.weight"]) == 0
    assert "embedding.weight" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["layers", "estimate", "--workload", "deepfm", "--device", "tpu", "-o", "{tmp}/x.json"], "unknown device"),
    (["layers", "estimate", "--workload", "deepfm", "--device", "v100", "--efficiency", "2", "-o", "{tmp}/x.json"],
     "--efficiency 2.0"),
    (["layers", "record", "--workload", "deepfm", "--device", "cuda:7", "-o", "{tmp}/x.json"], "CUDA"),
    (["layers", "record", "--workload", "deepfm", "-o", "{tmp}/no/x.json"], "does not exist"),
    (["layers", "record", "--workload", "deepfm", "-o", "{tmp}"], "is a directory"),
    (["layers", "show", "{tmp}/missing.json"], "not found"),
    (["layers", "import", "{tmp}/missing.json", "-o", "{tmp}/x.json"], "Chrome trace not found"),
])
def test_errors(tmp_path, capsys, argv, message) -> None:
    argv = [a.format(tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()
