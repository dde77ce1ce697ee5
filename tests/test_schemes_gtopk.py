"""gTop-k: the receiver of every reduction round sums what arrives with what it holds and keeps the
top k at once (selection after every sum), checked against an independent reference of the
algorithm on the issue 28 case and on random small cases (final vector and every rank's residual)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zensim.run import run_ranks
from zensim.schemes import build_scheme
from zensim.sparse.chunk import SparseChunk


def top(vec: np.ndarray, present: np.ndarray, k: int) -> np.ndarray:
    """Mask of the k largest magnitudes among the present entries (all of them if at most k)."""
    keep = np.zeros_like(present)
    ids = np.flatnonzero(present)
    keep[ids[np.argsort(-np.abs(vec[ids]), kind="stable")[:k]]] = True
    return keep


def reference(grads: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """gTop-k as Shi et al. describe it, on dense float32 rows: local top-k, then in round i every
    rank r with r mod 2^(i+1) = 2^i sends its set to r - 2^i, which adds it to its own and keeps the
    top k; what a rank does not keep is its residual. Returns (the final vector, the residuals)."""
    P = len(grads)
    held = grads.copy()
    present = np.array([top(g, g != 0, k) for g in grads])
    residual = np.where(present, 0, grads).astype(np.float32)
    held[~present] = 0
    for i in range(math.ceil(math.log2(P))):
        step = 1 << i
        for r in range(step, P, 2 * step):
            dst = r - step
            total, union = held[dst] + held[r], present[dst] | present[r]
            keep = top(total, union, k)
            residual[dst] += np.where(union & ~keep, total, 0)
            held[dst], present[dst] = np.where(keep, total, 0), keep
    return held[0], residual


def scheme(grads: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The same through zensim's gtopk (its inputs: every rank's local top-k, as the reference's)."""
    P, numel = grads.shape
    chunks, residual = [], grads.copy()
    for r, g in enumerate(grads):
        ids = np.flatnonzero(top(g, g != 0, k))
        chunks.append(SparseChunk(ids, g[ids]))
        residual[r, ids] = 0
    out = run_ranks(build_scheme("gtopk", P, numel, density=k / numel), chunks, check=False)
    final = np.zeros(numel, np.float32)
    final[out.results[0].indices] = out.results[0].values
    for res in out.results[1:]:
        assert np.array_equal(res.indices, out.results[0].indices) and np.array_equal(res.values, out.results[0].values)
    for rank, parts in out.context.discarded.items():
        for part in parts:
            np.add.at(residual[rank], part.indices, part.values)
    return final, residual


def test_issue_28_case() -> None:
    """P = 3, k = 1: rank 0 keeps {1: 2} of [1,2,0,0], then of [1+1.5, 2, 0, 0] again {1: 2}."""
    grads = np.array([[1, 0, 0, 0], [0, 2, 0, 0], [1.5, 0, 0, 0]], np.float32)
    final, residual = scheme(grads, 1)
    assert final.tolist() == [0, 2, 0, 0]
    assert residual.tolist() == [[2.5, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    ref_final, ref_residual = reference(grads, 1)
    assert np.array_equal(ref_final, final) and np.array_equal(ref_residual, residual)


@pytest.mark.parametrize("seed", range(4))
def test_matches_the_reference_on_random_cases(seed: int) -> None:
    """300 cases per seed: P 2..9, numel 2..12, k 1..numel, gradients with zeros (fewer than k
    non-zeros on some ranks): the final vector and every residual equal, bit for bit."""
    rng = np.random.default_rng(seed)
    for _ in range(300):
        P, numel = int(rng.integers(2, 10)), int(rng.integers(2, 13))
        k = int(rng.integers(1, numel + 1))
        grads = rng.standard_normal((P, numel)).astype(np.float32)
        grads[rng.random((P, numel)) < 0.4] = 0
        final, residual = scheme(grads, k)
        ref_final, ref_residual = reference(grads, k)
        assert np.array_equal(final, ref_final), (P, numel, k)
        assert np.array_equal(residual, ref_residual), (P, numel, k)
        assert np.allclose(final + residual.sum(axis=0), grads.sum(axis=0), atol=1e-5)
