"""Training iterations in scenarios and sweeps (a `training:` section): every row is what
`iteration_records` gives for its point, swept training keys change the buckets, outputs (JSON, CSV,
Chrome trace with compute / compression / communication tracks and link counters, one throughput
plot per value of the other swept keys) are written, finished points are reused, bad keys are
one-line errors naming the file and key."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from test_scenario import assert_refused
from zensim.cli import main
from zensim.net.costs import Costs
from zensim.sim.cluster import build_cluster
from zensim.sim.scenario import load_scenario
from zensim.sim.sweep import records_of, run_scenario, write_outputs
from zensim.trace import TensorSpec, TraceWriter
from zensim.train.buckets import DDPBuckets
from zensim.train.iteration import iteration_records
from zensim.train.layers import LayerProfile, ParamTime

EMB = 4000


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A trace of an embedding (8 workers, 2 iterations) and a layer profile of a model around it."""
    folder = tmp_path_factory.mktemp("training")
    rng = np.random.default_rng(3)
    trace = folder / "emb.zt"
    with TraceWriter(trace, [TensorSpec("emb.weight", EMB)], workers=8, iterations=2, batch_size=16) as w:
        for it, worker in itertools.product(range(2), range(8)):
            w.write(it, worker, "emb.weight", np.sort(rng.choice(EMB, 150 + 10 * worker, replace=False)))
    params = (ParamTime("fc2.weight", 300_000, 3, 1e-4, 2e-3), ParamTime("fc1.weight", 300_000, 2, 1e-4, 2e-3),
              ParamTime("fc0.weight", 300_000, 1, 1e-4, 2e-3), ParamTime("emb.weight", EMB, 0, 1e-5, 3e-4))
    layers = folder / "model.layers.json"
    LayerProfile(params, forward_s=3e-3, backward_tail_s=1e-4, optimizer_s=5e-4, batch_size=16,
                 workload="toy").save(layers)
    return trace, layers


def scenario(folder: Path, inputs: tuple[Path, Path], body: str) -> Path:
    """A scenario file over the fixture's trace and profile; `body` gives the rest."""
    trace, layers = inputs
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "scn.yaml"
    path.write_text(body.replace("TRACE", str(trace)).replace("LAYERS", str(layers)))
    return path


SWEEP = """
trace: TRACE
cluster: {gpus_per_machine: 2, nic: 10Gbps}
schemes: [zen, sparcml]
training: {layers: LAYERS, iterations: 2}
sweep:
  machines: [1, 2, 4]
  bucket_mb: [0.5, 25]
outputs:
  json: out/r.json
  csv: out/r.csv
  timeline: out/t.json
  plot: out/throughput-{bucket_mb}.png
"""


def test_a_training_sweep_gives_what_the_iteration_api_gives_per_point(tmp_path: Path, inputs) -> None:
    scn = load_scenario(scenario(tmp_path, inputs, SWEEP), tmp_path)
    assert len(scn.points) == 6 and scn.layers is not None
    outcome = run_scenario(scn, store=None)
    assert not outcome.failures and outcome.computed == 6
    trace, _ = inputs
    for point, records in outcome.results:
        cluster, _ = build_cluster(point.values["machines"], 2, nic="10Gbps")
        expect = iteration_records(scn.layers, ["zen", "sparcml"], Costs.of(cluster, None), trace=trace,
                                   iterations=2, bucketing=DDPBuckets(point.values["bucket_mb"]))
        assert [r.scheme for r in records] == ["dense-allreduce", "zen", "sparcml"]
        assert [r.iteration_s for r in records] == [r.iteration_s for r in expect]
        assert [r.sweep for r in records] == [point.values] * 3
    # a smaller cap splits the dense layers into more buckets; at 25 MiB they share one
    by = {(r.sweep["machines"], r.sweep["bucket_mb"], r.scheme): r for r in records_of(outcome.results)}
    assert len(by[2, 0.5, "dense-allreduce"].buckets) > len(by[2, 25, "dense-allreduce"].buckets) == 1
    write_outputs(scn, outcome.results)
    out = tmp_path / "out"
    doc = json.loads((out / "r.json").read_text())
    assert doc["schema"] == "zensim-iterations/1" and len(doc["records"]) == 18
    rows = list(csv.DictReader((out / "r.csv").open()))
    assert [(int(r["sweep.machines"]), float(r["sweep.bucket_mb"]), r["scheme"]) for r in rows] == list(by)
    assert sorted(p.name for p in out.glob("*.png")) == ["throughput-0.5.png", "throughput-25.png"]
    events = json.loads((out / "t.json").read_text())["traceEvents"]
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert any("compute" in t for t in threads) and any("compression" in t for t in threads)
    assert any("communication" in t for t in threads)
    assert any(e["ph"] == "C" and e["name"].startswith("nic") for e in events)


