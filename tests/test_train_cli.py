"""`zensim layers`: record, estimate, show; errors are one line with exit status 2 and no output file."""

from __future__ import annotations

import csv
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
    (["layers", "record", "--workload", "deepfm", "--device", "gpu0", "-o", "{tmp}/x.json"], "not a torch device"),
    (["work", "measure", "--device", "cuda:7", "-o", "{tmp}/x.json"], "CUDA"),
    (["work", "measure", "--device", "meta", "-o", "{tmp}/x.json"], "only cpu and cuda"),
    (["layers", "record", "--workload", "deepfm", "-o", "{tmp}/no/x.json"], "does not exist"),
    (["layers", "record", "--workload", "deepfm", "-o", "{tmp}"], "is a directory"),
    (["layers", "show", "{tmp}/missing.json"], "not found"),
    (["layers", "import", "{tmp}/missing.json", "-o", "{tmp}/x.json"], "Chrome trace not found"),
    (["layers", "import", "{tmp}/t.json", "--warmup", "-1", "-o", "{tmp}/x.json"], "--warmup -1: must be at least 0"),
    (["layers", "import", "{tmp}/t.json", "--batch-size", "0", "-o", "{tmp}/x.json"],
     "--batch-size 0: must be at least 1"),
    (["layers", "estimate", "--workload", "deepfm", "--device", "v100", "--batch-size", "0", "-o", "{tmp}/x.json"],
     "--batch-size 0: must be at least 1"),
])
def test_errors(tmp_path, capsys, argv, message) -> None:
    argv = [a.format(tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()


@pytest.fixture
def small_trace(tmp_path):
    import itertools

    import numpy as np

    from zensim.trace.format import TensorSpec, TraceWriter
    from zensim.train.layers import LayerProfile, ParamTime

    rng = np.random.default_rng(1)
    path = tmp_path / "t.zt"
    with TraceWriter(path, [TensorSpec("emb.weight", 3000)], workers=8, iterations=2, batch_size=4, workload="toy") as w:
        for it, worker in itertools.product(range(2), range(8)):
            w.write(it, worker, "emb.weight", np.sort(rng.choice(3000, 150, replace=False)))
    prof = LayerProfile((ParamTime("fc.weight", 50_000, 1, 1e-4, 2e-3), ParamTime("emb.weight", 3000, 0, 1e-5, 1e-4)),
                        forward_s=1e-3, optimizer_s=2e-4, batch_size=4, workload="toy")
    prof.save(tmp_path / "toy.layers.json")
    return path


def test_iteration_command_outputs(small_trace, tmp_path, capsys) -> None:
    layers = tmp_path / "toy.layers.json"
    out = {k: tmp_path / f"out.{k}" for k in ("csv", "json", "png")}
    argv = ["iteration", "--trace", str(small_trace), "--layers", str(layers), "--scheme", "zen,sparcml",
            "--machines", "2,4", "--gpus-per-machine", "2", "--nic", "10Gbps", "--iterations", "2",
            "--csv", str(out["csv"]), "--timeline", str(out["json"]), "--plot", str(out["png"]), "--buckets"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "dense-allreduce" in text and "zen(1)" in text and "samples/s" in text
    csv = out["csv"].read_text().splitlines()
    assert len(csv) == 1 + 2 * 3 and csv[0].startswith("scheme,")
    doc = json.loads(out["json"].read_text())
    threads = {e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
    assert {"GPU 0 compute", "GPU 0 compression", "GPU 0 communication", "GPU 1 communication"} <= threads
    assert any(e["ph"] == "C" and e["name"].startswith("nic-") for e in doc["traceEvents"])
    assert any(e["ph"] == "X" and e["name"] == "compress" for e in doc["traceEvents"])
    assert out["png"].read_bytes()[:4] == b"\x89PNG"
    assert main(argv[:15] + ["--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["scheme"] for r in records] == ["dense-allreduce", "zen", "sparcml"] * 2
    assert all(r["samples_per_s"] == pytest.approx(r["global_batch"] / r["iteration_s"]) for r in records)


def test_report_renders_iteration_records(small_trace, tmp_path, capsys) -> None:
    """`zensim report` on `zensim iteration --json` output and on a zensim-iterations/1 document prints the
    same iteration table as the run; --csv equals the run's CSV; other results beside them, broken
    records and outputs that need the run are one-line errors."""
    argv = ["iteration", "--trace", str(small_trace), "--layers", str(tmp_path / "toy.layers.json"), "--scheme", "zen",
            "--machines", "2,4", "--gpus-per-machine", "2", "--nic", "10Gbps", "--iterations", "2",
            "--csv", str(tmp_path / "run.csv")]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert main(argv[:-2] + ["--json"]) == 0
    array = tmp_path / "it.json"
    array.write_text(capsys.readouterr().out)
    assert main(["report", str(array), "--csv", str(tmp_path / "report.csv")]) == 0
    assert capsys.readouterr().out == table

    def rows(name: str) -> list[dict]:  # the two runs differ only in their wall time and provenance
        with open(tmp_path / name) as f:
            return [{k: v for k, v in r.items() if k not in ("wall_s", "provenance")} for r in csv.DictReader(f)]

    assert rows("report.csv") == rows("run.csv") and len(rows("run.csv")) == 4
    assert main(["report", str(array), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "zensim-iterations/1" and doc["records"] == json.loads(array.read_text())
    document = tmp_path / "doc.json"
    document.write_text(json.dumps(doc))
    assert main(["report", str(document)]) == 0 and capsys.readouterr().out == table
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"schema": "zensim-iterations/1", "records": [{"scheme": "zen", "iteration_s": 1}]}))
    results = tmp_path / "sim.json"
    results.write_text(json.dumps({"schema": "zensim-results/1", "records": []}))
    for extra, message in (([str(broken)], "broken.json: record 0 is not an iteration record"),
                           ([str(array), str(results)], "sim.json: not training-iteration records"),
                           ([str(array), "--links", str(tmp_path / "l.csv")], "--links: not from iteration")):
        assert main(["report", *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("extra,message", [
    (["--scheme", "nope"], "unknown scheme"),
    (["--machines", "0"], "--machines 0"),
    (["--iterations", "0"], "--iterations 0"),
    (["--timeline-gpus", "0"], "--timeline-gpus 0: must be at least 1"),
    (["--plot", "{tmp}/x.txt"], "extension .txt"),
    (["--csv", "{tmp}/no/x.csv"], "x.csv"),
    (["--host-others", "2"], "--host-others: only with --shared-host"),
    (["--shared-host", "--host-others", "-1"], "--host-others -1: expected a number in [0, inf)"),
    (["--sparse-buckets", "fused", "--hook-run-s", "-1"], "--hook-run-s -1: expected a number in [0, inf)"),
    (["--hook-run-s", "0.003"], "--hook-run-s: only with --sparse-buckets fused"),
    (["--strategy", "behind", "--hook-run-s", "0.003"], "--hook-run-s: not with a strategy"),
])
def test_iteration_errors(small_trace, tmp_path, capsys, extra, message) -> None:
    argv = ["iteration", "--trace", str(small_trace), "--layers", str(tmp_path / "toy.layers.json"),
            "--machines", "2", "--gpus-per-machine", "2", *[a.format(tmp=tmp_path) for a in extra]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_work_fit_makes_a_profile_the_simulator_reads(tmp_path, capsys) -> None:
    from zensim.net.profile import WORK_KINDS, load_profile

    sizes = [1000, 10_000, 100_000, 1_000_000]
    measured = {"device": "test", "sizes": sizes,
                "seconds": {k: [2e-5 + (i + 1) * 1e-9 * x for x in sizes] for i, k in enumerate(WORK_KINDS)}}
    (tmp_path / "m.json").write_text(json.dumps(measured))
    assert main(["work", "fit", str(tmp_path / "m.json"), "--bandwidth-scale", "2", "-o", str(tmp_path / "p.json")]) == 0
    prof = load_profile(tmp_path / "p.json")
    for i, k in enumerate(WORK_KINDS):
        assert prof.work.fixed[k] == pytest.approx(2e-5, rel=1e-6)
        assert prof.work.per_element[k] == pytest.approx(2 * (i + 1) * 1e-9, rel=1e-6)
        assert prof.work.seconds(k, 1000) == pytest.approx(2e-5 + 2 * (i + 1) * 1e-6, rel=1e-6)
    assert main(["work", "fit", str(tmp_path / "missing.json"), "-o", str(tmp_path / "q.json")]) == 2
    assert "measurements not found" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["layers", "record", "--workload", "deepfm"], ["work", "measure"]])
def test_a_gpu_index_beyond_the_machine_is_refused_in_one_line(tmp_path, capsys, monkeypatch, argv) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert main([*argv, "--device", "cuda:1", "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "--device cuda:1: this machine has 1 CUDA device(s)" in err and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()
