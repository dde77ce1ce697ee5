"""Values through the schemes: bit-identical replicas in every dtype, range errors, flushed values,
logged bytes equal to sent bytes, and checks that cannot pass a wrong result."""

from __future__ import annotations

import numpy as np
import pytest

from schemes_support import CASES, make_chunks
from zensim.errors import ConfigError, ValueRangeError
from zensim.run import AggregationMismatch, InBytes, check_results, run_ranks
from zensim.schemes import all_schemes, build_scheme
from zensim.sparse.chunk import SparseChunk, same_bits

DTYPES = ("float32", "float16", "bfloat16")
LOSSLESS = [s for s in all_schemes() if build_scheme(s, 3, 50).caps.lossless]


def _chunks(values_by_rank: list[list[float]], ids: list[int] | None = None) -> list[SparseChunk]:
    """One chunk per rank holding `values_by_rank[r]` at `ids` (default 0, 1, ...)."""
    out = []
    for vals in values_by_rank:
        idx = np.array(ids if ids is not None else range(len(vals)), np.int64)
        out.append(SparseChunk(idx, np.array(vals, np.float32)))
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", LOSSLESS)
@pytest.mark.parametrize("n", [3, 5, 8])
def test_replicas_are_bit_identical(name, dtype, n):
    """Every rank ends with the same bits (the driver asserts it for programs that promise it;
    asserted here again), on values spread over many magnitudes, where order changes the sum."""
    prog = build_scheme(name, n, 600, value_dtype=dtype)
    rng = np.random.default_rng(n)
    chunks = []
    for c in make_chunks("random", n, 600, 0.2, n + len(name), values=True):
        scale = 10.0 ** rng.integers(-3, 4, c.nnz)
        chunks.append(SparseChunk(c.indices, (c.values * scale).astype(np.float32)))
    out = run_ranks(prog, chunks)
    if prog.caps.replicas_identical:
        assert all(same_bits(r, out.results[0]) for r in out.results)


@pytest.mark.parametrize("name", ["agsparse-ring", "agsparse-hier", "agsparse-p2p", "sparcml", "ring-oneshot-central",
                                  "p2p-central", "hier-oneshot-central"])
def test_centralized_sums_agree_where_order_matters(name):
    """1e30 + 1 - 1e30 depends on the order: every rank must still end with the same value (the
    sums run in the order of the contributing ranks, not of arrival)."""
    prog = build_scheme(name, 3, 4)
    out = run_ranks(prog, _chunks([[1e30], [1.0], [-1e30]]), check=False)
    assert len({r.values.tobytes() for r in out.results}) == 1


def test_ring_incremental_centralization_declares_rank_dependent_sums():
    """Each rank of the ring with Incremental Centralization is the root of its own ring: its sums
    associate differently, so its replicas cannot be identical in general; the capability says so."""
    prog = build_scheme("ring-incr-central", 3, 4)
    assert not prog.caps.replicas_identical
    out = run_ranks(prog, _chunks([[1e30], [1.0], [-1e30]]), check=False)
    assert len({r.values.tobytes() for r in out.results}) > 1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_dense_allreduce_in_half_precision_ends_identical(dtype):
    """The owner of a partition keeps what it sent (rounded), as every other rank receives it."""
    prog = build_scheme("dense-allreduce", 4, 4, value_dtype=dtype)
    out = run_ranks(prog, _chunks([[0.1, 0.2, 0.3, 0.4]] * 4))
    assert len({r.values.tobytes() for r in out.results}) == 1


def test_overflowing_sum_is_a_user_error_not_a_nan():
    """sparcml on [1e38] x 4 + [-1e38] x 4: the float32 partial sums overflow; that is a one-line
    ValueRangeError naming the scheme, not NaN on every rank passed as correct."""
    prog = build_scheme("sparcml", 8, 1)
    with pytest.raises(ValueRangeError, match="sparcml: a sum of values overflows float32"):
        run_ranks(prog, _chunks([[1e38]] * 4 + [[-1e38]] * 4))


def test_check_fails_on_nan_and_infinite_results():
    """NaN is never within tolerance; huge magnitudes do not switch the check off."""
    chunks = _chunks([[1e38], [-1e38]])
    good = SparseChunk(np.array([0]), np.array([0.0], np.float32))
    check_results("x", chunks, [good, good], 1)
    for bad in (np.nan, np.inf, 1e37):
        wrong = SparseChunk(np.array([0]), np.array([bad], np.float32))
        with pytest.raises(AggregationMismatch, match="values differ"):
            check_results("x", chunks, [wrong, wrong], 1)


