"""The validation's hashing report uses the same imbalance metrics and Theorem 2 bounds as zensim.sparse."""

import numpy as np

from emulate.validate import hash_imbalance
from zensim.sparse.hashpart import h0_parts
from zensim.sparse.imbalance import theorem2_bounds
from zensim.trace import TensorSpec, Trace, TraceWriter


def test_hash_imbalance_matches_definitions_and_bounds(tmp_path):
    n, numel = 6, 200_000
    rng = np.random.default_rng(3)
    sets = [np.unique(rng.integers(0, numel // 4, 6_000)) for _ in range(n)]  # skewed: first quarter only
    path = tmp_path / "t.zt"
    with TraceWriter(path, [TensorSpec("g", numel)], workers=n, iterations=1) as w:
        for r, idx in enumerate(sets):
            w.write(0, r, 0, idx)
    with Trace.open(path) as t:
        got = hash_imbalance(t, 0, n)
    push = max(n * np.bincount(h0_parts(s, n, 0), minlength=n).max() / len(s) for s in sets)
    union = np.unique(np.concatenate(sets))
    pull = n * np.bincount(h0_parts(union, n, 0), minlength=n).max() / len(union)
    push_bound, pull_bound = theorem2_bounds(n, min(len(s) for s in sets), len(union))
    assert got == {"push": push, "pull": pull, "push_bound": push_bound, "pull_bound": pull_bound}
    assert got["push"] <= got["push_bound"] and got["pull"] <= got["pull_bound"]
