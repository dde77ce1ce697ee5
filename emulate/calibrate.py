"""Calibration of an emulated cluster: NIC bandwidth and latency, host efficiency, CPU cost of local work.

Network: the rank program's `netcal` task times the stage exchange in several patterns (ping-pong:
one flow on an idle host; shift-k: k flows, one per NIC direction, on k NICs at once; all-to-all:
n(n-1) flows, n-1 on every NIC) at several sizes; each pattern is fitted to seconds = latency +
bytes / bandwidth over the per-size medians of every rank's samples. The profile keeps the shaped
rate B as the NIC bandwidth and the loss as `host_efficiency` h(f) by the flows f active at once on
the host (all emulated NICs share one host, and the kernel and gloo move many concurrent flows
less efficiently than one): h(1) = ping-pong bandwidth / B, h(k) = shift-k bandwidth / B, h(n(n-1))
= all-to-all bandwidth / B, clipped to (0, 1]. The per-message latency is the ping-pong's
empty-message time.

Local work: the emulation records, per (stage, phase), the CPU time of the `pre` and `post` steps
(the rank's main thread) and the elements the stage program metered per kind; a non-negative
least-squares fit gives seconds per element of each kind, and the profile's `host_cores` makes the
simulator share the host's processors among the ranks. The same steps run in one process alone
(emulate.stepcost) take less CPU than inside the emulation, where all rank processes share caches
and memory bandwidth: `cpu_slowdown` = emulated / alone, the median over the calibration's schemes,
scales the measured local work when the simulator replays it (`zensim validate`).

The result is a `zensim-profile/1` JSON (schema in zensim/net/profile.py, read by the simulator),
and the full fit (every pattern's points and samples) beside it as `<profile>.details.json`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from emulate.netcal import fit_alpha_beta
from zensim.atomic import write_atomic
from zensim.net.profile import SCHEMA, WORK_KINDS
from zensim.run.log import MessageLog


def fit_network(rank_outputs: list[dict]) -> dict[str, dict]:
    """Per pattern (in the order measured): the alpha-beta fit over every rank's samples of that pattern."""
    samples = [s for out in rank_outputs for s in out["samples"]]
    names = dict.fromkeys(s["pattern"] for s in sorted(samples, key=lambda s: s["round"]))
    return {p: fit_alpha_beta([s for s in samples if s["pattern"] == p]) for p in names}


def _step_rows(run: dict) -> tuple[list[np.ndarray], list[float]]:
    """Per (stage, phase) of a scheme run: the metered elements by kind and the step's CPU seconds."""
    kind_col = {k: i for i, k in enumerate(WORK_KINDS)}
    counts: dict[tuple[int, str], np.ndarray] = defaultdict(lambda: np.zeros(len(WORK_KINDS)))
    for stage, phase, kind, elements in run["work"]:
        if kind in kind_col:
            counts[(stage, phase)][kind_col[kind]] += elements
    rows, cpu = [], []
    for stage, st in enumerate(run["stages"]):
        for phase in ("pre", "post"):
            rows.append(counts[(stage, phase)])
            cpu.append(st[f"{phase}_cpu_s"])
    return rows, cpu


def scheme_runs(rank_outputs: list[dict]) -> list[dict]:
    """Every rank's record of every timed scheme run."""
    return [run for out in rank_outputs for run in out["runs"] if run["kind"] == "scheme"]


def fit_work(rank_outputs: list[dict]) -> dict[str, float]:
    """Seconds per element for each work kind: non-negative least squares of every pre and post
    step's CPU time (as the emulation measured it, all ranks running) on its metered elements."""
    rows, times = [], []
    for run in scheme_runs(rank_outputs):
        r, c = _step_rows(run)
        rows += r
        times += c
    if not rows:
        return {k: 0.0 for k in WORK_KINDS}
    a, b = np.array(rows), np.array(times)
    scale = np.maximum(a.max(axis=0), 1.0)  # columns of similar magnitude for a stable fit
    coef, _ = nnls(a / scale, b)
    return {k: float(c / s) for k, c, s in zip(WORK_KINDS, coef, scale)}


def cpu_slowdown(rank_outputs: list[dict], logs: dict[str, MessageLog]) -> float:
    """Per scheme, the CPU seconds of its emulated steps over those of the same steps run alone
    (`logs[name].measured`, once per timed repeat); the median over schemes (1.0 if none)."""
    emulated: dict[str, float] = defaultdict(float)
    alone: dict[str, float] = defaultdict(float)
    for out in rank_outputs:
        for run in out["runs"]:
            log = logs.get(run["name"]) if run["kind"] == "scheme" else None
            if log is None or log.measured is None:
                continue
            emulated[run["name"]] += sum(st["pre_cpu_s"] + st["post_cpu_s"] for st in run["stages"])
            alone[run["name"]] += float(log.measured[out["rank"]].sum())
    ratios = [emulated[k] / alone[k] for k in alone if alone[k] > 0]
    return float(np.median(ratios)) if ratios else 1.0


def fit_links(network: dict[str, dict], rate_Bps: float, ranks: int) -> dict:
    """NIC figures of the profile: bandwidth = the shaped rate, latency per message, host efficiency.

    h(flows) = each pattern's fitted bandwidth / rate (per NIC direction), clipped to (0, 1]: the ping-
    pong at 1 flow, shift-k at k, the all-to-all at ranks (ranks - 1) (unless a shift already gave
    that count, as at 2 ranks). Latency = the ping-pong's empty-message time.
    """
    flows = {"pingpong": 1, "alltoall": ranks * (ranks - 1)}
    flows.update({p: int(p.split("-")[1]) for p in network if p.startswith("shift-")})
    host: dict[str, float] = {}
    for pattern in sorted(network, key=lambda p: (flows[p], p == "alltoall")):
        host.setdefault(str(flows[pattern]), float(min(max(network[pattern]["bandwidth_Bps"] / rate_Bps, 1e-3), 1.0)))
    empty = [p["median_s"] for p in network["pingpong"]["points"] if p["bytes"] == 0]
    latency = empty[0] if empty else network["pingpong"]["latency_s"]
    return {"nic_bandwidth": rate_Bps, "nic_latency": float(latency), "host_efficiency": host}


def make_profile(links: dict, work: dict[str, float], host_cores: int | None, slowdown: float, describe: dict) -> dict:
    """The zensim-profile/1 dict: NIC figures (fit_links), work costs, processors, how they were measured."""
    return {
        "schema": SCHEMA,
        **links,
        "work_seconds_per_element": work,
        "host_cores": host_cores,
        "cpu_slowdown": slowdown,
        "rendezvous": True,  # the exchange (gloo) moves a message once its receive is posted
        "source": (f"zensim calibrate: {describe['ranks']} ranks in network namespaces on one host with "
                   f"{host_cores} cores, tbf {describe['rate_bps'] / 1e6:g} Mbit/s per NIC direction, MTU "
                   f"{describe['mtu']}, links from the pingpong, shift-k and alltoall patterns, work fit over the "
                   "calibration runs' stage steps"),
    }


def write_profile(path: Path, profile: dict, details: dict) -> None:
    """Write the profile and its details file atomically (temporary file, then rename)."""
    for target, data in ((path, profile), (path.with_name(path.stem + ".details.json"), details)):
        write_atomic(target, json.dumps(data, indent=2) + "\n")
