"""A scheme's synchronization as Chakra execution traces (issue 26, item 8): ZEN at 16 ranks written one
file per rank, read back with Chakra's own decoder and schema (the mlc-chakra package): every message
a send in its sender's file and a receive in its receiver's, the local work as compute nodes, the
dependencies inside each file and acyclic; `simulate --chakra` writes them, refuses several schemes,
and without the package says in one line how to install it."""

from __future__ import annotations

import io
import sys
from collections import Counter
from pathlib import Path

import pytest
from chakra.schema.protobuf import et_def_pb2 as pb
from chakra.src.third_party.utils.protolib import decodeMessage, openFileRd

from zensim.cli import main
from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.topology import ClusterSpec
from zensim.report.chakra import chakra_traces
from zensim.sim.run import simulate
from zensim.trace.synth import SynthParams, synthesize

MACHINES, G = 4, 4  # 16 ranks, ZEN's layout: intra-machine stages around the push and pull


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    synthesize(path, MACHINES * G, [("w", 8000)], SynthParams(0.03, 0.3, 2.0), iterations=1, seed=4)
    return path


@pytest.fixture(scope="module")
def zen(trace):
    costs = Costs(ClusterSpec(MACHINES, G, 1e9, nic_latency=3e-6, nvlink_latency=1e-6))
    (record,) = simulate(trace, ["zen"], costs, "fifo")
    return record.simulated.log, costs


def _read(path: Path) -> tuple[pb.GlobalMetadata, list[pb.Node]]:
    """A trace file as Chakra's tools read it: the GlobalMetadata, then nodes until the end."""
    f = openFileRd(str(path))
    try:
        return _decode(f)
    finally:
        f.close()


def _decode(f) -> tuple[pb.GlobalMetadata, list[pb.Node]]:
    """The GlobalMetadata and nodes of an open trace, through Chakra's decoder."""
    metadata, nodes = pb.GlobalMetadata(), []
    assert decodeMessage(f, metadata)
    node = pb.Node()
    while decodeMessage(f, node):
        nodes.append(node)
        node = pb.Node()
    return metadata, nodes


def _parse(data: bytes) -> list[pb.Node]:
    """The nodes of a trace's bytes."""
    return _decode(io.BytesIO(data))[1]


def _attrs(node: pb.Node) -> dict[str, object]:
    """A node's attributes by name, each its set value."""
    return {a.name: getattr(a, a.WhichOneof("value")) for a in node.attr}


def _written(log, costs, folder: Path) -> list[list[pb.Node]]:
    """The log's traces written as rank files and read back, nodes per rank."""
    files = []
    for rank, data in enumerate(chakra_traces(log, costs.work)):
        path = folder / f"zen.{rank}.et"
        path.write_bytes(data)
        files.append(_read(path)[1])
    return files


def test_sends_and_receives_are_the_logs_messages(zen, tmp_path):
    log, costs = zen
    ranks = _written(log, costs, tmp_path)
    assert log.n == len(ranks) == MACHINES * G and len(log) > 0
    total = 0
    for rank, nodes in enumerate(ranks):
        sends = [_attrs(n) for n in nodes if n.type == pb.COMM_SEND_NODE]
        recvs = [_attrs(n) for n in nodes if n.type == pb.COMM_RECV_NODE]
        assert all(a["comm_src"] == rank for a in sends) and all(a["comm_dst"] == rank for a in recvs)
        assert Counter((a["comm_dst"], a["comm_size"]) for a in sends) == Counter(
            (m.dst, m.nbytes) for m in log.messages if m.src == rank)
        assert Counter((a["comm_src"], a["comm_size"]) for a in recvs) == Counter(
            (m.src, m.nbytes) for m in log.messages if m.dst == rank)
        total += sum(a["comm_size"] for a in sends)
    assert total == int(log.nbytes.sum())


def test_each_send_meets_its_receive_by_tag(zen, tmp_path):
    log, costs = zen
    ends = Counter()
    for nodes in _written(log, costs, tmp_path):
        for n in nodes:
            if n.type in (pb.COMM_SEND_NODE, pb.COMM_RECV_NODE):
                a = _attrs(n)
                ends[(a["comm_tag"], a["comm_src"], a["comm_dst"], a["comm_size"], n.type)] += 1
    tags = {key[:4] for key in ends}
    assert len(tags) == len(log) and all(ends[(*key, t)] == 1 for key in tags
                                         for t in (pb.COMM_SEND_NODE, pb.COMM_RECV_NODE))


