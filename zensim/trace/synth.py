"""Synthetic traces with a requested density, pairwise overlap and skewness (model in docs/trace-stats.md).

Per tensor of M elements and per iteration: every worker has exactly nnz = round(d M) indices. The
range is split into the 8 contiguous parts that s^8 measures. Each worker puts
n_0 = round(s nnz |part 0| / M) indices in part 0 and spreads the rest over parts 1..7 in proportion
to their sizes, so its s^8 is s. In each part a shared set (a fraction f of the worker's indices
there, the same for all workers) is drawn uniformly, and each worker adds private indices drawn
uniformly from the part minus the shared set. f is solved so
that the expected pairwise overlap, shared part plus chance collisions of private parts, equals o.

With inner skews s_2, s_3, ..., part 0 is itself split into 8 parts the same way (s_2 times its
density in its part 0, the rest spread by size), and so on: s^8 = s still, s^64 = s s_2, s^512 =
s s_2 s_3 (a vocabulary sorted by frequency is skewed at every scale: ZEN's LSTM has s^8 > 4.8 and
s^128 > 70).

With rows of r elements (an embedding table's gradient: a looked-up row is non-zero whole), the
above is drawn over the M / r rows and every chosen row contributes its r consecutive elements, so
the density, overlap and skewness are the same at row and at element level.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy.optimize import brentq
from tqdm import tqdm

from zensim.errors import ConfigError
from zensim.request import at_least
from zensim.trace.format import TensorSpec, TraceWriter
from zensim.sparse.chunk import unique_sorted
from zensim.sparse.partition import even_boundaries

GENERATOR = "zensim.trace.synth/1"


@dataclass(frozen=True)
class SynthParams:
    """What is asked of a synthetic tensor: density d, overlap o (None: independent sets), skewness s^8,
    drawn as whole rows of `row` elements (1: single elements), with skews `inner` of the nested levels
    inside part 0 (none: part 0 uniform)."""

    density: float
    overlap: float | None = None
    skew: float = 1.0
    row: int = 1
    inner: tuple[float, ...] = ()


@dataclass(frozen=True)
class Layout:
    """Resolved counts of one tensor per iteration: for each region (the 8 parts, part 0 split again at
    each further skew level), its start, size, shared and per-worker count."""

    numel: int
    starts: tuple[int, ...]
    sizes: tuple[int, ...]
    counts: tuple[int, ...]
    shared: tuple[int, ...]

    @property
    def nnz(self) -> int:
        """Indices per worker."""
        return sum(self.counts)

    def regions(self) -> list[tuple[int, int, int, int]]:
        """(start, size, shared count, count per worker) of each part."""
        return list(zip(self.starts, self.sizes, self.shared, self.counts))

    def expected_overlap(self) -> float:
        """Expected |I_1 ∩ I_2| / nnz: the shared set plus chance collisions of two private sets."""
        hits = sum(s + _ratio((c - s) ** 2, size - s) for _, size, s, c in self.regions())
        return _ratio(hits, self.nnz)

    def expected_union(self, k: int) -> float:
        """Expected size of the union of k workers' index sets."""
        return sum(s + (size - s) * (1 - (1 - _ratio(c - s, size - s)) ** k) for _, size, s, c in self.regions())


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def _apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """Split `total` into integers proportional to `weights` (largest remainders)."""
    exact = total * weights / weights.sum()
    out = np.floor(exact).astype(np.int64)
    out[np.argsort(out - exact, kind="stable")[: total - int(out.sum())]] += 1
    return out


