"""ZEN's automatic choice between Balanced Parallelism and Hierarchical Centralization (ZEN §2.3).

Both costs are in units of 2 M d / b (COO, no latency), from the density d and the
densification ratios γ^k = d^k / d measured on profiled chunks or given:

- eq. (1), Balanced Parallelism: T_bp = (n-1)/n (γ^n + 1);
- eq. (2), Hierarchical Centralization: T_hc = Σ_{i=1}^{log2 n} γ^{2^{i-1}}. For n not a power of
  two the folded hierarchy adds its fold stage (one tensor, γ^1 = 1) and its unfold stage (the
  aggregate, γ^n): T_hc = 1 + Σ_{i=1}^{log2 p} γ^{2^{i-1}} + γ^n, p the largest power of two <= n.

γ^k from chunks: the mean, over the aligned groups of k consecutive ranks (the groups recursive
doubling forms), of |union| / (numel d); γ^n from all ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from zensim.errors import ConfigError
from zensim.schemes.pieces import popcount
from zensim.sparse.bits import pack_positions
from zensim.sparse.chunk import SparseChunk


@dataclass(frozen=True)
class SparsityProfile:
    """Density d (mean over ranks) and densification ratios γ^k keyed by k."""

    density: float
    gamma: dict[int, float]


def needed_ks(n: int) -> list[int]:
    """The k whose γ^k the two equations use: powers of two below n, and n."""
    ks, k = [], 1
    while k < n:
        ks.append(k)
        k *= 2
    return ks + [n]


def profile_chunks(chunks: Sequence[SparseChunk], numel: int) -> SparsityProfile:
    """Measure d and γ^k (k in needed_ks) exactly on one iteration's chunks (bitset unions)."""
    n = len(chunks)
    if n == 0 or numel < 1:
        raise ConfigError("profile: need at least one chunk and numel >= 1")
    d = float(np.mean([c.nnz for c in chunks])) / numel
    level = [pack_positions(c.indices, numel) for c in chunks]
    gamma, k = {}, 1
    while k < n:
        gamma[k] = _mean_density(level, numel) / d if d else 1.0
        level = [np.bitwise_or(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        k *= 2
    total = np.zeros((numel + 63) // 64, np.uint64)
    for c in chunks:
        np.bitwise_or(total, pack_positions(c.indices, numel), out=total)
    gamma[n] = popcount(total) / numel / d if d else 1.0
    return SparsityProfile(d, gamma)


def _mean_density(bitsets: list[np.ndarray], numel: int) -> float:
    """Mean density of the given bitsets."""
    return float(np.mean([popcount(w) for w in bitsets])) / numel


def zen_costs(n: int, profile: SparsityProfile) -> tuple[float, float]:
    """(T_bp, T_hc) in units of 2 M d / b: eq. (1) and eq. (2) (folded for any n)."""
    missing = [k for k in needed_ks(n) if k not in profile.gamma and k != 1]
    if missing:
        raise ConfigError(f"zen-auto: densification ratios missing for k = {missing}")
    g = dict(profile.gamma)
    g.setdefault(1, 1.0)
    t_bp = (n - 1) / n * (g[n] + 1)
    p = 1 << (n.bit_length() - 1)
    t_hc = sum(g[k] for k in needed_ks(p)[:-1]) if p > 1 else 0.0
    if p != n:
        t_hc += 1 + g[n]
    return t_bp, t_hc


def zen_choice(n: int, profile: SparsityProfile) -> str:
    """'zen' (Balanced Parallelism) when T_bp <= T_hc, else 'hier-central'."""
    t_bp, t_hc = zen_costs(n, profile)
    return "zen" if t_bp <= t_hc else "hier-central"
