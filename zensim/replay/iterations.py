"""Replay over iterations: a method (sparsifier + scheme) on every iteration of a gradient source,
per-rank state carried, each iteration's messages timed on a cluster.

`replay_iterations(source, methods, first, last, cluster, model)` gives one `ReplayIterationRecord` per
(method, iteration) and `summarize(records)` the mean, p50 and p99 of every figure per method:

- `time_s`: the simulated synchronization time of the iteration's message log (zensim.net);
- `bytes`: bytes sent by all ranks;
- `user_density` d and `actual_density` d' = |applied| / numel (build-up when d' > d), and the
  density error |d' - d| (ExDyna's eq. 6); `proposed_density` = sum_i k_i / numel;
- `padding`: f(t) = n max_i k_i / sum_i k_i over the workers' proposals (ExDyna's eq. 5), what an
  all-gather padded to the longest list costs against the ideal;
- `global_error`: mean_i ||e_i|| / mean_i ||g_i|| (ExDyna's global error, eq. 1, relative to the
  gradient's size);
- `conservation`: max |sum_i e_i + applied so far - sum of every gradient so far| (float64 totals),
  which must stay at float rounding: every value was applied or kept in a residual. With `check`
  (default) it is asserted every iteration.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.replay import replay
from zensim.replay.method import Method, WorkerPool


class ConservationError(AssertionError):
    """A value was neither applied nor kept in a residual (a bug in a scheme or sparsifier)."""


@dataclass
class ReplayIterationRecord:
    """One method at one iteration of a replay over iterations (replay_iterations; see the module docstring)."""

    method: str
    iteration: int
    time_s: float
    bytes: int
    user_density: float
    actual_density: float
    density_error: float
    proposed_density: float
    padding: float
    global_error: float
    conservation: float
    discarded: int
    wall_s: float
    lossless: bool | None = None  # the method's scheme's capabilities: it ends with the dense sum (None: not recorded)

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return asdict(self)


FIGURES = ("time_s", "bytes", "actual_density", "density_error", "padding", "global_error", "conservation")


def norm(x: np.ndarray) -> float:
    """The L2 norm (BLAS dot product, no temporary)."""
    return float(np.sqrt(np.dot(x, x)))


def parse_range(text: str, iterations: int) -> tuple[int, int]:
    """'A:B' (B exclusive; either may be left out) -> (A, B) within the source's iterations."""
    try:
        lo, _, hi = text.partition(":")
        first = int(lo) if lo else 0
        last = int(hi) if hi else iterations
    except ValueError:
        raise ConfigError(f"--replay {text}: expected A:B (B exclusive), e.g. 0:50") from None
    if not 0 <= first < last <= iterations:
        raise ConfigError(f"--replay {text}: must satisfy 0 <= A < B <= {iterations} (the source's iterations)")
    return first, last


class Tracker:
    """Running float64 totals for the conservation check of one method."""

    def __init__(self, numel: int, tolerance: float) -> None:
        self.inputs = np.zeros(numel)
        self.applied = np.zeros(numel)
        self.tolerance = tolerance

    def update(self, method: Method, grads: Sequence[np.ndarray], applied) -> float:  # type: ignore[no-untyped-def]
        """Add this iteration; the largest deviation of residuals + applied from the inputs."""
        for g in grads:
            self.inputs += g
        np.add.at(self.applied, applied.indices, applied.values)
        held = np.zeros_like(self.inputs)
        for r in range(method.n):
            held += method.residual(r)
        return float(np.abs(held + self.applied - self.inputs).max())


def replay_iterations(source, methods: Sequence[Method], first: int, last: int, costs: Costs,  # type: ignore[no-untyped-def]
                      model: str = "fifo", check: bool = True, progress: bool = False,
                      model_options: Mapping[str, object] | None = None) -> list[ReplayIterationRecord]:
    """Every method on iterations first..last-1 of `source`, timed on `costs` (the cluster and its
    work costs, zensim.net.costs) with sharing model `model` and its `model_options` (see the module
    docstring). The norms run on the first method's threads (make_methods' methods share theirs); the
    methods' threads stop on return (a method's start again at its next step)."""
    if costs.cluster.gpus != methods[0].n:
        raise ConfigError(f"cluster of {costs.cluster.gpus} GPUs for {methods[0].n} workers")
    try:
        return _replay(source, methods, first, last, costs, model, model_options or {}, check, progress,
                       methods[0].pool)
    finally:
        for method in methods:
            method.close()


def _replay(source, methods: Sequence[Method], first: int, last: int, costs: Costs,  # type: ignore[no-untyped-def]
            model: str, model_options: Mapping[str, object], check: bool, progress: bool,
            pool: WorkerPool) -> list[ReplayIterationRecord]:
    """replay_iterations' body, its norms on `pool`."""
    trackers = [Tracker(source.numel, 0.0) if check else None for _ in methods]
    records: list[ReplayIterationRecord] = []
    from tqdm import tqdm  # here, not at the top: the GPU machines have no tqdm and need not

    bar = tqdm(range(first, last), desc="replay", unit="it", disable=None if progress else True, leave=False)
    for it in bar:
        grads = [source.gradient(it, w) for w in range(methods[0].n)]
        grad_norm = float(np.mean(pool.map(norm, grads)))
        scale = max(float(np.abs(g).max()) for g in grads) if check else 0.0
        for method, tracker in zip(methods, trackers):
            start = time.perf_counter()
            step = method.step(grads)
            seconds = replay(step.run.log, costs, model, options=model_options).makespan
            conservation = 0.0
            if tracker is not None:
                conservation = tracker.update(method, grads, step.applied)
                tolerance = 1e-5 * max(scale, 1e-30) * (it - first + 1) * method.n
                if not conservation <= tolerance:
                    raise ConservationError(f"{method.label}: iteration {it}: residuals + applied differ from the "
                                            f"inputs by {conservation:.3g} (tolerance {tolerance:.3g})")
            errors = pool.map(norm, [method.residual(r) for r in range(method.n)])
            d, numel = method.density, method.numel
            actual = step.applied.nnz / numel
            ks = np.array(step.proposed)
            records.append(ReplayIterationRecord(
                method.label, it, seconds, int(step.run.log.bytes_sent().sum()), d, actual, abs(actual - d),
                float(ks.sum() / numel), float(method.n * ks.max() / ks.sum()) if ks.sum() else 1.0,
                float(np.mean(errors) / grad_norm) if grad_norm else 0.0, conservation, step.discarded,
                time.perf_counter() - start, method.program.caps.lossless))
    return records


def summarize(records: Sequence[ReplayIterationRecord]) -> list[dict]:
    """Per method: iterations, user density, lossless, then mean, p50 and p99 of every figure."""
    out = []
    for label in dict.fromkeys(r.method for r in records):
        mine = [r for r in records if r.method == label]
        row: dict = {"method": label, "iterations": len(mine), "user_density": mine[0].user_density,
                     "lossless": mine[0].lossless}
        for name in FIGURES:
            values = np.array([getattr(r, name) for r in mine], float)
            row[f"{name}_mean"] = float(values.mean())
            row[f"{name}_p50"] = float(np.percentile(values, 50))
            row[f"{name}_p99"] = float(np.percentile(values, 99))
        out.append(row)
    return out
