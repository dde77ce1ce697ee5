"""simulate(): layouts, closed forms through the whole pipeline, records, outputs, CLI errors."""

import json
import subprocess
import sys

import numpy as np
import pytest

from zensim.cli import main
from zensim.errors import ConfigError
from zensim.layout import machine_shards, place, prepare
from zensim.schemes import closed as analytic
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.profile import WorkCost
from zensim.net.topology import ClusterSpec
from zensim.sim import simulate
from zensim.schemes.closed import measure
from zensim.schemes import build_scheme
from zensim.sparse.chunk import SparseChunk, sum_chunks
from zensim.trace import TensorSpec, TraceWriter

NUMEL = 4096
B = 25e9 / 8


def write_trace(path, sets, iterations=1):
    with TraceWriter(path, [TensorSpec("t", NUMEL)], workers=len(sets), iterations=iterations) as w:
        for it in range(iterations):
            for worker, idx in enumerate(sets):
                w.write(it, worker, 0, np.asarray(idx, np.int64))
    return str(path)


@pytest.fixture
def skewed(tmp_path):
    rng = np.random.default_rng(3)
    sets = []
    for _ in range(8):  # half of each set in the first 1/8 of the tensor: Sparse PS skew
        hot = rng.choice(NUMEL // 8, 40, replace=False)
        cold = rng.choice(np.arange(NUMEL // 8, NUMEL), 40, replace=False)
        sets.append(np.sort(np.concatenate([hot, cold])))
    return write_trace(tmp_path / "skew.zt", sets)


def test_dense_ring_through_pipeline_matches_closed_form(skewed):
    costs = Costs(ClusterSpec(8, 1, B), WorkCost.zero())
    for model in MODELS:
        [rec] = simulate(skewed, "dense-allreduce", costs, model)
        want = analytic.dense_ring(analytic.SparsityStats(8, 4 * NUMEL, 0.0), B)
        assert rec.time_s == pytest.approx(want, rel=1e-9)
        assert rec.vs_dense == 1.0


def test_agsparse_equal_nnz_through_pipeline(tmp_path):
    rng = np.random.default_rng(0)
    sets = [np.sort(rng.choice(NUMEL, 64, replace=False)) for _ in range(6)]
    path = write_trace(tmp_path / "eq.zt", sets)
    chunks = [SparseChunk(np.asarray(s), None) for s in sets]
    want = analytic.agsparse(measure(chunks, NUMEL), B)
    for model in MODELS:
        for scheme in ("agsparse-p2p", "agsparse-ring"):
            [rec] = simulate(path, scheme, Costs(ClusterSpec(6, 1, B), WorkCost.zero()), model)
            assert rec.time_s == pytest.approx(want, rel=1e-9)
        [rec] = simulate(path, "agsparse-p2p", ClusterSpec(6, 1, B), "analytic")
        assert rec.time_s == pytest.approx(want, rel=1e-12)


def test_records_bytes_and_imbalance(skewed):
    recs = simulate(skewed, "sparse-ps,zen", ClusterSpec(8, 1, B), next(iter(MODELS)))
    ps, zen = recs
    assert ps.push_imbalance > 2 > zen.push_imbalance  # contiguous partitions feel the skew, hashing does not
    for r in recs:
        assert sum(r.bytes_sent) == sum(r.bytes_received) > 0
        assert 0 < r.busiest_link_util <= 1 + 1e-9
        assert len(r.stage_times_s) == r.simulated.log.num_stages
        json.dumps(r.to_dict())


def test_push_and_pull_imbalance_are_zens_definitions(skewed):
    """push = max_{i,j} n |I_i^j| / |I_i| and pull = max_j n |𝕀_j| / |I| of the scheme's own
    partitioner, computed independently here; the bytes received before the pull, max / mean, has a
    name of its own (recv_imbalance); Centralization partitions nothing."""
    from zensim.schemes.partitioning import partitioner_for
    from zensim.sparse.imbalance import pull_imbalance, push_imbalance
    from zensim.trace import Trace

    with Trace.open(skewed) as t:
        chunks = [SparseChunk(t.flat_indices(0, w), None) for w in range(8)]
    recs = simulate(skewed, "sparse-ps,zen,sparcml", ClusterSpec(8, 1, B), "fifo")
    for rec, kind in zip(recs[:2], ("contiguous", "zen")):
        part = partitioner_for(kind, NUMEL, 8)
        assert rec.push_imbalance == pytest.approx(push_imbalance(part, chunks), rel=1e-12)
        assert rec.pull_imbalance == pytest.approx(pull_imbalance(part, chunks), rel=1e-12)
        log = rec.simulated.log
        received = np.bincount(log.dst[log.stage < 1], weights=log.nbytes[log.stage < 1], minlength=8)
        assert rec.recv_imbalance == pytest.approx(received.max() / received.mean(), rel=1e-12)
    assert recs[2].push_imbalance is None and recs[2].pull_imbalance is None


def test_values_and_options_reach_the_schemes(skewed):
    """--values carries (synthetic) values through every scheme; options reach them (fp16 halves
    the value bytes of COO: 4 + 2 instead of 4 + 4 per element)."""
    [plain] = simulate(skewed, "agsparse-p2p", ClusterSpec(8, 1, B), "fifo")
    [half] = simulate(skewed, "agsparse-p2p", ClusterSpec(8, 1, B), "fifo", options={"value_dtype": "float16"},
                      values=True)
    assert sum(half.bytes_sent) * 8 == sum(plain.bytes_sent) * 6
    with pytest.raises(ConfigError, match="unknown option"):
        simulate(skewed, "sparcml", ClusterSpec(8, 1, B), "fifo", options={"pull": "coo"})


def test_zen_layout_shards_are_machine_unions():
    chunks = [SparseChunk(np.array(ix, np.int64), None) for ix in ([0, 5, 9], [5, 6], [1, 8], [2, 9])]
    shards, bounds = machine_shards(chunks, 10, 2)  # 2 machines x 2 GPUs, shards [0,5) and [5,10)
    assert bounds.tolist() == [0, 5, 10]
    assert [c.indices.tolist() for c in shards[0]] == [[0], [1, 2]]
    assert [c.indices.tolist() for c in shards[1]] == [[0, 1, 4], [3, 4]]


def test_zen_layout_shards_are_the_sums_of_their_parts():
    """Indices-only shard unions (marked ids) equal sum_chunks' on overlapping and empty chunks."""
    rng = np.random.default_rng(5)
    numel, machines, gpus = 1000, 3, 4
    chunks = [SparseChunk(np.unique(rng.integers(0, numel, int(rng.integers(0, 300)))).astype(np.int64), None)
              for _ in range(machines * gpus)]
    chunks[5] = SparseChunk(np.empty(0, np.int64), None)
    shards, bounds = machine_shards(chunks, numel, gpus)
    for local, shard in enumerate(shards):
        for m, got in enumerate(shard):
            mine = chunks[m * gpus:(m + 1) * gpus]
            inside = [c.indices[(c.indices >= bounds[local]) & (c.indices < bounds[local + 1])] - bounds[local]
                      for c in mine]
            want = sum_chunks([SparseChunk(i, None) for i in inside])
            assert got.indices.dtype == np.int64 and np.array_equal(got.indices, want.indices)


@pytest.mark.parametrize("values", [False, True])
def test_layout_read_a_machine_at_a_time_is_the_same(tmp_path, values):
    """prepare_trace (machines read one at a time, shards kept compact) gives the chunks of
    prepare on every worker's chunk, ids int64, values as read."""
    from zensim.layout import load_chunks, prepare_trace
    from zensim.trace.format import Trace
    from zensim.trace.synth import SynthParams, synthesize
    path = tmp_path / "t.zt"
    synthesize(path, 12, [("a", 700), ("b", 300)], SynthParams(0.05, 0.3, 2.0), value_dtype="float32")
    with Trace.open(path) as trace:
        for machines, gpus in ((4, 3), (3, 4), (12, 1)):
            streamed = prepare_trace(trace, 0, machines, gpus, "zen", values)
            whole = prepare(load_chunks(trace, 0, machines * gpus, values), trace.numel, machines, gpus, "zen")
            assert np.array_equal(streamed.sizes, whole.sizes) and len(streamed.groups) == len(whole.groups)
            for got, want in zip(streamed.groups, whole.groups):
                assert len(got) == len(want)
                for a, b in zip(got, want):
                    assert a.indices.dtype == np.int64 and np.array_equal(a.indices, b.indices)
                    assert (a.values is None) == (not values)
                    assert a.values is None or np.array_equal(a.values, b.values)
        with pytest.raises(ConfigError, match="has 12 workers"):
            prepare_trace(trace, 0, 5, 3, "zen")


def test_zen_layout_log(skewed):
    def build(n, numel, part):
        return build_scheme("agsparse-p2p", n, numel)
    chunks = [SparseChunk(np.arange(w, NUMEL, 64, dtype=np.int64), None) for w in range(8)]
    placed = place(prepare(chunks, NUMEL, 2, 4, "zen"), build)
    cols = placed.log.arrays()
    intra = (cols["src"] // 4) == (cols["dst"] // 4)
    # dense reduce-scatter + all-gather: each GPU sends 3 shards of NUMEL/4 fp32 each way
    assert cols["nbytes"][intra].sum() == 8 * 2 * 3 * (NUMEL // 4) * 4
    # across machines only GPUs of the same local rank talk
    assert ((cols["src"] % 4) == (cols["dst"] % 4))[~intra].all()
    assert placed.log.num_stages == 2 * 3 + placed.programs[0].num_stages


@pytest.mark.parametrize("numel,gpus", [(11, 3), (4099, 4), (7, 2)])
def test_zen_layout_dense_bytes_for_uneven_shards(numel, gpus):
    """Shards of unequal size (numel not divisible by g): each machine's reduce-scatter and
    all-gather still move (g-1) x numel fp32 each, and GPU l's shard has numel // g or one more."""
    machines = 2
    def build(n, size, part):
        return build_scheme("agsparse-p2p", n, size)
    chunks = [SparseChunk(np.arange(w % numel, numel, 3, dtype=np.int64), None) for w in range(machines * gpus)]
    prep = prepare(chunks, numel, machines, gpus, "zen")
    assert prep.sizes.sum() == numel and set(prep.sizes.tolist()) <= {numel // gpus, numel // gpus + 1}
    cols = place(prep, build).log.arrays()
    intra = (cols["src"] // gpus) == (cols["dst"] // gpus)
    assert cols["nbytes"][intra].sum() == machines * 2 * (gpus - 1) * numel * 4


def test_multi_gpu_runs_both_layouts(skewed):
    for layout in ("zen", "flat"):
        for model in MODELS:
            recs = simulate(skewed, "dense-allreduce,zen,hier-central", ClusterSpec(2, 4, B), model, layout=layout)
            assert all(r.time_s > 0 and r.gpus == 8 for r in recs)


def test_errors(skewed):
    with pytest.raises(ConfigError, match="unknown scheme"):
        simulate(skewed, "nope", ClusterSpec(8, 1, B))
    with pytest.raises(ConfigError, match="8 workers"):
        simulate(skewed, "zen", ClusterSpec(4, 4, B))
    with pytest.raises(ConfigError, match="--iteration"):
        simulate(skewed, "zen", ClusterSpec(8, 1, B), iteration=3)


def test_scheme_registered_after_import_is_simulated(skewed, monkeypatch):
    """The groups are read from the registry when asked: a scheme added after import is known, is
    in 'all' and 'presets', and simulates as the scheme it copies."""
    from dataclasses import replace

    from zensim.schemes import CATALOG
    from zensim.sim.run import resolve_schemes

    monkeypatch.setitem(CATALOG, "late-zen", replace(CATALOG["zen"], name="late-zen"))
    assert "late-zen" in resolve_schemes("all") and "late-zen" in resolve_schemes("presets")
    late, zen = simulate(skewed, "late-zen,zen", ClusterSpec(8, 1, B))
    assert late.scheme == "late-zen" and late.time_s == zen.time_s


def test_model_registered_after_import_is_simulated(skewed, monkeypatch):
    """The models are read from their registry when asked: one added after import simulates (here
    fifo under another name, timing as fifo)."""
    from zensim.net.models import MODELS

    monkeypatch.setitem(MODELS, "late-fifo", MODELS["fifo"])
    [late] = simulate(skewed, "zen", ClusterSpec(8, 1, B), "late-fifo")
    [fifo] = simulate(skewed, "zen", ClusterSpec(8, 1, B), "fifo")
    assert late.time_s == fifo.time_s


def test_model_options_reach_the_model(skewed):
    """A model's declared option given as a model option times as the named parameter does, and the
    CLI's text is typed as the option's default."""
    from zensim.cli import build_parser
    from zensim.sim.request import SimulateRequest

    args = build_parser().parse_args(["simulate", "--trace", skewed, "--model", "maxmin", "--model-option", "batch=0.5"])
    assert SimulateRequest.from_args(args).model_options == {"batch": 0.5}
    [generic] = simulate(skewed, "zen", ClusterSpec(8, 1, B), "maxmin", model_options={"batch": 0.5})
    [named] = simulate(skewed, "zen", ClusterSpec(8, 1, B), "maxmin", maxmin_batch=0.5)
    assert (generic.time_s, generic.vs_dense) == (named.time_s, named.vs_dense)


@pytest.mark.parametrize("args,message", [
    (["--scheme", "bogus"], "unknown scheme"),
    (["--machines", "4", "--gpus-per-machine", "4"], "8 workers"),
    (["--nic", "25Gbs"], "--nic"),
    (["--model-option", "batch=0.1"], "--model-option batch=0.1: not an option of model fifo (its options and "
     "defaults: none)"),
    (["--model", "maxmin", "--model-option", "batch=often"], "--model-option batch=often: expected a number"),
    (["--model", "maxmin", "--model-option", "batch"], "--model-option batch: expected KEY=VALUE"),
    (["--model", "analytic", "--model-option", "batch=0.1"], "not an option of model analytic"),
])
def test_cli_errors(skewed, capsys, args, message):
    assert main(["simulate", "--trace", skewed, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("zensim: error:") and message in err and "\n" not in err


def test_cli_outputs(skewed, tmp_path, capsys):
    timeline, csv_path = tmp_path / "t.json", tmp_path / "r.csv"
    assert main(["simulate", "--trace", skewed, "--machines", "4", "--gpus-per-machine", "2", "--scheme",
                 "zen,sparse-ps", "--timeline", str(timeline), "--csv", str(csv_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["records"]
    assert [r["scheme"] for r in rows] == ["zen", "sparse-ps"]
    doc = json.loads(timeline.read_text())
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert {(e["pid"], e["tid"]) for e in spans} == {(p, t) for p in (0, 2) for t in range(8)}  # odd pids: link counters
    names = [e for e in doc["traceEvents"] if e["name"] == "thread_name"]
    assert len(names) == 2 * 8 and all(e["dur"] >= 0 for e in spans)
    assert csv_path.read_text().splitlines()[0].startswith("scheme,source,model")


def test_cli_subprocess_exit_code(skewed):
    out = subprocess.run([sys.executable, "-m", "zensim.cli", "simulate", "--trace", skewed, "--nic", "fast"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1


@pytest.mark.parametrize("machines,gpus,layout", [(5, 1, "flat"), (3, 4, "zen"), (3, 4, "flat"), (4, 2, "zen")])
def test_dense_baseline_is_the_dense_scheme_without_the_driver(tmp_path, machines, gpus, layout):
    """The vs_dense reference is built from sizes alone: its messages are those of the dense-allreduce
    scheme run through the driver (same bytes, same order of stages), and with no local work it times
    the same on every model; a run without dense-allreduce in its list does not run that scheme."""
    from zensim.layout import dense_ring_log
    from zensim.sim.run import dense_baseline

    rng = np.random.default_rng(1)
    n = machines * gpus
    path = write_trace(tmp_path / "t.zt", [np.sort(rng.choice(NUMEL, 50, replace=False)) for _ in range(n)])
    costs = Costs(ClusterSpec(machines, gpus, B, nic_latency=2e-6), WorkCost.zero())
    chunks = [SparseChunk(np.arange(w, NUMEL, 5, dtype=np.int64), None) for w in range(n)]
    placed = place(prepare(chunks, NUMEL, machines, gpus, layout), lambda k, size, part: build_scheme("dense-allreduce", k, size))
    formula = dense_ring_log(machines, gpus, NUMEL, layout)
    for col in ("stage", "src", "dst", "nbytes"):
        assert np.array_equal(np.sort(getattr(formula, col)), np.sort(getattr(placed.log, col)))
    assert formula.num_stages == placed.log.num_stages
    for model in MODELS:
        [dense] = simulate(path, "dense-allreduce", costs, model, layout=layout)
        assert dense.vs_dense == pytest.approx(1.0, rel=1e-12)
        [zen] = simulate(path, "zen", costs, model, layout=layout)
        assert zen.time_s / zen.vs_dense == pytest.approx(dense_baseline(costs, NUMEL, model, layout), rel=1e-12)
