"""ZEN's automatic choice (eq. 1 vs eq. 2) and the profiled densification ratios it uses."""

from __future__ import annotations

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.schemes import SparsityProfile, build_scheme, profile_chunks, zen_choice, zen_costs
from zensim.sparse.chunk import SparseChunk

NUMEL = 4096


def _disjoint(n, per=50):
    return [SparseChunk(np.arange(r * per, (r + 1) * per, dtype=np.int64)) for r in range(n)]


def _identical(n, per=50):
    return [SparseChunk(np.arange(0, 2 * per, 2, dtype=np.int64)) for _ in range(n)]


def test_profile_measures_density_and_gamma_exactly():
    """Disjoint equal sets: γ^k = k; identical sets: γ^k = 1."""
    prof = profile_chunks(_disjoint(16), NUMEL)
    assert prof.density == pytest.approx(50 / NUMEL)
    assert prof.gamma == pytest.approx({1: 1.0, 2: 2.0, 4: 4.0, 8: 8.0, 16: 16.0})
    assert profile_chunks(_identical(6), NUMEL).gamma == pytest.approx({1: 1.0, 2: 1.0, 4: 1.0, 6: 1.0})


def test_eq1_and_eq2_and_the_choice():
    """Full overlap favours Balanced Parallelism, no overlap Hierarchical Centralization (ZEN §2.3)."""
    full = SparsityProfile(0.01, {2: 1.0, 4: 1.0, 8: 1.0, 16: 1.0})
    assert zen_costs(16, full) == pytest.approx((2 * 15 / 16, 4.0))
    assert zen_choice(16, full) == "zen"
    none = SparsityProfile(0.01, {2: 2.0, 4: 4.0, 8: 8.0, 16: 16.0})
    assert zen_costs(16, none) == pytest.approx((15 / 16 * 17, 15.0))
    assert zen_choice(16, none) == "hier-central"


def test_eq2_folds_for_any_n():
    """n = 6: p = 4, T_hc = γ^1 + γ^2 + fold (1) + unfold (γ^6)."""
    prof = SparsityProfile(0.01, {2: 1.5, 4: 2.5, 6: 3.0})
    assert zen_costs(6, prof) == pytest.approx((5 / 6 * 4.0, 1 + 1.5 + 1 + 3.0))
    with pytest.raises(ConfigError, match="missing"):
        zen_costs(6, SparsityProfile(0.01, {2: 1.5}))


def test_zen_auto_builds_the_chosen_scheme():
    """From profiled chunks or given statistics."""
    assert build_scheme("zen-auto", 16, NUMEL, profile=_identical(16)).name == "zen"
    assert build_scheme("zen-auto", 16, NUMEL, profile=_disjoint(16)).name == "hier-central"
    stats = SparsityProfile(0.01, {2: 1.0, 4: 1.0, 8: 1.0, 16: 1.0})
    assert build_scheme("zen-auto", 16, NUMEL, profile=stats).name == "zen"


def test_zen_auto_picks_the_cheaper_pull_format():
    """The hash bitmap costs |𝕀_j|/8 bytes plus the values, COO the ids plus the values: below an
    aggregated density of 1/32 COO is cheaper, and zen-auto must not pick the hash bitmap there
    (the setting of `zensim trace synth --workers 16 --numel 10000000 --density 0.0005 --overlap 0.9`)."""
    from zensim.run import run_ranks
    from zensim.trace.synth import SynthParams, layout, worker_sets

    n, numel = 16, 1_000_000
    lay = layout(numel, SynthParams(0.0005, 0.9, 1.0))
    chunks = [SparseChunk(s.astype(np.int64)) for s in worker_sets(lay, n, (2, 0, 0))]
    auto = build_scheme("zen-auto", n, numel, profile=chunks)
    assert auto.name == "zen" and auto.pull.name == "coo"
    pulled = {name: sum(m.nbytes for m in run_ranks(build_scheme(name, n, numel), chunks).log.messages if m.stage == 1)
              for name in ("zen", "zen-coo")}
    assert pulled["zen-coo"] < pulled["zen"]  # the hash bitmap would have cost more
    dense = SparsityProfile(0.2, {2: 1.5, 4: 2.0, 8: 2.5, 16: 3.0})
    assert build_scheme("zen-auto", n, numel, profile=dense).pull.name == "hash_bitmap"
