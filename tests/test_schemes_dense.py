"""Dense payloads stay dense (DensePiece): a dense ring adds arrays, and ends with the same bits on
the bytes transport as in memory, in every wire dtype, cancellations and overflows included. The dense
all-reduces written from sizes (zensim.layout.dense_log: ring, recursive doubling) are the dense
schemes' messages and work, each one fused collective kernel per rank (one launch, NCCL's), and
recursive doubling's bytes and time are its closed forms for any n; sparse schemes pay a launch per piece."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from schemes_support import make_chunks
from zensim.errors import ValueRangeError
from zensim.layout import DENSE_ALGORITHMS, DENSE_SCHEMES, dense_log, place, prepare
from zensim.run import InBytes, run_ranks
from zensim.schemes import build_scheme
from zensim.schemes.pieces import ChunkPiece, DensePiece, union
from zensim.run.context import Meter, RunContext
from zensim.sparse.chunk import SparseChunk, same_bits, sum_chunks
from zensim.sparse.domain import RangeDomain
from zensim.net.costs import Costs
from zensim.net.profile import WorkCost
from zensim.net.replay import replay, work_seconds
from zensim.net.topology import ClusterSpec
from zensim.schemes import closed

NUMEL = 1000


def cancelling(n: int) -> list[SparseChunk]:
    """Random chunks where ranks 0 and 1 cancel exactly on some ids (x and -x)."""
    chunks = make_chunks("random", n, NUMEL, 0.3, 7, True)
    common = np.intersect1d(chunks[0].indices, chunks[1].indices)[:20]
    v1 = chunks[1].values.copy()
    v1[np.searchsorted(chunks[1].indices, common)] = -chunks[0].values[np.searchsorted(chunks[0].indices, common)]
    chunks[1] = SparseChunk(chunks[1].indices, v1)
    return chunks


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name,options", [("dense-allreduce", {}), ("ring-incr-parallel-balanced", {"push": "dense"}),
                                          ("sparcml", {"push": "dense"}), ("dense-doubling", {})])
@pytest.mark.parametrize("n", [2, 3, 5, 6])
def test_bytes_and_memory_end_with_the_same_bits(name, options, dtype, n):
    chunks = cancelling(n)
    prog = build_scheme(name, n, NUMEL, value_dtype=dtype, **options)
    memory = run_ranks(prog, chunks)  # checks the dense sum and identical replicas
    wire = run_ranks(build_scheme(name, n, NUMEL, value_dtype=dtype, **options), chunks, InBytes())
    for a, b in zip(memory.results, wire.results):
        assert same_bits(a, b)
    assert wire.log.messages == memory.log.messages


def test_a_dense_sum_is_the_sparse_sum():
    """Two pieces: the float32 array addition gives the bits of the float64 sum rounded to float32."""
    rng = np.random.default_rng(3)
    domain = RangeDomain(100, 600)
    ctx = RunContext(Meter(1, 1))
    for _ in range(20):
        a = SparseChunk(np.sort(rng.choice(np.arange(100, 600), 300, replace=False)),
                        (rng.standard_normal(300) * 10.0 ** rng.integers(-20, 20, 300)).astype(np.float32))
        b = SparseChunk(np.sort(rng.choice(np.arange(100, 600), 200, replace=False)),
                        (rng.standard_normal(200) * 10.0 ** rng.integers(-20, 20, 200)).astype(np.float32))
        want = sum_chunks([a, b])
        want = SparseChunk(want.indices[want.values != 0], want.values[want.values != 0])
        for pa, pb in ((DensePiece.of(ChunkPiece(domain, a)), ChunkPiece(domain, b)),
                       (ChunkPiece(domain, a), DensePiece.of(ChunkPiece(domain, b))),
                       (DensePiece.of(ChunkPiece(domain, a)), DensePiece.of(ChunkPiece(domain, b)))):
            got = union([pa, pb], ctx)
            assert isinstance(got, DensePiece) and same_bits(got.to_chunk(), want)


def test_a_dense_sum_that_overflows_is_a_user_error():
    prog = build_scheme("dense-allreduce", 2, 4)
    big = [SparseChunk(np.arange(4), np.full(4, 3e38, np.float32))] * 2
    with pytest.raises(ValueRangeError, match="overflows float32"):
        run_ranks(prog, big, InBytes())


@pytest.mark.parametrize("machines,gpus,layout", [(5, 1, "flat"), (6, 1, "flat"), (8, 1, "flat"), (3, 4, "zen"),
                                                  (6, 2, "zen"), (3, 4, "flat")])
@pytest.mark.parametrize("algorithm", list(DENSE_ALGORITHMS))
def test_dense_logs_from_sizes_are_the_dense_schemes_messages(machines, gpus, layout, algorithm):
    """The sized log of each dense algorithm has exactly the messages (stage, source, destination, bytes) of
    its scheme run through the driver and placed on the cluster, in ZEN's layout (rings over NVLink inside
    the machines, the algorithm across them) and flat."""
    n = machines * gpus
    chunks = [SparseChunk(np.arange(w, NUMEL, 5, dtype=np.int64), None) for w in range(n)]
    placed = place(prepare(chunks, NUMEL, machines, gpus, layout),
                   lambda k, size, part: build_scheme(DENSE_SCHEMES[algorithm], k, size))
    sized = dense_log(machines, gpus, NUMEL, layout, algorithm)
    for col in ("stage", "src", "dst", "nbytes"):
        assert np.array_equal(np.sort(getattr(sized, col)), np.sort(getattr(placed.log, col)))
    assert sized.num_stages == placed.log.num_stages


@pytest.mark.parametrize("n", range(1, 14))
def test_recursive_doubling_bytes_and_time_are_its_closed_forms(n):
    """p = the largest power of two <= n, L = log2 p: the p active ranks send L whole tensors each, the
    n - p folded ranks one (to r - p), and r - p one back; on a switch without latency or work, stages
    in lockstep (rendezvous), the time is (L + 2 [n > p]) M / B, the scheme's closed form (exact: M and
    B powers of two); sent eagerly too when n is a power of two (with a fold, a partner idle during it
    sends its first exchange at once and delays the fold on the shared downlink)."""
    numel, p = 1 << 12, 1 << (n.bit_length() - 1)
    levels, m = p.bit_length() - 1, 4 * (1 << 12)
    log = dense_log(n, 1, numel, "flat", "doubling")
    want = [m * (levels + (r < n - p)) if r < p else m for r in range(n)]
    assert log.bytes_sent().tolist() == want
    assert log.bytes_received().tolist() == want
    bandwidth = 2.0**30
    seconds = replay(log, Costs(ClusterSpec(n, 1, bandwidth), WorkCost.zero(), rendezvous=True)).makespan
    assert seconds == closed.dense_doubling(closed.SparsityStats(n, float(m), 0.0), bandwidth)
    assert seconds == (levels + 2 * (n > p)) * m / bandwidth
    eager = replay(log, Costs(ClusterSpec(n, 1, bandwidth), WorkCost.zero())).makespan
    if n == p:
        assert eager == seconds
    prog = build_scheme("dense-doubling", n, numel)
    assert prog.caps.closed_form is closed.dense_doubling and prog.num_stages == max(1, levels + 2 * (n > p))


def work_by_piece(log) -> dict:
    """Elements of each (stage, rank, phase, kind) of a log's work."""
    out: dict = {}
    for w in log.work:
        key = (w.stage, w.rank, w.phase, w.kind)
        out[key] = out.get(key, 0) + w.elements
    return out