def test_check_rejects_replicas_that_differ_in_one_bit():
    chunks = _chunks([[1.0], [2.0]])
    a = SparseChunk(np.array([0]), np.array([3.0], np.float32))
    b = SparseChunk(np.array([0]), np.nextafter(np.float32(3.0), np.float32(4.0)).reshape(1))
    check_results("x", chunks, [a, b], 1, replicas_identical=False)
    with pytest.raises(AggregationMismatch, match="differs from rank 0"):
        check_results("x", chunks, [a, b], 1)


@pytest.mark.parametrize("name", ["zen", "dense-allreduce", "agsparse-ring"])
def test_value_beyond_float16_range_is_a_user_error(name):
    """A gradient of 1e5 does not fit float16: one line naming the value, the element and the dtype."""
    prog = build_scheme(name, 2, 10, value_dtype="float16")
    with pytest.raises(ValueRangeError, match=r"value 100000 at element 3 is beyond float16's range"):
        run_ranks(prog, _chunks([[1.0, 1e5], [1.0, 1.0]], ids=[2, 3]))


def test_values_flushed_to_zero_are_counted():
    """Values below float16's smallest subnormal become 0 on the wire: counted, and dense formats
    (no ids) then drop them, so the result lacks those indices."""
    chunks = _chunks([[1e-9, 1.0, 2e-9], [1.0, 1.0, 1.0]])
    out = run_ranks(build_scheme("agsparse-p2p", 2, 3, value_dtype="float16"), chunks)
    assert out.context.flushed == 2
    assert out.results[0].values.tolist() == [1.0, 2.0, 1.0]


@pytest.mark.parametrize("name", ["omnireduce", "dense-allreduce", "ring-incr-parallel-imbalanced"])
def test_explicit_zeros_log_the_bytes_that_are_sent(name):
    """Formats without ids (blocks, dense) cannot carry an explicit 0.0: the in-memory log must
    count exactly what the bytes transport sends."""
    n, numel = 4, 3000
    chunks = make_chunks("random", n, numel, 0.05, 5, values=True)
    zeroed = []
    for c in chunks:
        v = c.values.copy()
        v[::2] = 0.0
        zeroed.append(SparseChunk(c.indices, v))
    opts = {"push": "blocks", "pull": "blocks"} if name.startswith("ring") else {}
    memory = run_ranks(build_scheme(name, n, numel, **opts), zeroed)
    wire = run_ranks(build_scheme(name, n, numel, **opts), zeroed, InBytes())
    assert memory.log.messages == wire.log.messages


def test_needs_values_and_option_errors_are_one_line():
    with pytest.raises(ConfigError, match="unknown option.*colour.*it accepts"):
        build_scheme("zen", 4, 100, colour="red")
    with pytest.raises(ConfigError, match="value_dtype = 'float8'"):
        build_scheme("zen", 4, 100, value_dtype="float8")
    with pytest.raises(ConfigError, match="block_size = 0"):
        build_scheme("omnireduce", 4, 100, block_size=0)
    with pytest.raises(ConfigError, match="sparcml: unknown option.*pull"):
        build_scheme("sparcml", 4, 100, pull="coo")  # Centralization has no pull step


def test_pull_option_of_the_emulate_help_example_is_accepted():
    """`zensim emulate --scheme zen --options '{"pull": "hash_bitmap"}'` (its --help example)."""
    assert build_scheme("zen", 4, 100, pull="hash_bitmap").pull.name == "hash_bitmap"
    assert build_scheme("zen", 4, 100, pull="coo").pull.name == "coo"


@pytest.mark.parametrize("case", CASES)
def test_values_and_indices_only_log_the_same_bytes(case):
    """The bitset path sizes pieces exactly as the formats do on chunks with values."""
    n, numel = 5, 800
    chunks = make_chunks(case, n, numel, 0.1, 3, values=True)
    bare = [SparseChunk(c.indices) for c in chunks]
    for name in all_schemes():
        if build_scheme(name, n, numel).caps.needs_values:  # value-dependent: no indices-only mode
            continue
        a = run_ranks(build_scheme(name, n, numel), chunks).log
        b = run_ranks(build_scheme(name, n, numel), bare).log
        assert a.messages == b.messages, name
