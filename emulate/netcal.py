"""Rank-side network calibration: time the stage exchange at several sizes and fit alpha + bytes/beta.

Patterns, all through `zensim.run.torchdist.exchange` (the very code the schemes use):
- `pingpong`: ranks 0 and 1 bounce one message; one-way time = round trip / 2 (idle link);
- `shift-k`: ranks 0..k-1 each send to the next of them at once (k flows, k NICs busy in both
  directions, one flow per NIC direction), for a few k up to n (`patterns`);
- `alltoall`: every rank sends size/(n-1) to every other rank at once (n-1 flows on every NIC).
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.distributed as dist

from zensim.run.torchdist import Channels, exchange, payload_of

DEFAULT_SIZES = (0, 4096, 65536, 524288, 2097152)


def shift_sizes(n: int) -> list[int]:
    """The k of the shift-k patterns at n ranks: n/4, n/2 and n (at least 2, distinct)."""
    return sorted({max(2, n // 4), max(2, n // 2), n})


def patterns(n: int) -> list[str]:
    """Every pattern measured at n ranks, in order."""
    return ["pingpong", *(f"shift-{k}" for k in shift_sizes(n)), "alltoall"]


def _pingpong(rank: int, size: int, stage: int, device: torch.device, channels: Channels) -> float | None:
    """One round trip between ranks 0 and 1; rank 0 returns the one-way time, others None."""
    if rank == 0:
        t0 = time.perf_counter()
        exchange(stage, {1: payload_of(size, stage)}, [], device, channels, receipts=True)
        exchange(stage + 1, {}, [1], device, channels, receipts=True)
        return (time.perf_counter() - t0) / 2
    if rank == 1:
        inbox, _ = exchange(stage, {}, [0], device, channels, receipts=True)
        exchange(stage + 1, {0: inbox[0]}, [], device, channels, receipts=True)
    return None


def _collective(rank: int, n: int, size: int, stage: int, pattern: str, device: torch.device,
                channels: Channels) -> tuple[float, int] | None:
    """One stage of a shift-k or the all-to-all pattern; this rank's stage time and bytes sent (None
    for a rank outside a shift-k)."""
    if pattern.startswith("shift-"):
        k = int(pattern.split("-")[1])
        if rank >= k:
            return None
        outbox = {(rank + 1) % k: payload_of(size, stage)}
        sources = [(rank - 1) % k]
    else:
        part = size // (n - 1)
        outbox = {d: payload_of(part, stage + d) for d in range(n) if d != rank}
        sources = [s for s in range(n) if s != rank]
    t0 = time.perf_counter()
    _, stats = exchange(stage, outbox, sources, device, channels, receipts=True)
    return time.perf_counter() - t0, stats.sent


def measure(rank: int, n: int, device: torch.device, channels: Channels, sizes=DEFAULT_SIZES,
            repeats: int = 5) -> list[dict]:
    """All ranks call this together; returns this rank's samples [{pattern, bytes, seconds, round}] (`round`
    tells which samples of different ranks were taken together)."""
    samples = []
    stage = 0
    for pattern in patterns(n):
        for size in sizes:
            for _ in range(repeats):
                dist.barrier()
                if pattern == "pingpong":
                    t, sent = _pingpong(rank, size, stage, device, channels), size
                else:
                    t, sent = _collective(rank, n, size, stage, pattern, device, channels) or (None, 0)
                stage += 2
                if t is not None:
                    samples.append({"pattern": pattern, "bytes": sent, "seconds": t, "round": stage})
    return samples


def fit_alpha_beta(samples: list[dict]) -> dict:
    """Least-squares fit of seconds = alpha + bytes / bandwidth on per-size medians of `samples`."""
    sizes = sorted({s["bytes"] for s in samples})
    med = [float(np.median([s["seconds"] for s in samples if s["bytes"] == b])) for b in sizes]
    x, y = np.array(sizes, float), np.array(med)
    slope, intercept = np.polyfit(x, y, 1)
    return {"latency_s": max(float(intercept), 0.0), "bandwidth_Bps": float(1.0 / slope) if slope > 0 else float("inf"),
            "points": [{"bytes": int(b), "median_s": m} for b, m in zip(sizes, med)]}