def work_by_kind(log) -> dict:
    """Elements of each work kind of a log."""
    out: dict = {}
    for w in log.work:
        out[w.kind] = out.get(w.kind, 0) + w.elements
    return out


@pytest.mark.parametrize("machines,gpus,layout", [(5, 1, "flat"), (8, 1, "flat"), (3, 4, "flat"), (3, 4, "zen"),
                                                  (4, 2, "zen"), (6, 2, "zen")])
@pytest.mark.parametrize("numel", [NUMEL, 1003])
@pytest.mark.parametrize("algorithm", list(DENSE_ALGORITHMS))
def test_the_dense_reference_does_the_dense_schemes_work(machines, gpus, layout, numel, algorithm):
    """The dense all-reduces from sizes (dense_log: the ring is the vs_dense reference) record the
    local work their scheme's own run records on the same cluster when every rank's gradient is
    dense: the same kinds (a dense reduction is an array addition, `add.dense`, not a union of sorted
    ids) and the same elements per (stage, rank, phase, kind), run through the driver. On sparse
    chunks only the ring's split of each rank's chunk (`slice`, per element of the chunk) differs."""
    n = machines * gpus
    sized = dense_log(machines, gpus, numel, layout, algorithm)
    dense = [SparseChunk(np.arange(numel, dtype=np.int64), None) for _ in range(n)]
    build = lambda k, size, part: build_scheme(DENSE_SCHEMES[algorithm], k, size)  # noqa: E731
    run = place(prepare(dense, numel, machines, gpus, layout), build, check=True).log
    assert work_by_kind(sized) == work_by_kind(run)
    assert work_by_piece(sized) == work_by_piece(run)
    if layout == "flat" or gpus == 1:
        assert {w.kind for w in sized.work} == {"scan.dense", "add.dense"} | ({"slice"} if algorithm == "ring" else set())
    assert launches_by_piece(sized) == launches_by_piece(run)  # one kernel per collective, on the same piece
    sparse = [SparseChunk(np.arange(w, numel, 5, dtype=np.int64), None) for w in range(n)]
    run = place(prepare(sparse, numel, machines, gpus, layout), build, check=True).log
    assert ({k: v for k, v in work_by_piece(sized).items() if k[3] != "slice"}
            == {k: v for k, v in work_by_piece(run).items() if k[3] != "slice"})
    assert launches_by_piece(sized) == launches_by_piece(run)


