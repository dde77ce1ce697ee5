"""The `analytic` model: measure d, d^k, s on the chunks a scheme runs on and apply its closed form."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zensim.net import analytic
from zensim.net.analytic import SparsityStats
from zensim.schemes.choice import profile_chunks
from zensim.sparse.chunk import SparseChunk, union_indices
from zensim.trace.stats import part_counts, peak_part_density

# Which closed form describes which scheme (COO schemes only; others have none).
FORMULA_OF = {
    "dense-allreduce": "dense-ring",
    "agsparse-ring": "agsparse", "agsparse-hier": "agsparse", "agsparse-p2p": "agsparse",
    "ring-oneshot-central": "agsparse", "hier-oneshot-central": "agsparse", "p2p-central": "agsparse",
    "sparse-ps": "sparse-ps", "p2p-parallel-imbalanced": "sparse-ps",
    "zen-coo": "balanced-parallelism", "p2p-parallel-balanced": "balanced-parallelism",
    "hier-central": "hierarchical-centralization", "sparcml": "hierarchical-centralization",
    "hier-incr-central": "hierarchical-centralization",
    "zen-auto": "zen-auto",
}


def measure(chunks: Sequence[SparseChunk], numel: int, value_bytes: int = 4) -> SparsityStats:
    """d, d^k (the k of eq. (1)/(2), aligned groups; n-1 as a prefix union) and skewness s on n parts
    (ZEN's per-tensor s_G^n, averaged over the ranks that hold non-zeros, as the trace statistics do)."""
    n = len(chunks)
    prof = profile_chunks(chunks, numel)
    union = {k: g * prof.density for k, g in prof.gamma.items()}
    if n > 1:
        union[n - 1] = len(union_indices(list(chunks[: n - 1]))) / numel
    skews = [float(peak_part_density(part_counts(c.indices, numel, n), numel, n)) / (c.nnz / numel)
             for c in chunks if c.nnz]
    return SparsityStats(n, float(value_bytes * numel), prof.density, union, float(np.mean(skews)) if skews else 1.0)


def closed_form(scheme: str, stats: SparsityStats, bandwidth: float) -> float | None:
    """Seconds by the scheme's closed form, or None when it has none."""
    key = FORMULA_OF.get(scheme)
    return analytic.FORMULAS[key](stats, bandwidth) if key else None
