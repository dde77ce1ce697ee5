"""Shared helpers of the tests/test_schemes_*.py files: random traces with the hard cases."""

from __future__ import annotations

import numpy as np

from zensim.sparse.chunk import SparseChunk

CASES = ("random", "all-overlap", "no-overlap", "one-empty", "ends")


def make_chunks(case: str, n: int, numel: int, density: float, seed: int, values: bool) -> list[SparseChunk]:
    """One chunk per rank for a named case; 'ends' puts index 0 and numel-1 on every rank."""
    rng = np.random.default_rng(seed)
    nnz = max(1, int(density * numel))
    if case == "all-overlap":
        shared = rng.choice(numel, nnz, replace=False)
        sets = [shared] * n
    elif case == "no-overlap":
        perm = rng.permutation(numel)
        per = max(1, min(nnz, numel // n))
        sets = [perm[r * per:(r + 1) * per] for r in range(n)]
    else:
        sets = [rng.choice(numel, nnz, replace=False) for _ in range(n)]
        if case == "one-empty":
            sets[rng.integers(n)] = np.empty(0, np.int64)
        if case == "ends":
            sets = [np.concatenate([s, [0, numel - 1]]) for s in sets]
    chunks = []
    for s in sets:
        idx = np.unique(np.asarray(s, np.int64))
        vals = rng.standard_normal(len(idx)).astype(np.float32) if values else None
        chunks.append(SparseChunk(idx, vals))
    return chunks


def received(log, n: int, stages: range | None = None) -> np.ndarray:
    """Bytes each rank received (optionally only at the given stages)."""
    out = np.zeros(n, np.int64)
    for m in log.messages:
        if stages is None or m.stage in stages:
            out[m.dst] += m.nbytes
    return out
