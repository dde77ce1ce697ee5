"""The held-out check of `zensim trace scale` (docs/trace-scale.md): the statistics and simulated runs of
a real trace of N workers against traces of N drawn from the model fitted on its first n workers.

A measurement is a list of (metric, value) in a fixed order: density, overlap, gamma^k, s^k (means
over the trace's iterations, `zensim.trace.stats`), then per cluster shape ZEN's push and pull
imbalance and every scheme's bytes (sum over ranks of the payload bytes sent) and simulated time,
each the mean over the simulated iterations.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from zensim.memo import Memo
from zensim.sim.cluster import build_cluster
from zensim.sim.run import resolve_schemes, simulate
from zensim.trace.format import opened
from zensim.trace.stats import trace_stats

GAMMA_K = (16, 32, 64, 128)
SKEW_K = (8, 32, 128)
TOLERANCE = 0.05  # the must-show target: gamma^N, bytes and time within 5%


def measure(path: str | os.PathLike[str], schemes: str | Sequence[str], shapes: Sequence[tuple[int, int]],
            model: str = "fifo", iterations: Sequence[int] | None = None) -> list[tuple[str, float | None]]:
    """The metrics of one trace: statistics, then per shape (machines, GPUs per machine) ZEN's imbalances
    and each scheme's bytes and time over `iterations` (default all of the trace's)."""
    names = resolve_schemes(schemes)
    stats = trace_stats(path)
    gamma = {r["k"]: r["mean"] for r in stats["densification"]}
    skew = {r["k"]: r["mean"] for r in stats["skewness"]}
    out: list[tuple[str, float | None]] = [("density", stats["density"]["mean"]), ("overlap", stats["overlap"]["mean"])]
    out += [(f"gamma^{k}", gamma.get(k)) for k in GAMMA_K]
    out += [(f"s^{k}", skew.get(k)) for k in SKEW_K]
    with opened(path) as trace:
        its = list(range(trace.iterations)) if iterations is None else list(iterations)
    for machines, gpus in shapes:
        cluster, _ = build_cluster(machines, gpus)
        baselines: Memo[float] = Memo()  # the dense reference, replayed once for every iteration of the shape
        runs = [simulate(path, names, cluster, model, iteration=it, baselines=baselines) for it in its]
        shape = f"{machines}x{gpus}"
        zen = [rec for recs in runs for rec in recs if rec.scheme == "zen"]
        if zen:
            out.append((f"{shape} zen push imbalance", _mean([r.push_imbalance for r in zen])))
            out.append((f"{shape} zen pull imbalance", _mean([r.pull_imbalance for r in zen])))
        for i, name in enumerate(names):
            out.append((f"{shape} bytes {name}", _mean([float(sum(recs[i].bytes_sent)) for recs in runs])))
            out.append((f"{shape} time {name}", _mean([recs[i].time_s for recs in runs])))
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    """Mean of the values, None if any is None."""
    return None if any(v is None for v in values) else sum(values) / len(values)


def is_target(metric: str, workers: int) -> bool:
    """Whether a metric is one the must-show target holds to TOLERANCE: gamma^N, bytes, time."""
    return metric == f"gamma^{workers}" or " bytes " in metric or " time " in metric


def relative_error(value: float | None, real: float | None) -> float | None:
    """(value - real) / real, None when either is missing or real is 0."""
    return None if value is None or not real else (value - real) / real


def compare(real: list[tuple[str, float | None]], scaled: dict[str, list[tuple[str, float | None]]],
            workers: int) -> list[dict]:
    """One row per metric: the real value, and per label of `scaled` its value and relative error, and
    whether the metric is a target and every label is within TOLERANCE of it."""
    rows = []
    for i, (metric, value) in enumerate(real):
        row: dict = {"metric": metric, "real": value, "target": is_target(metric, workers)}
        for label, measured in scaled.items():
            assert measured[i][0] == metric, f"metrics out of order: {measured[i][0]} vs {metric}"
            row[label] = measured[i][1]
            row[f"{label} err"] = relative_error(measured[i][1], value)
        errs = [row[f"{label} err"] for label in scaled]
        row["within"] = all(e is not None and abs(e) <= TOLERANCE for e in errs) if row["target"] else None
        rows.append(row)
    return rows
