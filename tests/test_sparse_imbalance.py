"""Imbalance metrics: contiguous push imbalance is the skewness ratio, ZEN hashing stays below 1.1
and within Theorem 2's bound on skewed sets (and within it on the shipped traces), thresholds balance the union they were computed on."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from zensim.sparse import (
    Contiguous, HierarchicalHash, SparseChunk, Thresholds, imbalance_report, pull_imbalance,
    push_imbalance, theorem2_bounds,
)
from zensim.trace import Trace

NUMEL, N = 4_000_000, 16


def _skewed_workers(workers: int, density: float, seed: int) -> list[SparseChunk]:
    """Per worker `density` x NUMEL ids drawn with most mass at low ids (u**3), overlapping."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(workers):
        ids = np.sort((NUMEL * rng.random(int(1.3 * density * NUMEL)) ** 3).astype(np.int64))
        ids = ids[np.r_[True, np.diff(ids) > 0]]
        out.append(SparseChunk(np.sort(rng.choice(ids, int(density * NUMEL), replace=False))))
    return out


def _skewness(indices: np.ndarray, numel: int, n: int) -> float:
    """s_G^n = max_j d_{G_j} / d_G over n equal contiguous parts (numel divisible by n)."""
    counts, _ = np.histogram(indices, bins=n, range=(0, numel))
    return float((counts / (numel / n)).max() / (len(indices) / numel))


@pytest.fixture(scope="module")
def workers() -> list[SparseChunk]:
    return _skewed_workers(N, 0.05, seed=0)


def test_contiguous_push_imbalance_is_the_skewness_ratio(workers) -> None:
    part = Contiguous(NUMEL, N)
    for chunk in workers[:3]:
        assert push_imbalance(part, [chunk]) == pytest.approx(_skewness(chunk.indices, NUMEL, N), rel=1e-12)
    assert push_imbalance(part, workers) == pytest.approx(max(_skewness(c.indices, NUMEL, N) for c in workers))
    assert push_imbalance(part, workers) > 2  # the input really is skewed


def test_zen_hashing_balanced_within_theorem2(workers) -> None:
    report = imbalance_report(HierarchicalHash(NUMEL, N, seed=0), workers)
    assert 1.0 <= report.push < 1.1 and report.push <= report.push_bound
    assert 1.0 <= report.pull < 1.1 and report.pull <= report.pull_bound
    contiguous = imbalance_report(Contiguous(NUMEL, N), workers)
    assert contiguous.pull > 2 and contiguous.push > report.push


def test_thresholds_balance_the_union_they_saw(workers) -> None:
    part = Thresholds(NUMEL, N, period=100)
    part.prepare(0, workers)
    everything = np.sort(np.concatenate([c.indices for c in workers]))
    union_size = 1 + int(np.count_nonzero(np.diff(everything)))
    assert pull_imbalance(part, workers) <= 1 + N / union_size
    drifted = [SparseChunk(NUMEL - 1 - c.indices[::-1]) for c in workers]
    part.prepare(1, drifted)  # not a recompute iteration: stale boundaries
    assert pull_imbalance(part, drifted) > 2


def test_theorem2_bound_constants() -> None:
    assert theorem2_bounds(1, 10, 10) == (1.0, 1.0)
    push, pull = theorem2_bounds(16, 10**9, 10**9)
    assert pull - 1 == pytest.approx(math.sqrt(4 * 16 * math.log(16) / 10**9), rel=1e-3)
    assert push - 1 == pytest.approx(math.sqrt(6 * 16 * math.log(16) / 10**9), rel=1e-3)
    values = [theorem2_bounds(16, m, m)[1] for m in (100, 10**4, 10**6)]
    assert values == sorted(values, reverse=True)
    assert math.isinf(theorem2_bounds(4, 0, 0)[0])


def test_empty_workers_are_skipped() -> None:
    empty = SparseChunk.empty(False)
    part = HierarchicalHash(1000, 4)
    assert push_imbalance(part, [empty, empty]) == 1.0
    assert pull_imbalance(part, [empty]) == 1.0
    one = SparseChunk(np.array([0, 5, 999], np.int64))
    assert push_imbalance(part, [empty, one]) == push_imbalance(part, [one])


# index traces only: a dense-gradient trace holds every element on every worker (nothing to balance)
SHIPPED = [p for p in sorted((Path(__file__).resolve().parent.parent / "traces").glob("*.zt"))
           if not Trace.open(p).is_dense]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_zen_hashing_on_shipped_traces_within_theorem2(path: Path) -> None:
    trace = Trace.open(path)
    chunks = [SparseChunk(trace.flat_indices(0, w)) for w in range(trace.workers)]
    report = imbalance_report(HierarchicalHash(trace.numel, trace.workers), chunks)
    assert report.push <= report.push_bound and report.pull <= report.pull_bound
    assert report.pull < 1.1  # push is not: ~8k ids per worker is too few for 1.1 (see docs/sparse.md)
    contiguous = imbalance_report(Contiguous(trace.numel, trace.workers), chunks)
    assert contiguous.push > report.push and contiguous.pull > report.pull


def test_theorem2_bound_holds_and_is_not_vacuous_over_many_seeds() -> None:
    """Over 40 shared seeds the bound may fail with probability <= 1/n each; it must also be
    tight enough that the observed excess reaches a fair fraction of it."""
    n, rng = 8, np.random.default_rng(1)
    failures, fractions = 0, []
    for seed in range(40):
        chunks = [SparseChunk(np.sort(rng.choice(200_000, 2000, replace=False))) for _ in range(n)]
        r = imbalance_report(HierarchicalHash(200_000, n, seed=seed, model_memory=False), chunks)
        failures += r.push > r.push_bound or r.pull > r.pull_bound
        fractions.append((r.push - 1) / (r.push_bound - 1))
    assert failures <= 40 / n
    assert np.mean(fractions) > 0.3
