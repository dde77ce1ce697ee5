"""Fit the generative model of `zensim trace scale` on the first workers of a trace (docs/trace-scale.md).

Per tensor: the row size (the largest r such that every chunk is a union of aligned rows of r
elements), how many of the fitted (iteration, worker) chunks touched each row, per contiguous segment
of rows a prior on a row's touch probability q (the non-parametric maximum-likelihood mixing
distribution of the segment's counts on a grid of q: Kiefer-Wolfowitz, by EM), the persistence rho of
a worker's rows from one iteration to the next, the cohesion of workers within one iteration (measured
only), and a sample of the values per popularity class. One (iteration, tensor) of the fitted workers
is in memory at a time.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from zensim.errors import ConfigError, TraceError
from zensim.trace.format import Trace

SEGMENTS = 64  # at most this many contiguous segments of rows, each with its own prior and an equal share of counts
SEGMENT_ROWS = 64  # and at least this many rows in each
GRID_POINTS = 120  # q grid: 0 and GRID_POINTS geometric points from 1e-3 / samples to 1
VALUE_SAMPLE = 4096  # values kept per popularity class (a uniform sample without replacement)
EM_STEPS = 5000
EM_TOL = 1e-11


@dataclass(frozen=True)
class TensorModel:
    """The fitted model of one tensor: rows of `row` elements, per row the number of the `samples` fitted
    chunks that touched it, per segment of rows (row boundaries `bounds`) the prior (`grid`, a row of
    `weights`) on a row's touch probability, the persistence `rho` (0 when the trace has one iteration),
    the cohesion of workers within an iteration and its standard error (measured, not drawn: the model
    assumes 0; None with one iteration), and per popularity class (`value_class`) a sample of the values (None: no values)."""

    name: str
    numel: int
    row: int
    samples: int
    counts: np.ndarray
    bounds: np.ndarray
    grid: np.ndarray
    weights: np.ndarray
    rho: float
    cohesion: float | None
    cohesion_se: float | None
    values: tuple[np.ndarray, ...] | None

    def posterior(self, segment: int) -> np.ndarray:
        """P(q = grid[g] | count c) in one segment, for c = 0..samples: rows x grid."""
        like = _likelihood(self.samples, self.grid) * self.weights[segment]
        return like / np.maximum(like.sum(axis=1, keepdims=True), 1e-300)

    def params(self) -> dict:
        """The parameters for a trace header: row size, samples, persistence, cohesion (and its standard
        error), the density, the
        segments' row boundaries, each segment's prior as [q, weight] pairs (weight above 1e-4, 4 digits), and the
        sha256 of the per-row counts (int32 little-endian: the data the draws condition on)."""
        return {"row": self.row, "samples": self.samples, "persistence": round(self.rho, 6),
                "cohesion": None if self.cohesion is None else round(self.cohesion, 6),
                "cohesion_se": None if self.cohesion_se is None else round(self.cohesion_se, 6),
                "density": float(self.counts.sum()) / (self.samples * len(self.counts)),
                "segments": self.bounds.tolist(),
                "prior": [[[float(f"{q:.4g}"), float(f"{w:.4g}")] for q, w in zip(self.grid, ws) if w > 1e-4]
                          for ws in self.weights],
                "counts_sha256": hashlib.sha256(self.counts.astype("<i4").tobytes()).hexdigest()}


def value_class(counts: np.ndarray) -> np.ndarray:
    """Popularity class of rows by their count: 0 for 0, then floor(log2(c)) + 1."""
    return np.where(counts > 0, np.floor(np.log2(np.maximum(counts, 1))).astype(np.int64) + 1, 0)


def fit(trace: Trace, fit_workers: int, seed: int = 0) -> list[TensorModel]:
    """The model of every tensor of `trace`, fitted on its workers 0 .. fit_workers - 1, all iterations."""
    check_fittable(trace, fit_workers)
    return [_fit_tensor(trace, t, fit_workers, seed) for t in range(len(trace.tensors))]


def check_fittable(trace: Trace, fit_workers: int) -> None:
    """One line naming the trace or the argument when the model cannot be fitted (before any work)."""
    if not 1 <= fit_workers <= trace.workers:
        raise ConfigError(f"--fit-ranks {fit_workers}: must be in 1..{trace.workers} (the workers of {trace.path})")
    if fit_workers * trace.iterations < 2:
        raise ConfigError(f"--fit-ranks {fit_workers}: {trace.path} has {trace.iterations} iteration(s); "
                          "the fit needs at least 2 (iteration, worker) chunks")
    for it in range(trace.iterations):
        for w in range(fit_workers):
            for t in range(len(trace.tensors)):
                if trace.chunk_is_dense(it, w, t):
                    raise TraceError(f"{trace.path}: chunk (iteration {it}, worker {w}, tensor "
                                     f"{trace.tensors[t].name}) is dense: scaling needs index sets "
                                     "(sparsify the dense gradients first)")


def _fit_tensor(trace: Trace, t: int, fit_workers: int, seed: int) -> TensorModel:
    """Counts, row size, persistence and values of tensor t; then the prior."""
    numel = trace.tensors[t].numel
    counts = np.zeros(numel, np.int32)
    gcd = 0  # of every run's start and length; 0 while no chunk had an index
    meet = np.zeros(3)  # summed intersections: same worker next iteration, next worker next iteration, next worker
    pairs = np.zeros(3)
    prev: list[np.ndarray] = []
    for it in range(trace.iterations):
        cur: list[np.ndarray] = []
        for w in range(fit_workers):
            idx = trace.indices(it, w, t)
            counts[idx] += 1
            gcd = math.gcd(gcd, _run_gcd(idx))
            others = [prev[w], prev[(w + 1) % fit_workers]] if prev else [None, None]
            for i, other in enumerate([*others, cur[-1] if cur else None]):
                if other is not None:
                    meet[i] += len(np.intersect1d(other, idx, assume_unique=True))
                    pairs[i] += 1
            cur.append(idx)
        prev = cur
    row = math.gcd(gcd, numel) if gcd else 1  # rows must tile the tensor; a tensor never touched: 1
    samples = fit_workers * trace.iterations
    rows = counts[::row].copy()
    rho = cohesion = cohesion_se = None
    if pairs[1] and fit_workers > 1:  # against two workers of different iterations (in elements)
        mean_nnz, chance = counts.sum() / samples, meet[1] / pairs[1]
        scale = max(mean_nnz - chance, 1e-12)
        rho, cohesion = (float(np.clip((meet[i] / pairs[i] - chance) / scale, 0.0, 1.0)) for i in (0, 2))
        # an intersection count varies about as a Poisson count of mean `chance` (pairs taken as independent)
        cohesion_se = float(np.sqrt(chance / pairs[2] + chance / pairs[1]) / scale)
    grid = np.concatenate([[0.0], np.geomspace(1e-3 / samples, 1.0, GRID_POINTS)])
    bounds = segment_bounds(rows)
    weights = _npmle(np.stack([np.bincount(rows[a:b], minlength=samples + 1) for a, b in zip(bounds[:-1], bounds[1:])]),
                     samples, grid)
    values = _value_sample(trace, t, fit_workers, rows, row, seed) if trace.value_dtype else None
    return TensorModel(trace.tensors[t].name, numel, row, samples, rows, bounds, grid, weights, rho or 0.0,
                       cohesion, cohesion_se, values)


def segment_bounds(counts: np.ndarray) -> np.ndarray:
    """Row boundaries of the segments: a cut where the cumulative count passes each 1/SEGMENTS of the
    total, skipped when it would leave fewer than SEGMENT_ROWS rows on either side (no count: one segment)."""
    cum = np.cumsum(counts, dtype=np.int64)
    bounds = [0]
    if len(cum) and cum[-1] > 0:
        for cut in np.searchsorted(cum, cum[-1] * np.arange(1, SEGMENTS) / SEGMENTS).tolist():
            if cut - bounds[-1] >= SEGMENT_ROWS and len(counts) - cut >= SEGMENT_ROWS:
                bounds.append(cut)
    return np.array(bounds + [len(counts)], np.int64)


def _run_gcd(idx: np.ndarray) -> int:
    """gcd of the starts and lengths of the runs of consecutive indices (0 for an empty set)."""
    if len(idx) == 0:
        return 0
    brk = np.flatnonzero(np.diff(idx) != 1)
    starts = np.concatenate([idx[:1], idx[brk + 1]])
    ends = np.concatenate([idx[brk], idx[-1:]]) + 1
    return math.gcd(int(np.gcd.reduce(starts)), int(np.gcd.reduce(ends - starts)))


def _likelihood(samples: int, grid: np.ndarray) -> np.ndarray:
    """P(count = c | q) for c = 0..samples and q on the grid."""
    return binom.pmf(np.arange(samples + 1)[:, None], samples, grid[None, :])


def _npmle(hist: np.ndarray, samples: int, grid: np.ndarray) -> np.ndarray:
    """Per row of `hist` (segments x count histogram), the weights on the grid maximizing the likelihood
    of that histogram: EM, all segments at once, until no segment's log-likelihood per row gains
    EM_TOL (or EM_STEPS steps); a segment no fitted chunk touched gets all its mass at q = 0 (grid[0])."""
    like = _likelihood(samples, grid)
    rows = hist.sum(axis=1, keepdims=True)
    weights = np.full((len(hist), len(grid)), 1.0 / len(grid))
    last = np.full(len(hist), -np.inf)
    for _ in range(EM_STEPS):
        mix = np.maximum(weights @ like.T, 1e-300)
        loglik = (hist * np.log(mix)).sum(axis=1) / rows[:, 0]
        if (loglik - last < EM_TOL).all():
            break
        last = loglik
        weights = weights * ((hist / mix) @ like) / rows
    weights[hist[:, 1:].sum(axis=1) == 0] = grid == 0  # no row touched: the maximum is all mass at q = 0 exactly
    return weights / weights.sum(axis=1, keepdims=True)


def _value_sample(trace: Trace, t: int, fit_workers: int, rows: np.ndarray, row: int, seed: int) -> tuple[np.ndarray, ...]:
    """Per popularity class of the rows, a uniform sample (without replacement) of VALUE_SAMPLE values:
    the values with the smallest random keys, kept as the chunks stream by."""
    classes = int(value_class(rows).max()) + 1
    kept = [np.empty(0, np.float32) for _ in range(classes)]
    keys = [np.empty(0) for _ in range(classes)]
    rng = np.random.default_rng([seed, t, 3])
    for it in range(trace.iterations):
        for w in range(fit_workers):
            chunk = trace.read(it, w, t)
            cls = value_class(rows[chunk.indices // row])
            for c in np.unique(cls):
                vals = np.concatenate([kept[c], chunk.values[cls == c]])
                key = np.concatenate([keys[c], rng.random(int((cls == c).sum()))])
                top = np.argsort(key)[:VALUE_SAMPLE]
                kept[c], keys[c] = vals[top], key[top]
    return tuple(kept)
