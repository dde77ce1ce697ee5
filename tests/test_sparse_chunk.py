"""Chunk algebra: sum_chunks equals the dense sum, unions, run starts."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zensim.sparse import SparseChunk, sum_chunks, union_indices
from zensim.sparse.chunk import run_starts, union_marked, unique_sorted

NUMEL = 64


@settings(max_examples=80, deadline=None)
@given(st.lists(st.dictionaries(st.integers(0, NUMEL - 1), st.integers(-50, 50), max_size=NUMEL), max_size=6))
def test_sum_chunks_equals_dense_sum(workers: list[dict]) -> None:
    chunks = [SparseChunk(np.array(sorted(w), np.int64), np.array([w[k] for k in sorted(w)], np.float32))
              for w in workers]
    total = sum_chunks(chunks)
    dense = np.zeros(NUMEL)
    for w in workers:
        for k, v in w.items():
            dense[k] += v
    expected_ids = sorted(set().union(*workers)) if workers else []
    assert total.indices.tolist() == expected_ids
    assert np.array_equal(total.to_dense(NUMEL)[expected_ids], dense[expected_ids])
    bare = sum_chunks([SparseChunk(c.indices) for c in chunks])
    assert bare.values is None and bare.indices.tolist() == expected_ids
    assert union_indices(chunks).tolist() == expected_ids
    seen = np.zeros(NUMEL, np.bool_)
    assert union_marked(chunks, seen).tolist() == expected_ids
    assert not seen.any()  # left cleared for the next call


def test_unique_sorted_and_run_starts() -> None:
    assert unique_sorted(np.array([5, 1, 5, 0, 1], np.int64)).tolist() == [0, 1, 5]
    assert unique_sorted(np.empty(0, np.int64)).tolist() == []
    assert run_starts(np.array([2, 2, 3, 7, 7, 7])).tolist() == [True, False, True, True, False, False]
    assert run_starts(np.empty(0)).tolist() == []


def test_two_chunks_sum_to_the_rounded_float64_sum() -> None:
    """The two-chunk path adds in float32: the bits of the float64 sum rounded to float32."""
    rng = np.random.default_rng(3)
    ids = [np.sort(rng.choice(5000, 2000, replace=False)) for _ in range(2)]
    values = [(rng.standard_normal(2000) * 10.0 ** rng.integers(-8, 8, 2000)).astype(np.float32) for _ in range(2)]
    total = sum_chunks([SparseChunk(i, v) for i, v in zip(ids, values)])
    dense = np.zeros(5000)
    for i, v in zip(ids, values):
        dense[i] += v.astype(np.float64)
    assert total.indices.tolist() == union_indices([SparseChunk(i) for i in ids]).tolist()
    assert np.array_equal(total.values.view(np.int32), dense[total.indices].astype(np.float32).view(np.int32))
