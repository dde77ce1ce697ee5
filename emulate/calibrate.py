"""Calibration of an emulated cluster: link bandwidth and per-message latency, CPU cost per element.

Network: the rank program's `netcal` task times the stage exchange (ping-pong on an idle link, a
shift where every NIC is busy both ways, an all-to-all with incast on every NIC) at several sizes;
each pattern is fitted to seconds = latency + bytes / bandwidth. These fits differ by pattern on a
2-core machine (many concurrent flows cost CPU in the kernel and in gloo), and the simulator has one
NIC bandwidth and one latency; so when scheme runs are available the profile takes, end to end, the
(bandwidth, latency) under which the simulator's fifo times of the calibration runs best match their
emulated times (least median relative error on a grid around the pattern fits). Without scheme runs
it takes the fit of the pattern the caller names.

Local work: the emulation records, per (stage, phase), the wall time of the `pre` and `post` steps
and the elements the stage program metered per kind; a non-negative least-squares fit over all
steps of a calibration run gives seconds per element for each kind. The runs share the machine's
cores exactly as the validated runs do, so the fitted costs include that contention.

The result is a `zensim-profile/1` JSON (schema in zensim/net/profile.py, read by the simulator),
and the full fit (every pattern's points) beside it as `<profile>.details.json`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from emulate.netcal import fit_alpha_beta
from zensim.net.profile import SCHEMA, WORK_KINDS, WorkCost

PATTERNS = ("pingpong", "shift", "alltoall")


def fit_network(rank_outputs: list[dict]) -> dict[str, dict]:
    """Per pattern: the alpha-beta fit over every rank's samples of that pattern."""
    samples = [s for out in rank_outputs for s in out["samples"]]
    return {p: fit_alpha_beta([s for s in samples if s["pattern"] == p]) for p in PATTERNS}


def fit_work(rank_outputs: list[dict]) -> dict[str, float]:
    """Seconds per element for each work kind, from the (pre, post) step times of scheme runs."""
    rows, times = [], []
    kind_col = {k: i for i, k in enumerate(WORK_KINDS)}
    for out in rank_outputs:
        for run in out["runs"]:
            if run["kind"] != "scheme":
                continue
            counts: dict[tuple[int, str], np.ndarray] = defaultdict(lambda: np.zeros(len(WORK_KINDS)))
            for stage, phase, kind, elements in run["work"]:
                if kind in kind_col:
                    counts[(stage, phase)][kind_col[kind]] += elements
            for stage, st in enumerate(run["stages"]):
                for phase, key in (("pre", "pre_s"), ("post", "post_s")):
                    rows.append(counts[(stage, phase)])
                    times.append(st[key])
    if not rows:
        return {k: 0.0 for k in WORK_KINDS}
    a, b = np.array(rows), np.array(times)
    scale = np.maximum(a.max(axis=0), 1.0)  # columns of similar magnitude for a stable fit
    coef, _ = nnls(a / scale, b)
    return {k: float(c / s) for k, c, s in zip(WORK_KINDS, coef, scale)}


def fit_end_to_end(logs: dict, emulated: dict[str, float], work: dict[str, float], network: dict[str, dict],
                   rate_Bps: float) -> dict:
    """(bandwidth, latency) minimizing the median |simulated - emulated| / emulated of the calibration runs."""
    from emulate.simulate import sim_times

    cost = WorkCost(dict(work))
    fits = [f for f in network.values() if np.isfinite(f["bandwidth_Bps"])]
    bandwidths = np.geomspace(0.3 * rate_Bps, 1.05 * rate_Bps, 29)
    latencies = sorted({0.0, *(f["latency_s"] for f in fits), *(1e-3 * np.array([0.25, 0.5, 1, 2, 4, 8]))})
    best = None
    for lat in latencies:
        for bw in bandwidths:
            sims = sim_times(logs, float(bw), float(lat), cost, ("fifo",))
            errs = [abs(sims[k]["fifo"] - t) / t for k, t in emulated.items()]
            score = float(np.median(errs))
            if best is None or score < best["median_abs_err"]:
                best = {"bandwidth_Bps": float(bw), "latency_s": float(lat), "median_abs_err": score}
    return best


def make_profile(bandwidth: float, latency: float, work: dict[str, float], how: str, describe: dict) -> dict:
    """The zensim-profile/1 dict: NIC figures, work costs, and how they were measured."""
    return {
        "schema": SCHEMA,
        "nic_bandwidth": bandwidth,
        "nic_latency": latency,
        "work_seconds_per_element": work,
        "source": (f"zensim calibrate: {describe['ranks']} ranks in network namespaces, tbf "
                   f"{describe['rate_bps'] / 1e6:g} Mbit/s per NIC direction, MTU {describe['mtu']}, links {how}, "
                   f"work fit over the calibration runs' stage steps (2-core shared machine)"),
    }


def write_profile(path: Path, profile: dict, details: dict) -> None:
    """Write the profile and its details file atomically (temporary file, then rename)."""
    for target, data in ((path, profile), (path.with_name(path.stem + ".details.json"), details)):
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(target)
