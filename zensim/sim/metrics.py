"""Figures of one simulated run: bytes per rank, push/pull imbalance, busiest link, time per stage."""

from __future__ import annotations

import numpy as np

from zensim.net.replay import Timing
from zensim.net.topology import Topology
from zensim.schemes.log import MessageLog


def imbalance(values: np.ndarray) -> float | None:
    """max / mean of per-rank volumes (None when nothing moved)."""
    mean = float(values.mean()) if values.size else 0.0
    return float(values.max()) / mean if mean > 0 else None


def push_pull_imbalance(log: MessageLog, step2_start: int) -> tuple[float | None, float | None]:
    """Push: bytes each rank receives before step 2 (what its partition aggregates), max/mean.
    Pull: bytes each rank sends from step 2 on (what its partition serves), max/mean; None if no step 2."""
    cols = log.arrays()
    push = cols["stage"] < step2_start
    received = np.bincount(cols["dst"][push], weights=cols["nbytes"][push], minlength=log.n)
    if step2_start >= log.num_stages:
        return imbalance(received), None
    sent = np.bincount(cols["src"][~push], weights=cols["nbytes"][~push], minlength=log.n)
    return imbalance(received), imbalance(sent)


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
