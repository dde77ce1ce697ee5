"""docs/extending.md's examples work: each code block is a complete file; once registered (as its
registry line would), it passes the conformance check of its kind and works from the layer above."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from test_scenario_training import inputs  # noqa: F401 (the fixture)

DOC = Path(__file__).resolve().parent.parent / "docs" / "extending.md"
BLOCK = re.compile(r"```python file=(\S+)\n(.*?)```", re.S)


def load(path: str) -> types.ModuleType:
    """Execute the block of docs/extending.md that is file `path` as that module."""
    blocks = dict(BLOCK.findall(DOC.read_text()))
    name = path.removesuffix(".py").replace("/", ".")
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(compile(blocks[path], path, "exec"), module.__dict__)
    return module


def test_every_kind_has_an_example():
    files = dict(BLOCK.findall(DOC.read_text()))
    assert len(files) == 9


def test_scheme_example(monkeypatch):
    from zensim.schemes import catalog
    from zensim.schemes.conformance import check_scheme

    module = load("zensim/schemes/catalog/agsparse_bitmap.py")
    for scheme in module.SCHEMES:
        monkeypatch.setitem(catalog.CATALOG, scheme.name, scheme)
    check_scheme("agsparse-bitmap")


def test_format_example(monkeypatch):
    from zensim.run import run_ranks
    from zensim.schemes import build_scheme
    from zensim.sparse import formats
    from zensim.sparse.chunk import SparseChunk
    from zensim.sparse.conformance import check_format, sample_chunks
    from zensim.sparse.domain import RangeDomain

    Runs = load("zensim/sparse/formats/runs.py").Runs
    monkeypatch.setitem(formats.FORMATS, "runs", Runs)
    for dtype in ("float32", "float16"):
        check_format(formats.make_format("runs", dtype))
    chunks = sample_chunks("random", 4, 2000, 0.1, 1, values=True)
    run_ranks(build_scheme("zen", 4, 2000, push="runs", pull="runs"), chunks)  # checks the dense sum
    one_run = SparseChunk(np.arange(100, 200, dtype=np.int64))  # 3 ids (count, start, length), not 100
    assert Runs().size(one_run, RangeDomain(0, 1000)) == 3 * 4 + 100 * 4


def test_partitioner_example(monkeypatch):
    from zensim.run import run_ranks
    from zensim.schemes import build_scheme
    from zensim.sparse import registry
    from zensim.sparse.conformance import check_partitioner, sample_chunks

    Strided = load("zensim/sparse/strided.py").Strided
    monkeypatch.setitem(registry.PARTITIONERS, "strided", Strided)
    check_partitioner(Strided)
    chunks = sample_chunks("random", 4, 2000, 0.1, 2, values=True)
    run_ranks(build_scheme("sparse-ps", 4, 2000, partitioner="strided"), chunks)


def test_sharing_model_example(monkeypatch):
    from zensim.net import models
    from zensim.net.costs import Costs
    from zensim.net.models.conformance import check_model
    from zensim.net.network import Network
    from zensim.net.profile import WorkCost
    from zensim.net.topology import ClusterSpec

    cls = load("zensim/net/models/fifo_overhead.py").FifoOverhead
    monkeypatch.setitem(models.MODELS, cls.name, cls)
    check_model(cls.name)
    net = Network(Costs(ClusterSpec(2, 1, 1e9), WorkCost.zero()), cls.name, {"overhead": 1e-3})
    net.send(0, 1, 1e6)
    net.send(0, 1, 1e6)
    net.run()
    assert net.delivered_at[0] == pytest.approx(1e-3 + 1e6 / 1e9)  # o, then the wire
    assert net.delivered_at[1] == pytest.approx(2e-3 + 1e6 / 1e9)  # its o after the first's


def test_sharing_model_example_is_configured_from_the_cli(monkeypatch, tmp_path, capsys):
    """`zensim simulate --model fifo-overhead --model-option overhead=...` reaches the model: the dense
    ring on 2 machines has 2 stages of one message per rank, so o more per stage than fifo."""
    import json

    from zensim.cli import main
    from zensim.net import models
    from zensim.trace import TensorSpec, TraceWriter

    cls = load("zensim/net/models/fifo_overhead.py").FifoOverhead
    monkeypatch.setitem(models.MODELS, cls.name, cls)
    path = str(tmp_path / "t.zt")
    with TraceWriter(path, [TensorSpec("t", 1000)], workers=2, iterations=1) as w:
        for worker in range(2):
            w.write(0, worker, 0, np.arange(worker, 1000, 3, dtype=np.int64))
    times = {}
    for model, extra in (("fifo", []), (cls.name, ["--model-option", "overhead=1e-3"])):
        assert main(["simulate", "--trace", path, "--machines", "2", "--scheme", "dense-allreduce", "--model", model,
                     *extra, "--json"]) == 0
        times[model] = json.loads(capsys.readouterr().out)["records"][0]["time_s"]
    assert times[cls.name] == pytest.approx(times["fifo"] + 2e-3, rel=1e-9)


def test_sharing_model_option_reaches_every_mode(monkeypatch, tmp_path, capsys, inputs):  # noqa: F811
    """The model's declared option is a field of every request: a replay over iterations (each iteration's
    dense ring on 2 machines is 2 stages of one message a rank: exactly 2 o more than fifo), a scenario's
    `model_options:` (the command's time exactly) and `zensim iteration` (the request carries it to the
    timeline: slower than fifo); the same one-line problem from the flag and the key."""
    import json

    from zensim.cli import main
    from zensim.errors import ConfigError
    from zensim.net import models
    from zensim.sim.scenario import load_scenario

    cls = load("zensim/net/models/fifo_overhead.py").FifoOverhead
    monkeypatch.setitem(models.MODELS, cls.name, cls)
    digits = str(DOC.parent.parent / "traces" / "digits-cnn-16w.zt")
    times = {}
    for model, extra in (("fifo", []), (cls.name, ["--model-option", "overhead=1e-3"])):
        assert main(["simulate", "--trace", digits, "--replay", "0:2", "--machines", "2", "--scheme", "dense-allreduce",
                     "--model", model, *extra, "--json"]) == 0
        times[model] = [r["time_s"] for r in json.loads(capsys.readouterr().out)["records"]]
    assert times[cls.name] == pytest.approx([t + 2e-3 for t in times["fifo"]], rel=1e-9)

    common = ["--trace", digits, "--machines", "2", "--scheme", "dense-allreduce", "--model", cls.name]
    assert main(["simulate", *common, "--model-option", "overhead=1e-3", "--json"]) == 0
    command = json.loads(capsys.readouterr().out)["records"][0]["time_s"]
    path = tmp_path / "s.yaml"
    path.write_text(f"trace: {digits}\ncluster: {{machines: 2}}\nschemes: [dense-allreduce]\nmodel: {cls.name}\n"
                    "model_options: {overhead: 1.0e-3}\n")
    assert main(["run", str(path), "--processes", "0", "--out", str(tmp_path / "o"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["records"][0]["time_s"] == command

    path.write_text(path.read_text().replace("1.0e-3", "often"))
    with pytest.raises(ConfigError, match=rf"^{path}: model_options.overhead: expected a number, got 'often'$"):
        load_scenario(path)
    assert main(["simulate", *common, "--model-option", "overhead=often"]) == 2
    assert capsys.readouterr().err == "zensim: error: --model-option overhead=often: expected a number\n"

    trace, layers = inputs
    spent = {}
    for model, extra in (("fifo", []), (cls.name, ["--model-option", "overhead=1e-3"])):
        assert main(["iteration", "--trace", str(trace), "--layers", str(layers), "--machines", "2", "--scheme", "zen",
                     "--iterations", "1", "--model", model, *extra, "--json"]) == 0
        spent[model] = [r["iteration_s"] for r in json.loads(capsys.readouterr().out)]
    assert all(o > f for o, f in zip(spent[cls.name], spent["fifo"]))


def test_workload_example(monkeypatch):
    from zensim.trace.capture import names
    from zensim.trace.capture.conformance import check_workload

    load("zensim/trace/capture/workloads/cancer.py")
    monkeypatch.setitem(names.WORKLOADS, "cancer-logreg", "cancer.CancerLogReg")
    check_workload("cancer-logreg")


def test_sparsifier_example(monkeypatch):
    from zensim.sparsify import registry

    RandK = load("zensim/sparsify/randk.py").RandK
    monkeypatch.setitem(registry.SPARSIFIERS, "randk", RandK)
    s = registry.make_sparsifier("randk", 0.1, rank=1, workers=4)
    picked = s.propose("w", np.ones(1000, np.float32))
    assert len(picked) == 100 and np.all(np.diff(picked) > 0)
    assert not np.array_equal(picked, s.propose("w", np.ones(1000, np.float32)))  # another draw next time


def test_fusion_strategy_example(monkeypatch):
    from zensim.net.topology import ClusterSpec
    from zensim.train.fusion import registry
    from zensim.train.fusion.conformance import check_strategy
    from zensim.train.fusion.strategies import Compression, Workload, plan

    module = load("zensim/train/fusion/fixed.py")
    monkeypatch.setitem(registry.STRATEGIES, module.FIXED.name, module.FIXED)
    check_strategy("fixed")
    sizes = np.full(10, 6 * 2**20, dtype=np.float64)  # 6 MiB each: tensors 2, 5 and 7 reach 16, 32, 48 MiB
    w = Workload("w", sizes, np.full(10, 1e-3), 0.01, 8)
    assert plan("fixed", w, ClusterSpec(4, 2, 25e9 / 8), Compression()).ends == (2, 5, 7, 10)


def test_fabric_example(monkeypatch, tmp_path, capsys):
    import json

    import networkx as nx

    from zensim.cli import main
    from zensim.net import fabrics
    from zensim.net.links import LinkKind, Topology
    from zensim.net.topology import ClusterSpec
    from zensim.trace import TensorSpec, TraceWriter

    module = load("zensim/net/torus.py")
    monkeypatch.setitem(fabrics.FABRICS, "torus", module.TorusTopology)
    topo = fabrics.build_topology(ClusterSpec(6, 1, 1e9, fabric="torus"))  # 2 rows x 3 columns
    assert isinstance(topo, Topology)
    graph = module.torus_graph(6, 1e9)
    src, dst = np.repeat(np.arange(6), 6), np.tile(np.arange(6), 6)
    hops = (topo.kind[np.minimum(topo.route_matrix(src, dst), topo.num_links - 1)] == LinkKind.FABRIC)
    hops &= topo.route_matrix(src, dst) != topo.num_links
    assert hops.sum(axis=1).tolist() == [nx.shortest_path_length(graph, a, b) for a, b in zip(src, dst)]
    path = str(tmp_path / "t.zt")
    rng = np.random.default_rng(0)
    with TraceWriter(path, [TensorSpec("t", 2000)], workers=6, iterations=1) as w:
        for worker in range(6):
            w.write(0, worker, 0, np.sort(rng.choice(2000, 100, replace=False)))
    assert main(["simulate", "--trace", path, "--machines", "6", "--fabric", "torus", "--scheme",
                 "zen,agsparse-p2p", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    assert [r["scheme"] for r in records] == ["zen", "agsparse-p2p"] and all(r["time_s"] > 0 for r in records)

    # its declared option, from the command line and a scenario: one row of 6 is the ring, link for link
    from zensim.errors import ConfigError
    from zensim.sim.scenario import load_scenario

    one_row = fabrics.build_topology(ClusterSpec(6, 1, 1e9, fabric="torus", fabric_options=(("rows", 1),)))
    assert one_row.num_links == fabrics.build_topology(ClusterSpec(6, 1, 1e9, fabric="ring")).num_links < topo.num_links
    times = {}
    for fabric in (["--fabric", "ring"], ["--fabric", "torus", "--fabric-option", "rows=1"]):
        assert main(["simulate", "--trace", path, "--machines", "6", *fabric, "--scheme", "zen,dense-allreduce",
                     "--json"]) == 0
        times[fabric[1]] = [r["time_s"] for r in json.loads(capsys.readouterr().out)["records"]]
    assert times["torus"] == times["ring"]
    scn = tmp_path / "s.yaml"
    scn.write_text(f"trace: {path}\ncluster: {{machines: 6, fabric: torus, fabric_options: {{rows: 1}}}}\n"
                   "schemes: [zen, dense-allreduce]\n")
    assert main(["run", str(scn), "--processes", "0", "--out", str(tmp_path / "o"), "--json"]) == 0
    assert [r["time_s"] for r in json.loads(capsys.readouterr().out)["records"]] == times["ring"]
    scn.write_text(scn.read_text().replace("rows: 1", "rows: x"))
    with pytest.raises(ConfigError, match=rf"^{scn}: cluster.fabric_options.rows: expected an integer, got 'x'$"):
        load_scenario(scn)
    for bad, problem in ((["--fabric-option", "rows=x"], "--fabric-option rows=x: expected an integer"),
                         (["--fabric-option", "cols=2"], "--fabric-option cols=2: not an option of fabric torus "
                          "(its options and defaults: rows=0)"),
                         (["--oversub", "2"], "--oversub: only for a leaf-spine fabric (fabric is 'torus')")):
        assert main(["simulate", "--trace", path, "--machines", "6", "--fabric", "torus", *bad]) == 2
        assert capsys.readouterr().err == f"zensim: error: {problem}\n"


def test_run_option_example():
    import argparse

    from zensim.errors import ConfigError
    from zensim.request import add_arguments

    cls = load("emulate/request_warmup.py").WarmupEmulateRequest
    parser = argparse.ArgumentParser()
    add_arguments(parser, cls)
    given = ["--ranks", "2", "--trace", "t.zt"]
    assert cls.from_args(parser.parse_args(given)).warmup_repeats == 0
    request = cls.from_args(parser.parse_args([*given, "--warmup-repeats", "3"]))
    assert (request.warmup_repeats, request.ranks, request.trace) == (3, 2, "t.zt")
    with pytest.raises(ConfigError, match=r"^--warmup-repeats -1: must be at least 0$"):
        cls.from_args(parser.parse_args([*given, "--warmup-repeats", "-1"]))
    with pytest.raises(ConfigError, match=r"^--warmup-repeats x: expected an integer$"):
        cls.from_args(parser.parse_args([*given, "--warmup-repeats", "x"]))
