"""Compression cost: t(x) = alpha + beta x per kind of local work, measured on a device and fitted.

The simulator prices a scheme's local work (hash, merge, encode, decode, copy: the compression and
decompression of Espresso's and Cupcake's models) with `zensim.net.profile.WorkCost`, per piece of
work t(x) = fixed + per_element x. This module makes those figures for a device:

- `measure_work(device)` times torch kernels standing for each kind at 2^10 .. 2^k elements (CUDA
  events on a GPU, wall time on a CPU; medians): hash = a multiplicative hash of int64 ids and a
  stable sort by partition (ZEN's grouping of ids by hashed partition), merge = concatenate two sorted
  sparse chunks, unique, index_add the values, encode = gather values at ids, decode = index_add into
  a dense tensor, copy = a device copy;
- `fit(sizes, seconds)` -> (alpha, beta), both >= 0, least squares on the relative error (small and
  large pieces count alike; it lives in zensim.net.profile beside WorkCost, which it prices);
- `work_profile(measured)` -> a calibration profile (`zensim-profile/1`, keys `work_fixed_seconds`
  and `work_seconds_per_element`) that `--profile` takes everywhere (simulate, run, sweep, iteration).
  `bandwidth_scale` multiplies every beta: kernels of this kind are memory-bound, so another GPU's
  betas are this one's x (this memory bandwidth / that one's) (docs/iteration.md checks it against
  ZEN's hashing figure on a V100).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from zensim.net.profile import SCHEMA, WORK_KINDS, fit

MIX = 0x9E3779B97F4A7C15 - (1 << 64)  # Fibonacci hashing constant as a signed int64


def measured_points(measured: dict[str, Any]) -> dict[str, tuple[list[float], list[float]]]:
    """Per work kind, the measured (sizes, seconds): the torch kernels' table (`sizes`, `seconds` per
    kind) or the step kernels' points (zensim.schemes.workbench: `points` per kind)."""
    if "points" in measured:
        return {kind: ([p[0] for p in pts], [p[1] for p in pts]) for kind, pts in measured["points"].items()}
    return {kind: (measured["sizes"], measured["seconds"][kind]) for kind in WORK_KINDS}


def work_profile(measured: dict[str, Any], bandwidth_scale: float = 1.0, source: str = "",
                 time_scale: float = 1.0) -> dict[str, Any]:
    """A `zensim-profile/1` document with the fitted fixed and per-element costs of every kind
    measured; an operation measured only refined (the step kernels' `merge.coo`) also prices the
    bare operation (`merge`), as COO does. `time_scale` multiplies alpha and beta (the emulator's
    CPU slowdown: every rank process sharing the host's processors and caches)."""
    fixed, per_element = {}, {}
    for kind, (sizes, seconds) in measured_points(measured).items():
        alpha, beta = fit(sizes, seconds)
        fixed[kind], per_element[kind] = alpha * time_scale, beta * bandwidth_scale * time_scale
    for op in WORK_KINDS:
        if op not in per_element and f"{op}.coo" in per_element:
            fixed[op], per_element[op] = fixed[f"{op}.coo"], per_element[f"{op}.coo"]
    note = source or f"fitted t(x) = alpha + beta x to local-work kernels on {measured['device']}"
    if bandwidth_scale != 1.0:
        note += f"; betas x {bandwidth_scale:.4g} (memory-bandwidth ratio)"
    if time_scale != 1.0:
        note += f"; x {time_scale:.3g} (CPU slowdown)"
    return {"schema": SCHEMA, "work_fixed_seconds": fixed, "work_seconds_per_element": per_element, "source": note}


def priced_like(doc: dict[str, Any], like: dict[str, str]) -> dict[str, Any]:
    """`doc` (a work profile) with each kind of `like` priced as the kind it names (its fixed and
    per-element costs copied, x1) and listed under `scaled`: kinds a measurement could not price
    themselves. ValueError if a named kind is not priced or not a work kind."""
    from zensim.net.profile import WORK_OPS, work_op

    fixed, per_element = dict(doc["work_fixed_seconds"]), dict(doc["work_seconds_per_element"])
    scaled = dict(doc.get("scaled", {}))
    for kind, src in like.items():
        if src not in per_element:
            raise ValueError(f"{kind}={src}: {src} is not priced by the measurements")
        if work_op(kind) not in WORK_OPS:
            raise ValueError(f"{kind}={src}: {kind} is not a work kind")
        fixed[kind], per_element[kind] = fixed.get(src, 0.0), per_element[src]
        scaled[kind] = f"as {src} (x1)"
    return {**doc, "work_fixed_seconds": fixed, "work_seconds_per_element": per_element, **({"scaled": scaled} if scaled else {})}


def fixed_from(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    """`doc` with every kind's fixed cost `kind`'s (one kernel launch and synchronization, where `kind`
    is the cheapest call measured), the per-element costs unchanged. ValueError if `kind` is not priced."""
    fixed = doc["work_fixed_seconds"]
    if kind not in fixed:
        raise ValueError(f"{kind} has no fixed cost in the measurements")
    return {**doc, "work_fixed_seconds": {k: fixed[kind] for k in doc["work_seconds_per_element"]}}


def measure_work(device: Any = "cpu", max_log2: int = 22, reps: int = 10, min_log2: int = 10, parts: int = 16,
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Seconds of each kind's kernel at sizes 2^min_log2 .. 2^max_log2 on `device` (torch)."""
    import torch

    from zensim.train.clocks import clock_for, describe_device

    device = torch.device(device)
    clock = clock_for(device)

    def timed(fn: Callable[[], Any]) -> float:
        for _ in range(2):
            fn()
        samples = []
        for _ in range(reps):
            a = clock.mark("")
            fn()
            b = clock.mark("")
            clock.settle()
            samples.append(clock.seconds(a, b))
        return statistics.median(samples)

    out: dict[str, Any] = {"device": describe_device(device), "parts": parts, "reps": reps, "sizes": [],
                           "seconds": {k: [] for k in WORK_KINDS}}
    gen = torch.Generator(device="cpu").manual_seed(0)
    for log2 in range(min_log2, max_log2 + 1):
        n = 1 << log2
        ids = torch.randint(0, 20 * n, (n,), generator=gen).unique().to(device)  # sorted, ~n distinct
        vals = torch.rand(len(ids), generator=gen).to(device)
        dense = torch.zeros(20 * n, device=device)
        halves, half_vals = (ids[0::2], ids[1::2]), (vals[0::2], vals[1::2])
        src, dst = torch.rand(len(ids), device=device), torch.empty(len(ids), device=device)

        def hash_() -> None:
            part = (ids * MIX).remainder(parts)
            ids[torch.argsort(part, stable=True)]

        def merge() -> None:
            u, inv = torch.unique(torch.cat(halves), sorted=True, return_inverse=True)
            torch.zeros(len(u), device=device).index_add_(0, inv, torch.cat(half_vals))

        kernels = {"hash": hash_, "merge": merge, "encode": lambda: dense[ids],
                   "decode": lambda: dense.index_add_(0, ids, vals), "copy": lambda: dst.copy_(src)}
        out["sizes"].append(len(ids))
        for kind in WORK_KINDS:
            out["seconds"][kind].append(timed(kernels[kind]))
        if progress is not None:
            progress(f"2^{log2}: " + ", ".join(f"{k} {out['seconds'][k][-1] * 1e6:.1f} us" for k in WORK_KINDS))
    return out
