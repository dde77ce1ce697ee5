"""Every scheme of the design space aggregates exactly, in values mode and indices-only mode alike."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemes_support import CASES, make_chunks
from zensim.errors import ConfigError
from zensim.run import AggregationMismatch, check_results, run_ranks
from zensim.schemes import DISTINCT, RAW, build_point, build_scheme, scheme_names
from zensim.sparse.chunk import SparseChunk, sum_chunks

# lossless schemes that run indices-only too (value-dependent ones have tests of their own)
NAMES = [s for s in scheme_names() if s != "zen-auto"
         and build_scheme(s, 2, 2).caps.lossless and not build_scheme(s, 2, 2).caps.needs_values]


def _bytes(log):
    return [(m.stage, m.src, m.dst, m.nbytes, m.fmt) for m in log.messages]


@settings(max_examples=12, deadline=None)
@given(n=st.sampled_from([1, 2, 3, 5, 16]), numel=st.integers(1, 700), case=st.sampled_from(CASES),
       density=st.floats(0.0, 0.3), seed=st.integers(0, 2**16))
def test_every_scheme_equals_the_dense_sum_and_modes_agree(n, numel, case, density, seed):
    """Values and indices-only runs both equal the dense sum (checked by the driver) and log the
    same bytes: the bitset path sizes pieces exactly as the formats do on real chunks."""
    chunks = make_chunks(case, n, numel, density, seed, values=True)
    bare = [SparseChunk(c.indices) for c in chunks]
    expected = sum_chunks(chunks)
    for name in NAMES:
        with_values = run_ranks(build_scheme(name, n, numel), chunks)
        indices_only = run_ranks(build_scheme(name, n, numel), bare)
        assert _bytes(with_values.log) == _bytes(indices_only.log), name
        for res in with_values.results:
            assert np.array_equal(res.indices, expected.indices)
            np.testing.assert_allclose(res.values, expected.values, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 16])
@pytest.mark.parametrize("case", CASES)
def test_hard_cases_every_distinct_scheme(n, case):
    """Index 0 and the last index, all-overlap, no-overlap, one empty worker, for every n."""
    numel = 257
    chunks = make_chunks(case, n, numel, 0.1, n, values=True)
    for point in DISTINCT:
        run_ranks(build_point(point, n, numel), chunks)  # raises AggregationMismatch if wrong


def test_collapsed_raw_combinations_run_identically():
    """The 24 raw combinations give 15 distinct schemes; collapsed ones produce the same log."""
    assert len(RAW) == 24 and len(DISTINCT) == 15
    n, numel = 5, 300
    chunks = make_chunks("random", n, numel, 0.1, 7, values=False)
    logs = {}
    for raw in RAW:
        log = _bytes(run_ranks(build_point(raw, n, numel), chunks).log)
        logs.setdefault(raw.canonical().name, []).append(log)
    assert len(logs) == 15
    for name, runs in logs.items():
        assert all(r == runs[0] for r in runs), name
    distinct_logs = {str(runs[0]) for runs in logs.values()}
    assert len(distinct_logs) == 15  # no two distinct schemes send the same bytes here


def test_fp16_values_within_tolerance_and_bytes_halved():
    """Half-precision values: results within fp16 tolerance, COO entries 4 + 2 bytes."""
    n, numel = 4, 400
    chunks = make_chunks("random", n, numel, 0.1, 3, values=True)
    res = run_ranks(build_scheme("agsparse-p2p", n, numel, value_dtype="float16"), chunks)
    nnz = sum(c.nnz for c in chunks)
    assert sum(m.nbytes for m in res.log.messages) == 6 * (n - 1) * nnz


def test_check_rejects_a_wrong_result():
    """The driver's check fails loudly when a result misses an index or a value is off."""
    chunks = [SparseChunk(np.array([0, 5]), np.ones(2, np.float32)), SparseChunk(np.array([5, 9]), np.ones(2, np.float32))]
    good = sum_chunks(chunks)
    check_results("x", chunks, [good, good], 10)
    with pytest.raises(AggregationMismatch, match="missing"):
        check_results("x", chunks, [good, SparseChunk(good.indices[:2], good.values[:2])], 10)
    with pytest.raises(AggregationMismatch, match="values differ"):
        check_results("x", chunks, [good, SparseChunk(good.indices, good.values + 1)], 10)


def test_bad_inputs_raise_config_errors():
    """Unknown names and options, wrong chunk counts, mixed modes: one-line ConfigErrors."""
    with pytest.raises(ConfigError, match="unknown"):
        build_scheme("nope", 4, 100)
    with pytest.raises(ConfigError, match="option"):
        build_scheme("zen", 4, 100, colour="red")
    with pytest.raises(ConfigError, match="n = 0"):
        build_scheme("zen", 0, 100)
    with pytest.raises(ConfigError, match="needs a profile"):
        build_scheme("zen-auto", 4, 100)
    prog = build_scheme("sparcml", 2, 100)
    with pytest.raises(ConfigError, match="1 chunks for 2 ranks"):
        run_ranks(prog, [SparseChunk(np.array([1]))])
    with pytest.raises(ConfigError, match="outside"):
        run_ranks(prog, [SparseChunk(np.array([1])), SparseChunk(np.array([100]))])
    with pytest.raises(ConfigError, match="mix"):
        run_ranks(prog, [SparseChunk(np.array([1])), SparseChunk(np.array([1]), np.ones(1, np.float32))])


def test_raw_and_distinct_names_build():
    """build_scheme accepts distinct names and 'a/b/c/d' raw names."""
    assert build_scheme("ring/one-shot/centralization/balanced", 3, 50).name == "ring/one-shot/centralization/balanced"
    assert build_scheme("hier-incr-parallel-balanced", 3, 50).num_stages == 1 + 1 + 1 + 1


@pytest.mark.parametrize("block_size", [1, 100, 256])
@pytest.mark.parametrize("value_dtype", ["float32", "bfloat16"])
def test_block_sizes_and_value_dtypes_agree_across_modes(block_size, value_dtype):
    """Bitset sizing of blocks (any block size) and value widths equals the formats' on chunks."""
    n, numel = 5, 1000
    chunks = make_chunks("ends", n, numel, 0.05, 11, values=True)
    bare = [SparseChunk(c.indices) for c in chunks]
    for name in ("omnireduce", "zen", "dense-allreduce"):
        a = run_ranks(build_scheme(name, n, numel, block_size=block_size, value_dtype=value_dtype), chunks)
        b = run_ranks(build_scheme(name, n, numel, block_size=block_size, value_dtype=value_dtype), bare)
        assert _bytes(a.log) == _bytes(b.log)