def test_compute_nodes_are_the_priced_local_work(zen, tmp_path):
    log, costs = zen
    ranks = _written(log, costs, tmp_path)
    for rank, nodes in enumerate(ranks):
        comp = [n for n in nodes if n.type == pb.COMP_NODE]
        want = [w for w in log.work if w.rank == rank]
        assert [(_attrs(n)["kind"], _attrs(n)["elements"]) for n in comp] == [(w.kind, w.elements) for w in want]
        seconds = [costs.work.seconds(w.kind, w.elements, w.launches) for w in want]  # fused rings: one launch
        assert [_attrs(n)["seconds"] for n in comp] == seconds
        assert [n.duration_micros for n in comp] == [round(t * 1e6) for t in seconds]
    assert any(_attrs(n).get("seconds", 0) > 0 for nodes in ranks for n in nodes)
    unpriced = [n for data in chakra_traces(log) for n in _parse(data) if n.type == pb.COMP_NODE]
    assert len(unpriced) == len(log.work) and not any(n.duration_micros or "seconds" in _attrs(n) for n in unpriced)


def test_dependencies_stay_in_the_file_follow_the_stages_and_have_no_cycle(zen, tmp_path):
    log, costs = zen
    waited = 0
    for nodes in _written(log, costs, tmp_path):
        ids = {n.id: n for n in nodes}
        assert len(ids) == len(nodes)
        assert [n.id for n in nodes] == list(range(len(nodes)))
        assert all(d in ids and d < n.id for n in nodes for d in n.data_deps)  # parents come first in the file
        stage = {n.id: int(n.name.split(".")[0].removeprefix("stage")) for n in nodes}
        assert all(stage[d] <= stage[n.id] for n in nodes for d in n.data_deps)
        first = min(stage.values())
        assert all(n.data_deps for n in nodes if stage[n.id] > first)  # a later stage waits for an earlier
        for s in set(stage.values()):  # post work waits for all the stage's sends and receives of its rank
            comm = {n.id for n in nodes if stage[n.id] == s and n.type != pb.COMP_NODE}
            post = [n for n in nodes if stage[n.id] == s and ".post." in n.name]
            if comm and post:
                assert comm <= set(post[0].data_deps)
                waited += 1
        assert _acyclic(nodes)
    assert waited > 0


