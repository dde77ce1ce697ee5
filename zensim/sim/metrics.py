"""Figures of one simulated run: bytes per rank, push/pull imbalance, busiest link, time per stage."""

from __future__ import annotations

import numpy as np

from zensim.net.replay import Timing
from zensim.net.links import Topology
from zensim.sparse.imbalance import pull_from_counts, push_from_counts
from zensim.run.log import MessageLog


def imbalance(values: np.ndarray) -> float | None:
    """max / mean of per-rank volumes (None when nothing moved)."""
    mean = float(values.mean()) if values.size else 0.0
    return float(values.max()) / mean if mean > 0 else None


def recv_imbalance(log: MessageLog, step2_start: int) -> float | None:
    """Bytes each rank receives before step 2 (all of them without a step 2), max/mean."""
    push = log.stage < step2_start
    return imbalance(np.bincount(log.dst[push], weights=log.nbytes[push], minlength=log.n))


def imbalances(placed) -> tuple[float | None, float | None, float | None]:
    """(ZEN's push imbalance, ZEN's pull imbalance, received-bytes imbalance), the worst over the
    layout's scheme instances; ZEN's two are None for Centralization (nothing is partitioned)."""
    push, pull, recv = [], [], []
    for run, program in zip(placed.runs, placed.programs):
        stats = run.context.stats
        if "split" in stats:
            push.append(push_from_counts(stats["split"]))
            pull.append(pull_from_counts(stats["held"]))
        recv.append(recv_imbalance(run.log, program.step2_start))
    return _worst(push), _worst(pull), _worst(recv)


def _worst(values) -> float | None:
    """The largest of the defined values (None if none is)."""
    known = [v for v in values if v is not None]
    return max(known) if known else None


def busiest_link(timing: Timing, topology: Topology) -> tuple[str, float]:
    """Name and utilization (bytes / (capacity x makespan)) of the link that carried most time of work."""
    if not timing.link_bytes.size or timing.makespan <= 0:
        return "-", 0.0
    busy = timing.link_bytes / topology.capacity
    k = int(busy.argmax())
    return topology.names[k], float(busy[k] / timing.makespan)


def stage_times(timing: Timing) -> list[float]:
    """Per stage, the longest any rank spent in it (seconds)."""
    return (timing.stage_end - timing.stage_start).max(axis=0).tolist() if timing.stage_end.size else []


def traffic_entries(machine_bytes: np.ndarray) -> list[list[int]]:
    """The non-zero entries of a machines x machines byte matrix as [src, dst, bytes], row-major."""
    src, dst = np.nonzero(machine_bytes)
    return np.stack([src, dst, machine_bytes[src, dst].round().astype(np.int64)], axis=1).tolist()