def _skewed(start: int, size: int, nnz: int, skews: tuple[float, ...], d: float,
            outer: bool = True) -> list[tuple[int, int, int]]:
    """(start, size, count) of the regions of [start, start + size) holding `nnz` indices: 8 contiguous
    parts, part 0 with skews[0] times the mean density and the rest spread by size; part 0 split the
    same way by the next skews (`outer`: the whole tensor, d its density)."""
    s = skews[0]
    bounds = start + even_boundaries(size, 8)
    sizes = np.diff(bounds)
    top = min(size / sizes[0], size / nnz)  # part 0 can neither take more than nnz nor overflow
    if not 1 <= s < float("inf") or (n_a := round(s * nnz * sizes[0] / size)) > min(nnz, sizes[0]):
        if outer:
            raise ConfigError(f"--skew {s}: must be in [1, {top:.4g}] at density {d} ({size} elements)")
        raise ConfigError(f"--skew-inner {s}: must be in [1, {top:.4g}] for the {nnz} indices of a part of "
                          f"{size} elements")
    rest = _apportion(nnz - n_a, sizes[1:].astype(np.float64))
    first = (_skewed(int(bounds[0]), int(sizes[0]), n_a, skews[1:], d, False) if len(skews) > 1
             else [(int(bounds[0]), int(sizes[0]), n_a)])
    return first + [(int(b), int(z), int(c)) for b, z, c in zip(bounds[1:-1], sizes[1:], rest)]


def layout(numel: int, params: SynthParams) -> Layout:
    """Resolve the counts for one tensor (of rows, when `params.row` > 1), raising ConfigError when the
    request cannot be met."""
    d, o, s = params.density, params.overlap, params.skew
    if params.row < 1 or numel % params.row:
        raise ConfigError(f"--row {params.row}: must be a positive divisor of the tensor's {numel} elements")
    numel //= params.row
    if not 0 < d <= 1:
        raise ConfigError(f"--density {d}: must be in (0, 1]")
    nnz = round(d * numel)
    if nnz == 0:
        raise ConfigError(f"--density {d}: no index at all in a tensor of {numel} elements")
    regions = _skewed(0, numel, nnz, (s, *params.inner), d)
    starts, sizes, counts = (np.array(x, np.int64) for x in zip(*regions))

    def at(f: float) -> Layout:
        shared = tuple(int(x) for x in np.round(f * counts))
        return Layout(numel, tuple(int(x) for x in starts), tuple(int(x) for x in sizes),
                      tuple(int(x) for x in counts), shared)

    if o is None:
        return at(0.0)
    chance = at(0.0).expected_overlap()
    if not chance - 1e-9 <= o <= 1:
        raise ConfigError(f"--overlap {o}: must be in [{chance:.4g}, 1] (independent sets already overlap {chance:.4g})")
    lo, hi = 0.0, 1.0
    for _ in range(60):  # expected overlap grows with the shared fraction f
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if at(mid).expected_overlap() < o else (lo, mid)
    return at(hi)


def overlap_for_densification(numel: int, params: SynthParams, k: int, gamma: float) -> float:
    """The overlap at which `params` (its own overlap ignored) give an expected densification ratio
    gamma^k = |union of k workers| / nnz equal to `gamma` (e.g. a paper's density after aggregating a
    machine's k GPUs over the density of one); ConfigError if no overlap reaches it."""
    if k < 2:
        raise ConfigError(f"--densification {k}:{gamma}: needs at least 2 workers")

    def gamma_at(o: float | None) -> float:
        lay = layout(numel, replace(params, overlap=o))
        return lay.expected_union(k) / lay.nnz

    lo = layout(numel, replace(params, overlap=None)).expected_overlap()  # independent sets: the largest gamma
    top, bottom = gamma_at(None), gamma_at(1.0)
    if not bottom - 1e-9 <= gamma <= top + 1e-9:
        raise ConfigError(f"--densification {k}:{gamma}: must be in [{bottom:.4g}, {top:.4g}] at density "
                          f"{params.density} and these skews")
    if gamma_at(lo) <= gamma:  # at an end of the range (within the slack above)
        return lo
    if gamma_at(1.0) >= gamma:
        return 1.0
    return float(brentq(lambda o: gamma_at(o) - gamma, lo, 1.0, xtol=1e-12))  # gamma^k falls as the overlap rises