def _acyclic(nodes: list[pb.Node]) -> bool:
    """Whether the dependency graph has a topological order (Kahn)."""
    pending = {n.id: len(set(n.data_deps)) for n in nodes}
    children: dict[int, list[int]] = {}
    for n in nodes:
        for d in set(n.data_deps):
            children.setdefault(d, []).append(n.id)
    ready = [i for i, k in pending.items() if k == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for c in children.get(i, []):
            pending[c] -= 1
            if pending[c] == 0:
                ready.append(c)
    return done == len(nodes)


def test_simulate_writes_one_file_per_rank_through_the_cli(trace, tmp_path, capsys):
    prefix = tmp_path / "zen"
    assert main(["simulate", "--trace", str(trace), "--machines", str(MACHINES), "--gpus-per-machine", str(G),
                 "--scheme", "zen", "--chakra", str(prefix)]) == 0
    files = sorted(tmp_path.iterdir())
    assert [p.name for p in files] == sorted(f"zen.{r}.et" for r in range(MACHINES * G))
    metadata, nodes = _read(files[0])
    assert metadata.version and nodes


@pytest.mark.parametrize("prefix, extra, message", [
    ("x", ["--scheme", "zen,sparcml"], "--chakra: one scheme per trace, --scheme zen,sparcml names 2"),
    ("x", ["--scheme", "zen", "--replay", "0:1"], "--chakra: exports one synchronization, not with --replay"),
    ("-", ["--scheme", "zen"], "--chakra: '-' (standard output) is not an output here"),
    ("", ["--scheme", "zen"], "is a folder; give a file prefix"),
    ("nosuch/x", ["--scheme", "zen"], "--chakra: directory of"),
])
def test_refused_before_any_work(trace, tmp_path, capsys, monkeypatch, prefix, extra, message):
    monkeypatch.chdir(tmp_path)
    target = f"{tmp_path}/{prefix}" if prefix in ("", "nosuch/x") else prefix
    assert main(["simulate", "--trace", str(trace), "--machines", "2", "--chakra", target, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []


def test_without_chakra_one_line_names_the_install(trace, tmp_path, capsys, monkeypatch):
    for name in [m for m in sys.modules if m == "chakra" or m.startswith("chakra.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "chakra", None)
    assert main(["simulate", "--trace", str(trace), "--machines", "2", "--scheme", "zen",
                 "--chakra", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install --no-deps mlc-chakra" in err and "protobuf" in err
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigError, match="--chakra: needs Chakra's schema"):
        chakra_traces(simulate(trace, ["zen"], ClusterSpec(2, 1, 1e9), "fifo")[0].simulated.log)


DEEPFM = Path(__file__).resolve().parents[1] / "traces" / "deepfm-16w.zt"


@pytest.fixture(scope="module")
def deepfm_iteration():
    """ZEN in one DDP iteration of the shipped DeepFM (V100 profile) on 2 x 8 GPUs: the record and its
    Chakra files read back, nodes per GPU."""
    from zensim.sim.cluster import build_cluster
    from zensim.train.chakra import chakra_iteration
    from zensim.train.iteration import simulate_iteration
    from zensim.train.shipped import device_layers

    profile = device_layers(DEEPFM, "v100")
    cluster, _ = build_cluster(2, preset="p3.16xlarge")
    rec = simulate_iteration(profile, "zen", Costs.of(cluster), trace=DEEPFM, iterations=1, dense_baseline=False)
    return profile, rec.run.timeline, [_parse(data) for data in chakra_iteration(rec.run.timeline)]


def _ancestors(nodes: list[pb.Node], node: pb.Node) -> set[int]:
    """Every node `node` depends on, directly or not."""
    seen, todo = set(), list(node.data_deps)
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo.extend(nodes[i].data_deps)
    return seen


def test_iteration_compute_nodes_are_the_profile(deepfm_iteration):
    profile, timeline, files = deepfm_iteration
    assert len(files) == 16
    for nodes in files:
        comp = {n.name: _attrs(n)["seconds"] for n in nodes if n.type == pb.COMP_NODE and "stage" not in n.name}
        assert comp["forward"] == profile.forward_s and comp["optimizer"] == profile.optimizer_s
        backward = [v for k, v in comp.items() if k.startswith("backward.")]
        assert len(backward) == len(timeline.syncs) + 1
        assert sum(backward) == pytest.approx(profile.backward_s, rel=1e-12)


def test_iteration_messages_are_every_bucket_step_log(deepfm_iteration):
    _, timeline, files = deepfm_iteration
    want = Counter()
    for b in range(len(timeline.syncs)):
        for step in timeline.bucket_steps(0, b):
            m = step.log.arrays()
            want.update(zip(m["src"].tolist(), m["dst"].tolist(), m["nbytes"].tolist()))
    for node_type in (pb.COMM_SEND_NODE, pb.COMM_RECV_NODE):
        got = Counter((a["comm_src"], a["comm_dst"], a["comm_size"]) for nodes in files for n in nodes
                      if n.type == node_type for a in [_attrs(n)])
        assert got == want
    tags = Counter(_attrs(n)["comm_tag"] for nodes in files for n in nodes if n.type != pb.COMP_NODE)
    assert set(tags.values()) == {2} and sorted(tags) == list(range(sum(want.values())))


def test_iteration_dependencies_follow_ddp(deepfm_iteration):
    """Each node after those it depends on; a bucket's synchronization after its backward node and the
    previous bucket's; the optimizer after everything of its GPU."""
    _, timeline, files = deepfm_iteration
    for nodes in files:
        assert all(d < n.id for n in nodes for d in n.data_deps) and [n.id for n in nodes] == list(range(len(nodes)))
        ids = {n.name: n.id for n in nodes if not n.name.startswith("bucket")}
        assert _ancestors(nodes, nodes[ids["optimizer"]]) == set(range(len(nodes))) - {ids["optimizer"]}
        for n in nodes:
            if n.name.startswith("bucket"):
                b = int(n.name.split(".")[0][len("bucket"):])
                before = _ancestors(nodes, n)
                assert ids[f"backward.bucket{b}"] in before
                assert all(m.id in before for m in nodes if m.name.startswith(f"bucket{b - 1}.") and m.type != pb.COMP_NODE)


def test_iteration_cli_writes_one_file_per_gpu_and_refuses_several_runs(tmp_path, capsys):
    base = ["iteration", "--trace", str(DEEPFM), "--device", "v100", "--iterations", "1", "--gpus-per-machine", "8",
            "--chakra", str(tmp_path / "it")]
    assert main([*base, "--scheme", "zen,sparcml", "--machines", "2"]) == 2
    assert "--chakra: one iteration of one scheme on one cluster" in capsys.readouterr().err
    assert main([*base, "--scheme", "zen", "--machines", "2,4"]) == 2
    assert list(tmp_path.iterdir()) == []
    assert main([*base, "--scheme", "zen", "--machines", "2"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"it.{r}.et" for r in range(16))
    assert _read(tmp_path / "it.3.et")[1][0].name == "forward"
