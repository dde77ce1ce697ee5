"""Imbalance of a partitioner on a set of worker chunks, and ZEN's Theorem 2 bound.

- push imbalance  max_{i,j} n |I_i^j| / |I_i|: the most any worker i sends to one server j,
  relative to an even split of its own non-zeros (workers with no non-zeros are skipped);
- pull imbalance  max_j n |𝕀_j ∩ I| / |I|, I = ∪_i I_i: the most any server holds after
  aggregation, relative to an even share of the union.

Theorem 2 bound, with the Θ made explicit. Model h0 as throwing m balls into n bins uniformly and
independently; a bin's load X ~ Binomial(m, 1/n), mean μ = m/n. The multiplicative Chernoff bound
P[X >= (1+δ)μ] <= exp(-δ²μ / (2+δ)) holds for every δ > 0. Asking the union bound over E bin
events to fail with probability at most 1/n, i.e. E exp(-δ²μ/(2+δ)) = 1/n, gives with
L = ln(E n):  δ = (L + sqrt(L² + 8 L μ)) / (2 μ),  bound = 1 + δ.
Pull: E = n bins, m = |I|, so L = 2 ln n and δ ≈ sqrt(4 n ln n / m) when δ is small.
Push: E = n² (every worker, every server), m = min_i |I_i| (the smallest worker is the worst),
so L = 3 ln n and δ ≈ sqrt(6 n ln n / m). For n = 1 the bound is exactly 1.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from zensim.sparse.chunk import SparseChunk, union_indices
from zensim.sparse.partition import Partitioner


def chernoff_bound(n: int, m: int, events: int) -> float:
    """1 + δ: with probability >= 1 - 1/n no bin of `events` holds more than (1+δ) m / n balls."""
    if n <= 1:
        return 1.0
    if m <= 0:
        return math.inf
    mu, big_l = m / n, math.log(events * n)
    return 1.0 + (big_l + math.sqrt(big_l * big_l + 8.0 * big_l * mu)) / (2.0 * mu)


def theorem2_bounds(n: int, min_worker_nnz: int, union_nnz: int) -> tuple[float, float]:
    """(push bound, pull bound) of Theorem 2 with the constants of the module docstring."""
    return chernoff_bound(n, min_worker_nnz, n * n), chernoff_bound(n, union_nnz, n)


def push_from_counts(counts: np.ndarray) -> float:
    """max over workers i and parts j of n |I_i^j| / |I_i| from counts[i, j] = |I_i^j| (workers
    with no non-zeros skipped; 1.0 when every worker is empty)."""
    counts = np.asarray(counts, np.float64)
    sizes = counts.sum(axis=1)
    busy = sizes > 0
    return float((counts.shape[1] * counts[busy].max(axis=1) / sizes[busy]).max()) if busy.any() else 1.0


def pull_from_counts(held: np.ndarray) -> float:
    """max over parts j of n |𝕀_j| / |I| from held[j] = |𝕀_j|, the elements part j holds after
    aggregation (1.0 when nothing is held)."""
    held = np.asarray(held, np.float64)
    total = held.sum()
    return float(len(held) * held.max() / total) if total else 1.0


def push_imbalance(partitioner: Partitioner, chunks: list[SparseChunk]) -> float:
    """max over workers i and parts j of n |I_i^j| / |I_i| (1.0 when every worker is empty)."""
    return push_from_counts(np.array([np.bincount(partitioner.owner(c.indices), minlength=partitioner.n)
                                      for c in chunks]).reshape(len(chunks), partitioner.n))


def pull_imbalance(partitioner: Partitioner, chunks: list[SparseChunk], union: np.ndarray | None = None) -> float:
    """max over parts j of n |𝕀_j ∩ I| / |I| for the union I of the chunks (1.0 when I is empty);
    pass `union` if already known."""
    union = union_indices(chunks) if union is None else union
    return pull_from_counts(np.bincount(partitioner.owner(union), minlength=partitioner.n))


@dataclass(frozen=True)
class ImbalanceReport:
    """Push and pull imbalance of a partitioner on worker chunks, with Theorem 2's bounds."""

    push: float
    pull: float
    push_bound: float
    pull_bound: float

    def as_dict(self) -> dict[str, float]:
        """The four figures, for tables and JSON."""
        return asdict(self)


def imbalance_report(partitioner: Partitioner, chunks: list[SparseChunk]) -> ImbalanceReport:
    """Push, pull and the Theorem 2 bounds for `partitioner` on the workers' `chunks`."""
    nonempty = [c.nnz for c in chunks if c.nnz]
    union = union_indices(chunks)
    push_b, pull_b = theorem2_bounds(partitioner.n, min(nonempty, default=0), len(union))
    return ImbalanceReport(push_imbalance(partitioner, chunks), pull_imbalance(partitioner, chunks, union), push_b, pull_b)
