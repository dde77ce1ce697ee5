"""Trace statistics: constructed cases with exact answers and a brute-force comparison with Python sets."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

import zensim.trace.stats as st
from zensim.trace import TensorSpec, Trace, TraceWriter


def make_trace(path: Path, sets: dict[tuple[int, int, int], np.ndarray], specs: list[TensorSpec], n: int, iters: int):
    with TraceWriter(path, specs, n, iters) as w:
        for key, idx in sets.items():
            w.write(*key, idx)
    return Trace.open(path)


def by_k(rows: list[dict]) -> dict[int, dict]:
    return {r["k"]: r for r in rows}


def test_identical_sets(tmp_path: Path) -> None:
    idx = np.arange(3, 500, 7)
    t = make_trace(tmp_path / "t.zt", {(0, w, 0): idx for w in range(6)}, [TensorSpec("g", 1000)], 6, 1)
    s = st.trace_stats(t)
    assert s["density"]["mean"] == pytest.approx(len(idx) / 1000)
    assert s["overlap"]["pairs"] == 15 and s["overlap"]["min"] == s["overlap"]["max"] == 1.0
    assert [r["k"] for r in s["densification"]] == [1, 2, 4, 6]
    assert all(r["min"] == r["max"] == pytest.approx(1.0) for r in s["densification"])


def test_disjoint_sets_densify_by_k(tmp_path: Path) -> None:
    n, m = 6, 40
    sets = {(it, w, 0): np.arange(w * m, (w + 1) * m) * 3 + it for it in range(2) for w in range(n)}
    t = make_trace(tmp_path / "t.zt", sets, [TensorSpec("g", 1000)], n, 2)
    s = st.trace_stats(t)
    assert s["overlap"]["max"] == 0.0
    for r in s["densification"]:
        assert r["min"] == pytest.approx(r["k"]) and r["max"] == pytest.approx(r["k"])
        assert r["groups"] == n // r["k"]


def test_all_in_first_part_gives_skew_k(tmp_path: Path) -> None:
    t = make_trace(tmp_path / "t.zt", {(0, w, 0): np.arange(8) for w in range(2)}, [TensorSpec("g", 1024)], 2, 1)
    s = st.trace_stats(t)
    assert [r["k"] for r in s["skewness"]] == [2, 4, 8, 16, 32, 64, 128]
    for r in s["skewness"]:
        assert r["min"] == r["max"] == pytest.approx(r["k"])


def test_densification_ks() -> None:
    assert st.densification_ks(1) == [1]
    assert st.densification_ks(8) == [1, 2, 4, 8]
    assert st.densification_ks(12) == [1, 2, 4, 8, 12]


def test_pair_sample() -> None:
    a, b = st.sample_pairs(5, 256, 0)
    assert len(a) == 10 and set(zip(a, b)) == set(combinations(range(5), 2))
    a, b = st.sample_pairs(40, 256, 0)
    pairs = set(zip(a.tolist(), b.tolist()))
    assert len(pairs) == 256 and all(0 <= x < y < 40 for x, y in pairs)


def brute(sets: list[set[int]], numel: int, pairs, ks, skew_k) -> tuple:
    """Statistics of one iteration by plain Python sets, straight from the definitions."""
    d = np.mean([len(s) for s in sets]) / numel
    overlap = [len(sets[a] & sets[b]) / min(len(sets[a]), len(sets[b])) for a, b in pairs]
    gamma = {k: [len(set().union(*sets[g * k : (g + 1) * k])) / numel / d for g in range(len(sets) // k)] for k in ks}
    q, r = divmod(numel, skew_k)  # the first r parts have q + 1 elements, the others q
    i = np.arange(numel)
    part = np.where(i < r * (q + 1), i // (q + 1), r + (i - r * (q + 1)) // max(q, 1))
    sizes = np.bincount(part, minlength=skew_k)
    skew = [max(np.bincount(part[sorted(s)], minlength=skew_k) / sizes) / (len(s) / numel) for s in sets]
    return overlap, gamma, skew


def test_matches_brute_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(st, "BLOCK_BYTES", 5 * 8 * 3)  # 3 words per worker: many column blocks
    rng = np.random.default_rng(5)
    n, specs = 5, [TensorSpec("a", 1001), TensorSpec("b", 333)]
    sets = {
        (0, w, t): np.flatnonzero(rng.random(spec.numel) < rng.uniform(0.02, 0.3) * (1 + (np.arange(spec.numel) < 90)))
        for w in range(n)
        for t, spec in enumerate(specs)
    }
    s = st.trace_stats(make_trace(tmp_path / "t.zt", sets, specs, n, 1), skew_parts=(2, 8, 128))
    pairs = list(combinations(range(n), 2))
    flat = [set(sets[0, w, 0].tolist()) | set((sets[0, w, 1] + 1001).tolist()) for w in range(n)]
    scopes = [(s, flat, 1334)] + [
        (s["tensors"][spec.name], [set(sets[0, w, t].tolist()) for w in range(n)], spec.numel)
        for t, spec in enumerate(specs)
    ]
    for got, worker_sets, numel in scopes:
        for k_skew in (2, 8, 128):
            overlap, gamma, skew = brute(worker_sets, numel, pairs, [1, 2, 4, 5], k_skew)
            assert got["overlap"]["mean"] == pytest.approx(np.mean(overlap))
            assert got["overlap"]["median"] == pytest.approx(np.median(overlap))
            for k, r in by_k(got["densification"]).items():
                assert (r["mean"], r["min"], r["max"]) == pytest.approx((np.mean(gamma[k]), min(gamma[k]), max(gamma[k])))
            r = by_k(got["skewness"])[k_skew]
            assert (r["mean"], r["min"], r["max"]) == pytest.approx((np.mean(skew), min(skew), max(skew)))
        dens = [len(x) / numel for x in worker_sets]
        assert got["density"]["per_worker"] == pytest.approx(dens)


def test_empty_workers_are_skipped_not_divided_by(tmp_path: Path) -> None:
    sets = {(0, 0, 0): np.array([1, 2]), (0, 1, 0): np.empty(0, np.int64)}
    s = st.trace_stats(make_trace(tmp_path / "t.zt", sets, [TensorSpec("g", 64)], 2, 1))
    assert s["density"]["min"] == 0.0 and s["overlap"]["mean"] is None
    assert by_k(s["skewness"])[2]["max"] == pytest.approx(2.0)
    assert by_k(s["densification"])[2]["mean"] == pytest.approx(2.0)  # union 2 / 64 over mean density 1 / 64
