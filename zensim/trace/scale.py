"""`zensim trace scale`: a trace of N workers drawn from the model fitted on a trace of n (docs/trace-scale.md).

Every row of a tensor gets a touch probability q drawn once from its posterior given how many of the
fitted chunks touched it (zensim.trace.popularity). Worker w's rows at its first iteration are
independent Bernoulli(q) draws; at each later iteration a row it touched stays with probability
q + rho (1 - q) and an untouched row joins with probability q (1 - rho), so every (iteration, worker)
has the marginal q and consecutive iterations of one worker share rho more than two workers do.
Rows with equal q are drawn together (a binomial count, then a uniform subset), so the work is
proportional to the non-zeros, and one worker's previous rows are all that is held.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from zensim.atomic import check_output
from zensim.errors import ConfigError
from zensim.report.provenance import file_sha256
from zensim.trace.format import TensorSpec, Trace, TraceWriter, opened
from zensim.trace.popularity import TensorModel, check_fittable, fit, value_class
from zensim.trace.synth import check_draws, sample_outside, sample_unique

GENERATOR = "zensim.trace.scale/1"


@dataclass(frozen=True)
class Groups:
    """The rows of one tensor grouped by their drawn touch probability: `q[g]` and the sorted row ids
    `rows[g]` (groups with q = 0 left out)."""

    q: np.ndarray
    rows: tuple[np.ndarray, ...]


def draw_groups(model: TensorModel, rng: np.random.Generator) -> Groups:
    """Draw each row's q from its segment's posterior given its count and group the rows by it."""
    pick = np.empty(len(model.counts), np.int64)
    for seg, (a, b) in enumerate(zip(model.bounds[:-1], model.bounds[1:])):
        post, counts = model.posterior(seg), model.counts[a:b]
        for c in np.unique(counts):
            at = a + np.flatnonzero(counts == c)
            pick[at] = rng.choice(len(model.grid), size=len(at), p=post[c])
    order = np.argsort(pick, kind="stable")
    used, starts = np.unique(pick[order], return_index=True)
    parts = np.split(order, starts[1:])
    keep = [i for i, g in enumerate(used) if model.grid[g] > 0]
    return Groups(model.grid[used[keep]], tuple(parts[i] for i in keep))


def worker_rows(groups: Groups, rho: float, iterations: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """One worker's sorted row ids at each iteration (the Markov chain of the module docstring)."""
    prev: list[np.ndarray] = [np.empty(0, np.int64)] * len(groups.q)
    for it in range(iterations):
        cur = []
        for g, (q, rows) in enumerate(zip(groups.q, groups.rows)):
            held = prev[g]
            if it == 0 or rho == 0.0:
                pos = sample_unique(rng, len(rows), int(rng.binomial(len(rows), q)))
            else:
                stay = held[rng.random(len(held)) < q + rho * (1.0 - q)]
                join = sample_outside(rng, len(rows), int(rng.binomial(len(rows) - len(held), q * (1.0 - rho))), held)
                pos = np.union1d(stay, join)
            cur.append(pos)
        prev = cur
        yield np.sort(np.concatenate([np.empty(0, np.int64)] + [rows[pos] for rows, pos in zip(groups.rows, cur)]))


def _value_pool(model: TensorModel) -> tuple[np.ndarray, ...]:
    """Per popularity class, the values to draw from: its own sample, or (empty) the nearest
    class above with values, else the nearest below."""
    filled = [c for c, v in enumerate(model.values) if len(v)]
    if not filled:
        return tuple(np.zeros(1, np.float32) for _ in model.values)
    out = []
    for c in range(len(model.values)):
        above = [f for f in filled if f >= c]
        out.append(model.values[above[0] if above else filled[-1]])
    return tuple(out)


def scale(source: str | os.PathLike[str] | Trace, path: str | os.PathLike[str], workers: int,
          fit_workers: int | None = None, iterations: int | None = None, seed: int = 0,
          progress: bool = False) -> dict:
    """Write a trace of `workers` workers drawn from the model fitted on the first `fit_workers` (default
    all) workers of `source`; `iterations` default the source's. Returns the header's provenance."""
    with opened(source) as trace:
        fit_workers = trace.workers if fit_workers is None else fit_workers
        iterations = trace.iterations if iterations is None else iterations
        _check_args(trace, path, workers, iterations, seed)
        check_fittable(trace, fit_workers)
        models = fit(trace, fit_workers, seed)
        provenance = {
            "kind": "scaled", "generator": GENERATOR, "seed": seed,
            "source": {"path": str(trace.path), "sha256": file_sha256(trace.path), "workers": trace.workers,
                       "iterations": trace.iterations, "fit_workers": fit_workers,
                       "provenance": trace.meta.get("provenance")},
            "model": {m.name: m.params() for m in models},
        }
        workload = f"{trace.meta.get('workload') or 'trace'} (scaled: fitted on {fit_workers} workers, drawn for {workers})"
        specs, dtype, batch = list(trace.tensors), trace.value_dtype, trace.meta.get("batch_size")
    _write(path, specs, models, workers, iterations, seed, dtype, batch, workload, provenance, progress)
    return provenance


def _check_args(trace: Trace, path: str | os.PathLike[str], workers: int, iterations: int, seed: int) -> None:
    """One line naming the argument before any work."""
    check_draws(workers, iterations, seed)
    if os.path.realpath(path) == os.path.realpath(trace.path):
        raise ConfigError(f"-o {path}: is the source trace; write the scaled trace elsewhere")
    check_output(path, "-o")


def _write(path: str | os.PathLike[str], specs: list[TensorSpec], models: list[TensorModel], workers: int,
           iterations: int, seed: int, dtype: str | None, batch: int | None, workload: str, provenance: dict,
           progress: bool) -> None:
    """Stream the chunks worker by worker, each worker's iterations in order (its chain)."""
    groups = [draw_groups(m, np.random.default_rng([seed, t, 0])) for t, m in enumerate(models)]
    pools = [_value_pool(m) if dtype else None for m in models]
    bar = tqdm(total=workers * len(models) * iterations, desc="trace scale", unit="chunk",
               disable=None if progress else True)
    with bar, TraceWriter(path, specs, workers, iterations, dtype, batch, workload, provenance) as out:
        for w in range(workers):
            for t, (m, grp, pool) in enumerate(zip(models, groups, pools)):
                rng = np.random.default_rng([seed, t, 1, w])
                vrng = np.random.default_rng([seed, t, 2, w])
                for it, rows in enumerate(worker_rows(grp, m.rho, iterations, rng)):
                    idx = rows if m.row == 1 else (rows[:, None] * m.row + np.arange(m.row)).ravel()
                    out.write(it, w, t, idx, None if pool is None else _draw_values(pool, m, idx, vrng))
                    bar.update()


def _draw_values(pool: tuple[np.ndarray, ...], model: TensorModel, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each element's value drawn from the sample of its row's popularity class."""
    cls = value_class(model.counts[idx // model.row])
    out = np.empty(len(idx), np.float32)
    for c in np.unique(cls):
        at = cls == c
        out[at] = rng.choice(pool[c], size=int(at.sum()))
    return out
