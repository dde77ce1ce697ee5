"""Closed-form communication times (no latency, COO = 2 x 4 bytes per non-zero), ZEN §2.3 / thesis §3.2.4.

A scheme's closed form lives with it: the catalog entries and the design-space rule of
zensim.schemes.space name the function here; a program carries it as `caps.closed_form`.

Symbols: n workers, M dense tensor bytes (numel x 4), b bandwidth (bytes/s), d mean density of one
worker, d^k density of the union of k workers (densification γ^k = d^k / d), s skewness (largest
density of n contiguous parts / density, per worker, averaged over workers). Each is exact only under its assumptions (uniform
sizes, zero latency, non-blocking fabric, one GPU per machine); elsewhere it is the paper's estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from zensim.schemes.choice import SparsityProfile, profile_chunks, zen_costs
from zensim.sparse.chunk import SparseChunk, union_indices
from zensim.trace.stats import part_counts, peak_part_density


@dataclass(frozen=True)
class SparsityStats:
    """The measured inputs of the formulas: n, M (bytes), d, union densities d^k (k -> density), s."""

    n: int
    dense_bytes: float
    d: float
    union_density: dict[int, float] = field(default_factory=dict)
    skew: float = 1.0

    def gamma(self, k: int) -> float:
        """Densification ratio γ^k = d^k / d (1 for k = 1 or an empty tensor)."""
        return self.union_density[k] / self.d if k > 1 and self.d > 0 else 1.0

    def profile(self) -> SparsityProfile:
        """d and γ^k in the form ZEN's automatic choice takes."""
        return SparsityProfile(self.d, {k: self.gamma(k) for k in self.union_density})


def dense_ring(st: SparsityStats, b: float) -> float:
    """Dense ring all-reduce: 2(n-1)/n · M / b."""
    return 2 * (st.n - 1) / st.n * st.dense_bytes / b


def dense_doubling(st: SparsityStats, b: float) -> float:
    """Dense recursive doubling, folded: (log2 p + 2 [n > p]) · M / b, p the largest power of two <= n."""
    p = 1 << (st.n.bit_length() - 1)
    return ((p.bit_length() - 1) + (2 if st.n > p else 0)) * st.dense_bytes / b


def agsparse(st: SparsityStats, b: float) -> float:
    """AGsparse (all-gather of COO): 2(n-1) d M / b."""
    return 2 * (st.n - 1) * st.d * st.dense_bytes / b


def _coo_unit(st: SparsityStats, b: float) -> float:
    """2 M d / b: one worker's COO tensor over one link."""
    return 2 * st.dense_bytes * st.d / b


def balanced_parallelism(st: SparsityStats, b: float) -> float:
    """ZEN eq. (1): (n-1)/n · (γ^n + 1) · 2 M d / b."""
    return zen_costs(st.n, st.profile())[0] * _coo_unit(st, b)


def hierarchical_centralization(st: SparsityStats, b: float) -> float:
    """ZEN eq. (2): Σ_{i=1}^{log2 n} γ^{2^{i-1}} · 2 M d / b (with fold/unfold terms when n is not a power of two)."""
    return zen_costs(st.n, st.profile())[1] * _coo_unit(st, b)


def zen_auto(st: SparsityStats, b: float) -> float:
    """ZEN's choice: the smaller of eq. (1) and eq. (2)."""
    return min(zen_costs(st.n, st.profile())) * _coo_unit(st, b)


def sparse_ps(st: SparsityStats, b: float) -> float:
    """Sparse PS, contiguous partitions: 2(n-1)(d + d^n) s M / n / b."""
    dn = st.union_density.get(st.n, st.d)
    return 2 * (st.n - 1) * (st.d + dn) * st.skew * st.dense_bytes / st.n / b


def lower_bound(st: SparsityStats, b: float) -> float:
    """Receive the other n-1 workers' aggregated non-zeros, values only: d^{n-1} M / b."""
    return st.union_density.get(st.n - 1, st.d) * st.dense_bytes / b if st.n > 1 else 0.0


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
