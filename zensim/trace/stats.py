"""Trace statistics of ZEN §2.1: density, pairwise overlap, densification γ^k and skewness s^k.

Definitions (n workers, one iteration, index sets I_w of a tensor with numel elements):
- density d_w = |I_w| / numel; d = mean over workers.
- overlap of a pair = |I_a ∩ I_b| / min(|I_a|, |I_b|), over all pairs or a uniform sample of them.
- densification γ^k = (|I_{g1} ∪ ... ∪ I_{gk}| / numel) / d, for every group of k consecutive workers
  (floor(n/k) groups), k = 1, 2, 4, ... <= n and k = n.
- skewness s^k = max_i (density of contiguous part i of k) / d_w, per worker, for k = 2, 4, ..., 128.
Each is computed per tensor and for the whole trace (all tensors in one flat index space), per
iteration, and summarized over iterations (and pairs/groups/workers) as mean, min and max.
Set operations use uint64 bitsets built from the sorted indices in O(nnz), in column blocks so that
memory stays bounded; intersections and unions are popcounts (np.bitwise_count).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zensim.sparse.bits import pack_positions
from zensim.sparse.partition import even_boundaries
from zensim.trace.format import Trace, opened

DEFAULT_PAIRS = 256
DEFAULT_SKEW_PARTS = (2, 4, 8, 16, 32, 64, 128)
BLOCK_BYTES = 64 << 20  # bitset memory per column block (all workers together)


def densification_ks(n: int) -> list[int]:
    """k = 1, 2, 4, ... up to n, and n itself when it is not a power of two."""
    ks = [1 << j for j in range(n.bit_length()) if 1 << j <= n]
    return ks if ks[-1] == n else ks + [n]


def sample_pairs(n: int, pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """All worker pairs (a < b) if there are at most `pairs`, else `pairs` of them uniformly without replacement."""
    a, b = np.triu_indices(n, 1)
    if len(a) > pairs:
        keep = np.sort(np.random.default_rng(seed).choice(len(a), pairs, replace=False))
        a, b = a[keep], b[keep]
    return a.astype(np.int64), b.astype(np.int64)


def _bitsets(indices: Sequence[np.ndarray], lo: int, words: int) -> np.ndarray:
    """uint64 bitsets (one row per worker) of the indices in [lo, lo + 64 * words), built in O(nnz)."""
    bits = np.zeros((len(indices), words), np.uint64)
    for row, idx in zip(bits, indices):
        row[:] = pack_positions(idx[np.searchsorted(idx, lo) : np.searchsorted(idx, lo + 64 * words)] - lo, 64 * words)
    return bits


def set_counts(
    indices: Sequence[np.ndarray], numel: int, pair_a: np.ndarray, pair_b: np.ndarray, ks: Sequence[int]
) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """Intersection sizes of the given pairs and union sizes of consecutive groups of k workers, for each k."""
    n = len(indices)
    inter = np.zeros(len(pair_a), np.int64)
    unions = {k: np.zeros(n // k, np.int64) for k in ks}
    words_total = (numel + 63) // 64
    block_words = max(1, BLOCK_BYTES // 8 // max(n, 1))
    for first in range(0, words_total, block_words):
        bits = _bitsets(indices, 64 * first, min(block_words, words_total - first))
        for s in range(0, len(pair_a), 16):
            both = bits[pair_a[s : s + 16]] & bits[pair_b[s : s + 16]]
            inter[s : s + 16] += np.bitwise_count(both).sum(axis=1, dtype=np.int64)
        groups, size = bits, 1
        for k in ks:
            if k == n and k != size:
                groups, size = np.bitwise_or.reduce(bits, axis=0, keepdims=True), n
            while size < k:
                half = len(groups) // 2
                groups, size = groups[0 : 2 * half : 2] | groups[1 : 2 * half : 2], size * 2
            unions[k] += np.bitwise_count(groups).sum(axis=1, dtype=np.int64)
    return inter, unions


def part_counts(indices: np.ndarray, numel: int, k: int) -> np.ndarray:
    """How many of the sorted `indices` fall in each of the k even contiguous parts of [0, numel)."""
    return np.diff(np.searchsorted(indices, even_boundaries(numel, k)))


def peak_part_density(counts: np.ndarray, numel: int, k: int) -> np.ndarray:
    """The largest density among the k even contiguous parts, from per-part counts on the last axis
    (skewness s^k is this over the worker's density)."""
    return (counts / np.maximum(np.diff(even_boundaries(numel, k)), 1)).max(axis=-1)


@dataclass
class _Scope:
    """Raw per-iteration counts of one tensor, or of the whole trace (counts add up over tensors)."""

    numel: int
    pairs: tuple[np.ndarray, np.ndarray]
    nnz: np.ndarray
    inter: np.ndarray
    unions: dict[int, np.ndarray]
    parts: dict[int, np.ndarray]

    @classmethod
    def empty(
        cls, numel: int, iterations: int, n: int, pairs: tuple[np.ndarray, np.ndarray], ks: Sequence[int],
        skew: Sequence[int],
    ) -> "_Scope":
        """Zero counts for `iterations` x `n` workers."""
        return cls(
            numel,
            pairs,
            np.zeros((iterations, n), np.int64),
            np.zeros((iterations, len(pairs[0])), np.int64),
            {k: np.zeros((iterations, n // k), np.int64) for k in ks},
            {k: np.zeros((iterations, n, k), np.int64) for k in skew if k <= numel},
        )

    def add(self, it: int, indices: Sequence[np.ndarray], offset: int, inter: np.ndarray, unions: dict) -> None:
        """Add one tensor's counts of iteration `it`; `indices` are shifted by `offset` into this scope."""
        self.nnz[it] += [len(idx) for idx in indices]
        self.inter[it] += inter
        for k, u in unions.items():
            self.unions[k][it] += u
        for k, counts in self.parts.items():
            bounds = even_boundaries(self.numel, k) - offset
            for w, idx in enumerate(indices):
                counts[it, w] += np.diff(np.searchsorted(idx, bounds))

    def summary(self) -> dict[str, Any]:
        """Density, overlap, densification and skewness with their spread over iterations."""
        density = self.nnz / self.numel
        d = density.mean(axis=1, keepdims=True)
        n = self.nnz.shape[1]
        smaller = np.minimum(self.nnz[:, self.pairs[0]], self.nnz[:, self.pairs[1]])
        out: dict[str, Any] = {
            "numel": self.numel,
            "density": _spread(density) | {"std": float(density.std()), "per_worker": density.mean(axis=0).tolist()},
            "overlap": {"pairs": len(self.pairs[0]), **_quantiles(_ratios(self.inter, smaller))},
            "densification": [
                {"k": k, "groups": n // k, **_spread(_ratios(u / self.numel, d))} for k, u in self.unions.items()
            ],
            "skewness": [],
        }
        for k, counts in self.parts.items():
            peak = peak_part_density(counts, self.numel, k)
            out["skewness"].append({"k": k, **_spread(_ratios(peak, density))})
        return out


def trace_stats(
    trace: str | os.PathLike[str] | Trace,
    pairs: int = DEFAULT_PAIRS,
    skew_parts: Sequence[int] = DEFAULT_SKEW_PARTS,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, Any]:
    """Statistics of a whole trace (a path or an open Trace) and of each tensor (keys density, overlap,
    densification, skewness, tensors)."""
    with opened(trace) as source:
        return _stats(source, pairs, skew_parts, seed, progress)


def _stats(trace: Trace, pairs: int, skew_parts: Sequence[int], seed: int, progress: bool) -> dict[str, Any]:
    """trace_stats of an open trace."""
    n, iters = trace.workers, trace.iterations
    pair_ab = sample_pairs(n, pairs, seed)
    ks = densification_ks(n)
    whole = _Scope.empty(trace.numel, iters, n, pair_ab, ks, skew_parts)
    scopes = [_Scope.empty(t.numel, iters, n, pair_ab, ks, skew_parts) for t in trace.tensors]
    from tqdm import tqdm  # here, not at the top: the GPU machines have no tqdm and need not

    # disable=None shows the bar only when stderr is a terminal
    bar = tqdm(total=iters * len(scopes) * n, desc="trace stats", unit="chunk", disable=None if progress else True,
               leave=False)
    with bar:
        for it in range(iters):
            for t, scope in enumerate(scopes):
                indices = []
                for w in range(n):
                    indices.append(trace.indices(it, w, t))
                    bar.update()
                inter, unions = set_counts(indices, scope.numel, *pair_ab, ks)
                scope.add(it, indices, 0, inter, unions)
                whole.add(it, indices, int(trace.tensor_offsets[t]), inter, unions)
    return {
        "trace": {
            "path": trace.path,
            "workers": n,
            "iterations": iters,
            "numel": trace.numel,
            "value_dtype": trace.value_dtype,
            "workload": trace.meta.get("workload", ""),
            "batch_size": trace.meta.get("batch_size"),
            "provenance": trace.meta.get("provenance", {}),
        },
        **whole.summary(),
        "tensors": {spec.name: scope.summary() for spec, scope in zip(trace.tensors, scopes)},
    }


def _ratios(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den where den > 0, flattened (undefined ratios dropped)."""
    num, den = np.broadcast_arrays(np.asarray(num, np.float64), np.asarray(den, np.float64))
    ok = den > 0
    return num[ok] / den[ok]


def _spread(samples: np.ndarray) -> dict[str, float | None]:
    """Mean, min and max of the samples (None when there are none)."""
    if samples.size == 0:
        return {"mean": None, "min": None, "max": None}
    return {"mean": float(samples.mean()), "min": float(samples.min()), "max": float(samples.max())}


def _quantiles(samples: np.ndarray) -> dict[str, float | None]:
    """Spread plus the 10th, 50th and 90th percentiles."""
    if samples.size == 0:
        return _spread(samples) | {"p10": None, "median": None, "p90": None}
    p10, median, p90 = (float(q) for q in np.quantile(samples, [0.1, 0.5, 0.9]))
    return _spread(samples) | {"p10": p10, "median": median, "p90": p90}