def sample_unique(rng: np.random.Generator, size: int, count: int) -> np.ndarray:
    """`count` distinct integers of [0, size), sorted, uniformly among all such sets."""
    if count <= 0:
        return np.empty(0, np.int64)
    if 2 * count > size:
        keep = np.ones(size, np.bool_)
        keep[sample_unique(rng, size, size - count)] = False
        return np.flatnonzero(keep)
    got = np.empty(0, np.int64)
    while len(got) < count:
        got = unique_sorted(np.concatenate([got, rng.integers(0, size, count - len(got) + count // 16 + 16)]))
    # the distinct values of i.i.d. draws are a uniform subset given their number; so is a uniform subset of them
    return got[np.sort(rng.choice(len(got), count, replace=False))] if len(got) > count else got


def sample_outside(rng: np.random.Generator, size: int, count: int, taken: np.ndarray) -> np.ndarray:
    """`count` distinct integers of [0, size) not in the sorted array `taken`, sorted and uniform."""
    ranks = sample_unique(rng, size - len(taken), count)
    return ranks + np.searchsorted(taken - np.arange(len(taken)), ranks, side="right")


def worker_sets(lay: Layout, workers: int, rng_key: Sequence[int], row: int = 1) -> Iterator[np.ndarray]:
    """One iteration of one tensor: each worker's sorted index set, made one at a time (a trace of
    8192 workers x 10M elements at 1% is 6.5 GB of ids: the writer streams them, nothing holds them all).
    With `row` > 1 the layout is of rows and each chosen row yields its `row` element ids."""
    shared_rng = np.random.default_rng([*rng_key, 0])
    shared = [start + sample_unique(shared_rng, size, s) for start, size, s, _ in lay.regions()]
    for w in range(workers):
        rng = np.random.default_rng([*rng_key, w + 1])
        parts = []
        for (start, size, s, c), common in zip(lay.regions(), shared):
            parts += [common, start + sample_outside(rng, size, c - s, common - start)]
        rows = np.sort(np.concatenate(parts), kind="stable")  # sorted runs: timsort merges them
        yield rows if row == 1 else (rows[:, None] * row + np.arange(row)).ravel()


def check_draws(workers: int, iterations: int, seed: int) -> None:
    """One line naming the flag of a trace generator's (synthesize, scale) workers, iterations or seed out
    of range."""
    for flag, value, low in (("--ranks", workers, 1), ("--iterations", iterations, 1), ("--seed", seed, 0)):
        at_least(flag, value, low)


def synthesize(
    path: str | os.PathLike[str],
    workers: int,
    tensors: Sequence[tuple[str, int]],
    params: SynthParams,
    iterations: int = 1,
    seed: int = 0,
    value_dtype: str | None = None,
    batch_size: int | None = None,
    progress: bool = False,
) -> None:
    """Write a synthetic trace: `tensors` are (name, numel) pairs, each generated with `params`."""
    check_draws(workers, iterations, seed)
    layouts = [layout(numel, params) for _, numel in tensors]
    provenance = {"kind": "synthetic", "generator": GENERATOR, "params": asdict(params), "seed": seed}
    workload = (
        f"synthetic: density {params.density}, overlap {params.overlap}, skew {params.skew}, "
        f"{'' if params.row == 1 else f'rows of {params.row}, '}"
        f"{len(tensors)} tensor(s) of {sum(n for _, n in tensors)} elements"
    )
    specs = [TensorSpec(name, numel) for name, numel in tensors]
    # disable=None shows the bar only when stderr is a terminal
    bar = tqdm(total=iterations * len(specs) * workers, desc="trace synth", unit="chunk",
               disable=None if progress else True)
    with bar, TraceWriter(path, specs, workers, iterations, value_dtype, batch_size, workload, provenance) as w:
        for it in range(iterations):
            for t, lay in enumerate(layouts):
                for worker, idx in enumerate(worker_sets(lay, workers, (seed, it, t), params.row)):
                    values = None
                    if value_dtype is not None:
                        values = np.random.default_rng([seed, it, t, worker, 1]).standard_normal(len(idx))
                    w.write(it, worker, t, idx, values)
                    bar.update()
