"""Balance as the schemes experience it, read off their message logs: ZEN's hashing keeps push and
pull imbalance below 1.1 and within Theorem 2; contiguous servers' push imbalance is the skewness."""

from __future__ import annotations

import numpy as np
import pytest

from zensim.run import run_ranks
from zensim.schemes import build_scheme
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.imbalance import theorem2_bounds

NUMEL, N = 2_000_000, 16


@pytest.fixture(scope="module")
def skewed() -> list[SparseChunk]:
    """Per worker 5% of the ids, drawn with most mass at low ids (u**4), overlapping."""
    rng = np.random.default_rng(0)
    return [SparseChunk(np.unique((NUMEL * rng.random(int(0.06 * NUMEL)) ** 4).astype(np.int64)))
            for _ in range(N)]


def _imbalance_from_log(log, chunks):
    """(push, pull): max n |I_i^j| / |I_i| from step-1 bytes (own part = the rest) and
    max n |𝕀_j| / |I| from step-2 bytes, 8 bytes per COO element."""
    n = len(chunks)
    sent = np.zeros((n, n), np.int64)
    pulled = np.zeros(n, np.int64)
    for m in log.messages:
        if m.stage == 0:
            sent[m.src, m.dst] = m.nbytes // 8
        else:
            pulled[m.src] = m.nbytes // 8
    nnz = np.array([c.nnz for c in chunks])
    sent[np.arange(n), np.arange(n)] = nnz - sent.sum(axis=1)
    push = float((n * sent / nnz[:, None]).max())
    return push, float(n * pulled.max() / pulled.sum())


def test_zen_hashing_balances_push_and_pull(skewed):
    """ZEN (COO push and pull): both ratios below 1.1 and within Theorem 2's bounds."""
    log = run_ranks(build_scheme("zen-coo", N, NUMEL), skewed).log
    push, pull = _imbalance_from_log(log, skewed)
    union = len(np.unique(np.concatenate([c.indices for c in skewed])))
    push_bound, pull_bound = theorem2_bounds(N, min(c.nnz for c in skewed), union)
    assert push < 1.1 and pull < 1.1
    assert push <= push_bound and pull <= pull_bound


def test_contiguous_push_imbalance_is_the_skewness_ratio(skewed):
    """Sparse PS: push imbalance = max over workers of s^n; pull = the union's skewness."""
    log = run_ranks(build_scheme("sparse-ps", N, NUMEL), skewed).log
    push, pull = _imbalance_from_log(log, skewed)
    skewness = max(float(np.bincount(c.indices // (NUMEL // N), minlength=N).max() * N / c.nnz) for c in skewed)
    assert push == pytest.approx(skewness, rel=1e-12)
    union = np.unique(np.concatenate([c.indices for c in skewed]))
    assert pull == pytest.approx(np.bincount(union // (NUMEL // N), minlength=N).max() * N / len(union), rel=1e-12)