def launches_by_piece(log) -> dict:
    """Launches of each (stage, rank, phase, kind) of a log's work that pays any."""
    out: dict = {}
    for w in log.work:
        if w.launches:
            key = (w.stage, w.rank, w.phase, w.kind)
            out[key] = out.get(key, 0) + w.launches
    return out


FIXED = 1e-3  # s per launch, every kind
BETA = {"slice": 1e-9, "add": 2e-9, "scan": 3e-9, "merge": 5e-9, "copy": 7e-9}


def launch_costs() -> WorkCost:
    """Every operation FIXED per launch, BETA (or 0) per element."""
    return WorkCost({op: BETA.get(op, 0.0) for op in WorkCost.zero().per_element},
                    {op: FIXED for op in WorkCost.zero().per_element})


def per_rank(log, work: WorkCost) -> np.ndarray:
    """Seconds of local work of each rank, summed over stages and phases."""
    pre, post = work_seconds(log, Costs(ClusterSpec(1, 1, 1.0), work), work)
    return (pre + post).sum(axis=1)


@pytest.mark.parametrize("machines,gpus,layout", [(1, 1, "flat"), (2, 1, "flat"), (7, 1, "flat"), (128, 1, "flat"),
                                                  (3, 4, "zen"), (16, 8, "zen"), (3, 4, "flat")])
@pytest.mark.parametrize("algorithm", list(DENSE_ALGORITHMS))
def test_the_dense_reference_pays_one_launch_per_rank_and_collective(machines, gpus, layout, algorithm):
    """A dense collective runs as one kernel per rank, NCCL's: each rank of the dense reference pays the
    fixed cost once per collective it takes part in (1 flat; 3 in ZEN's layout: the reduce-scatter
    inside its machine, the all-reduce across machines, the all-gather) plus its elements x beta, in
    closed form (n dividing numel): the ring's 2(n-1) parts of numel/n sent and received, n-1 added,
    the one slice of numel; recursive doubling's log2 n exchanges of the whole tensor; never one per piece (what `per_piece` prices: the same
    elements, every piece a launch)."""
    numel, n = 1 << 20, machines * gpus
    log = dense_log(machines, gpus, numel, layout, algorithm)
    work = launch_costs()
    elements = np.zeros(n)
    for w in log.work:
        elements[w.rank] += w.elements * BETA[w.kind.split(".")[0]]
    collectives = 3 if layout == "zen" and gpus > 1 else 1
    assert per_rank(log, work) == pytest.approx(FIXED * collectives * (n > 1) + elements, rel=1e-12)
    pieces = np.bincount(log.w_rank, minlength=n)
    assert per_rank(log, replace(work, per_piece=True)) == pytest.approx(FIXED * pieces + elements, rel=1e-12)
    if layout == "flat" or gpus == 1:  # the per-element part in closed form
        part = numel / n
        want = ((BETA["slice"] * numel + (n - 2) * BETA["add"] * part + BETA["add"] * part
                 + 2 * (n - 1) * 2 * BETA["scan"] * part) if algorithm == "ring" and n > 1 and numel % n == 0 else None)
        if n > 1 and n & (n - 1) == 0 and algorithm == "doubling":  # log2 n exchanges: encode, decode, add
            want = np.log2(n) * (2 * BETA["scan"] + BETA["add"]) * numel
        if want is not None:
            assert elements == pytest.approx(np.full(n, want), rel=1e-9)


@pytest.mark.parametrize("machines,gpus,layout", [(8, 1, "flat"), (4, 2, "zen")])
@pytest.mark.parametrize("name", ["zen", "sparcml", "omnireduce", "agsparse-ring"])
def test_a_sparse_scheme_pays_a_launch_per_piece(machines, gpus, layout, name):
    """A sparse scheme's steps are kernels of their own with host synchronizations between them (message
    sizes): every piece of its work pays the fixed cost; in ZEN's layout its intra-machine rings are
    fused collectives (one launch each per GPU). So a rank pays FIXED x its scheme's pieces (+ 2) plus
    its elements x beta."""
    n, numel = machines * gpus, 4096
    chunks = [SparseChunk(np.unique(np.random.default_rng(w).integers(0, numel, 300)), None) for w in range(n)]
    log = place(prepare(chunks, numel, machines, gpus, layout),
                lambda k, size, part: build_scheme(name, k, size)).log
    assert not build_scheme(name, machines, numel).caps.collective
    work = replace(launch_costs(), per_element={op: 0.0 for op in WorkCost.zero().per_element})
    offset = gpus - 1 if layout == "zen" else 0  # the intra-machine rings' stages, first and last
    rings = (log.w_stage < offset) | (log.w_stage >= log.num_stages - offset)
    scheme_pieces = np.bincount(log.w_rank[~rings], minlength=n)
    assert scheme_pieces.min() > 2
    assert per_rank(log, work) == pytest.approx(FIXED * (scheme_pieces + 2 * (layout == "zen")), rel=1e-12)