def test_finished_training_points_are_reused(tmp_path: Path, inputs, capsys: pytest.CaptureFixture) -> None:
    body = SWEEP.replace("  timeline: out/t.json\n", "")
    path = scenario(tmp_path, inputs, body)
    assert main(["run", str(path), "--out", str(tmp_path), "--workers", "0", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["run", str(path), "--out", str(tmp_path), "--workers", "0", "--json"]) == 0
    captured = capsys.readouterr()
    assert "6 kept" in captured.err
    again = json.loads(captured.out)
    strip = [{k: v for k, v in r.items() if k not in ("wall_s", "provenance")} for r in first["records"]]
    assert strip == [{k: v for k, v in r.items() if k not in ("wall_s", "provenance")} for r in again["records"]]


def test_a_training_point_prints_the_iteration_table(tmp_path: Path, inputs, capsys: pytest.CaptureFixture) -> None:
    path = scenario(tmp_path, inputs, "trace: TRACE\ncluster: {machines: 4, gpus_per_machine: 2}\nschemes: [zen]\n"
                    "training: {layers: LAYERS, bucketing: per-tensor, sparse_tensors: []}\n")
    assert main(["run", str(path), "--workers", "0", "--cache", "none"]) == 0
    out = capsys.readouterr().out
    assert "per-tensor" in out and "samples/s" in out
    # no sparse tensor: zen synchronizes nothing, every tensor goes through the dense all-reduce
    scn = load_scenario(path)
    records = records_of(run_scenario(scn).results)
    assert records[1].iteration_s == records[0].iteration_s
    assert all(b["sync"].startswith(("dense-allreduce", "dense-doubling")) for b in records[1].buckets)


@pytest.mark.parametrize("body, key", [
    ("training: {iterations: 2}\n", "training"),
    ("training: {layers: LAYERS, device: v100}\n", "training"),
    ("training: {layers: LAYERS, iteratons: 2}\n", "training.iteratons"),
    ("training: {layers: nothere.json}\n", "training.layers"),
    ("training: {device: tpu}\n", "training.device"),
    ("training: {layers: LAYERS, iterations: 0}\n", "training.iterations"),
    ("training: {layers: LAYERS, bucketing: greedy}\n", "training.bucketing"),
    ("training: {layers: LAYERS, bucket_mb: -1}\n", "training.bucket_mb"),
    ("training: {layers: LAYERS, bucket_mb: 25MB}\n", "training.bucket_mb"),
    ("training: {layers: LAYERS, sparse_buckets: merged}\n", "training.sparse_buckets"),
    ("training: {layers: LAYERS, dense_work: none}\n", "training.dense_work"),
    ("training: {layers: LAYERS, dense_algorithm: tree}\n", "training.dense_algorithm"),
    ("training: {layers: LAYERS, compute_scale: 0}\n", "training.compute_scale"),
    ("training: {layers: LAYERS, shared_host: 1}\n", "training.shared_host"),
    ("training: {layers: LAYERS, sparse_tensors: [fc9.weight]}\n", "training"),
    ("training: {layers: LAYERS}\nmodel: analytic\n", "model"),
    ("training: {layers: LAYERS}\nsweep: {bucket_mb: [1, fast]}\n", "sweep.bucket_mb"),
    ("sweep: {bucket_mb: [1, 25]}\n", "sweep.bucket_mb"),
    ("training: {layers: LAYERS}\nsweep: {machines: [2, 4], bucket_mb: [1, 25]}\noutputs: {plot: p.png}\n",
     "outputs.plot"),
    ("training: {layers: LAYERS}\nsweep: {machines: [2, 4], bucket_mb: [1, 25]}\noutputs: {plot: 'p-{machines}.png'}\n",
     "outputs.plot"),
])
def test_training_errors_name_file_and_key(tmp_path: Path, inputs, body: str, key: str,
                                           capsys: pytest.CaptureFixture) -> None:
    assert_refused(scenario(tmp_path, inputs, "trace: TRACE\ncluster: {machines: 2}\nschemes: [zen]\n" + body), key,
                   capsys)
