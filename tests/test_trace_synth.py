"""Synthetic traces: measured statistics match the request within the tolerances of docs/trace-stats.md."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.trace import Trace
from zensim.trace.stats import trace_stats
from zensim.trace.synth import (SynthParams, layout, overlap_for_densification, sample_outside, sample_unique,
                                 synthesize)


def by_k(rows: list[dict]) -> dict[int, dict]:
    return {r["k"]: r for r in rows}


@pytest.mark.parametrize(
    "n,numel,params",
    [
        (8, 200_000, SynthParams(0.02, 0.4, 3.0)),
        (6, 99_999, SynthParams(0.05, None, 1.0)),
        (12, 150_001, SynthParams(0.01, 0.9, 6.5)),
    ],
)
def test_measured_statistics_match_request(tmp_path: Path, n: int, numel: int, params: SynthParams) -> None:
    path = tmp_path / "s.zt"
    synthesize(path, n, [("g", numel)], params, iterations=2, seed=3)
    with Trace.open(path) as t:
        s = trace_stats(t)
    lay = layout(numel, params)
    nnz = round(params.density * numel)
    assert s["density"]["min"] == s["density"]["max"] == nnz / numel  # exact
    assert by_k(s["skewness"])[8]["mean"] == pytest.approx(params.skew, abs=8 / nnz)  # exact up to rounding
    if params.overlap is not None:
        assert s["overlap"]["mean"] == pytest.approx(params.overlap, abs=0.01)
    for r in s["densification"]:
        assert r["mean"] == pytest.approx(lay.expected_union(r["k"]) / nnz, rel=0.02)


def test_layout_model() -> None:
    lay = layout(80_000, SynthParams(0.1, None, 1.0))
    assert lay.expected_overlap() == pytest.approx(0.1, rel=0.01)  # independent sets: overlap = density
    lay = layout(80_000, SynthParams(0.1, 1.0, 2.0))
    assert lay.expected_overlap() == 1.0 and lay.expected_union(16) == lay.nnz


def test_full_overlap_gives_identical_sets(tmp_path: Path) -> None:
    path = tmp_path / "s.zt"
    synthesize(path, 3, [("a", 5000), ("b", 777)], SynthParams(0.1, 1.0, 2.0), iterations=1, value_dtype="float16")
    with Trace.open(path) as t:
        assert np.array_equal(t.flat_indices(0, 0), t.flat_indices(0, 2))
        assert t.values(0, 1, "b").dtype == np.float16 and [x.name for x in t.tensors] == ["a", "b"]
        assert t.meta["provenance"]["seed"] == 0 and t.meta["provenance"]["params"]["overlap"] == 1.0


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        synthesize(tmp_path / f"{name}.zt", 4, [("g", 10_000)], SynthParams(0.03, 0.5, 2.0), seed=seed)
    data = [(tmp_path / f"{x}.zt").read_bytes() for x in "abc"]
    assert data[0] == data[1] != data[2]


def test_rows_are_drawn_whole_with_the_requested_statistics(tmp_path: Path) -> None:
    """An embedding-like trace: every index set is whole rows, and density, skewness and overlap hold at
    element level as requested at row level (rows divisible by 8: the 8 parts fall on row boundaries)."""
    row, rows, params = 16, 40_000, SynthParams(0.02, 0.4, 3.0, row=16)
    path = tmp_path / "rows.zt"
    synthesize(path, 6, [("embedding.weight", rows * row)], params, iterations=2, seed=5)
    with Trace.open(path) as t:
        s = trace_stats(t)
        for w in range(6):
            idx = t.indices(1, w, "embedding.weight")
            starts = idx[::row]
            assert np.array_equal(idx, (starts[:, None] + np.arange(row)).ravel()) and np.all(starts % row == 0)
        assert t.meta["provenance"]["params"]["row"] == row
    nnz = round(params.density * rows)
    assert s["density"]["min"] == s["density"]["max"] == nnz * row / (rows * row)
    assert by_k(s["skewness"])[8]["mean"] == pytest.approx(params.skew, abs=8 / nnz)
    assert s["overlap"]["mean"] == pytest.approx(params.overlap, abs=0.02)
    lay = layout(rows * row, params)
    assert lay.nnz == nnz and sum(lay.sizes) == rows


def test_inner_skews_multiply_into_the_finer_skewness(tmp_path: Path) -> None:
    """An inner skew of 4 inside s = 3: s^8 = 3 and s^64 = 12 (exact up to rounding), overlap still as
    asked; an inner level that would overflow its part is an error naming the flag."""
    params = SynthParams(0.01, 0.3, 3.0, inner=(4.0,))
    numel = 64 * 5_000
    path = tmp_path / "nested.zt"
    synthesize(path, 6, [("g", numel)], params, iterations=1, seed=2)
    with Trace.open(path) as t:
        s = trace_stats(t, skew_parts=(8, 64))
    nnz = round(0.01 * numel)
    assert by_k(s["skewness"])[8]["mean"] == pytest.approx(3.0, abs=8 / nnz)
    assert by_k(s["skewness"])[64]["mean"] == pytest.approx(12.0, abs=64 / nnz)
    assert s["overlap"]["mean"] == pytest.approx(0.3, abs=0.02)
    lay = layout(numel, params)
    assert len(lay.sizes) == 15 and sum(lay.sizes) == numel and lay.nnz == nnz
    assert list(lay.starts) == sorted(lay.starts)
    with pytest.raises(ConfigError, match=r"--skew-inner 3.0: must be in \[1, 2.222\] for the 2250 indices"):
        layout(numel, SynthParams(0.05, None, 3.0, inner=(3.0, 3.0)))
    with pytest.raises(ConfigError, match=r"--skew-inner 0.5"):
        layout(numel, SynthParams(0.05, None, 3.0, inner=(0.5,)))


@pytest.mark.parametrize(
    "params,pattern",
    [
        (SynthParams(0.0), r"--density 0.0"),
        (SynthParams(0.5, None, 3.0), r"--skew 3.0: must be in \[1, 2\]"),
        (SynthParams(0.01, None, 9.0), r"--skew 9.0"),
        (SynthParams(0.01, None, 0.5), r"--skew 0.5"),
        (SynthParams(0.01, None, float("nan")), r"--skew nan"),
        (SynthParams(0.01, None, float("inf")), r"--skew inf"),
        (SynthParams(0.2, 0.1, 1.0), r"--overlap 0.1: must be in \[0.2"),
        (SynthParams(0.01, row=3), r"--row 3: must be a positive divisor of the tensor's 10000 elements"),
        (SynthParams(0.01, row=0), r"--row 0"),
    ],
)
def test_impossible_requests(params: SynthParams, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        layout(10_000, params)


@pytest.mark.parametrize("size,count", [(100, 0), (100, 30), (100, 70), (100, 100), (10**7, 5000)])
def test_sample_unique(size: int, count: int) -> None:
    got = sample_unique(np.random.default_rng(0), size, count)
    assert len(got) == count and len(np.unique(got)) == count and np.all(np.diff(got) > 0)
    assert count == 0 or (got[0] >= 0 and got[-1] < size)


def test_sample_outside_avoids_taken() -> None:
    rng = np.random.default_rng(1)
    taken = np.sort(rng.choice(1000, 400, replace=False))
    got = sample_outside(rng, 1000, 600, taken)
    assert np.array_equal(np.union1d(got, taken), np.arange(1000))


@pytest.mark.parametrize("gamma", [1.86, 3.0])
def test_densification_request_gives_the_measured_gamma(tmp_path: Path, gamma: float) -> None:
    """--densification 8:G: the solved overlap gives gamma^8 = G, expected and measured on 16 workers."""
    params = SynthParams(0.028, None, 4.56, 4, (3.05,))
    numel = 400_000
    overlap = overlap_for_densification(numel, params, 8, gamma)
    lay = layout(numel, replace(params, overlap=overlap))
    assert lay.expected_union(8) / lay.nnz == pytest.approx(gamma, rel=0.01)  # shared counts are integers
    path = tmp_path / "d.zt"
    synthesize(path, 16, [("g", numel)], replace(params, overlap=overlap), seed=2)
    with Trace.open(path) as t:
        assert by_k(trace_stats(t)["densification"])[8]["mean"] == pytest.approx(gamma, rel=0.02)


def test_densification_out_of_reach() -> None:
    """Below 1 (identical sets) or above independent sets' union: one ConfigError naming the option."""
    params = SynthParams(0.028, None, 1.0)
    for gamma in (0.9, 8.5):
        with pytest.raises(ConfigError, match="--densification 8:"):
            overlap_for_densification(100_000, params, 8, gamma)
