"""Calibration of an emulated cluster: link bandwidth and per-message latency, CPU cost per element.

Network: the rank program's `netcal` task times the stage exchange (ping-pong on an idle link, a
shift where every NIC is busy both ways, an all-to-all with incast on every NIC) at several sizes;
each pattern is fitted to seconds = latency + bytes / bandwidth. The profile takes the pattern the
caller names (default `alltoall`: most schemes are point-to-point exchanges among all ranks).

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
from zensim.net.profile import SCHEMA, WORK_KINDS

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


def make_profile(network: dict[str, dict], work: dict[str, float], pattern: str, describe: dict) -> dict:
    """The zensim-profile/1 dict from the fits, taking the link figures of `pattern`."""
    fit = network[pattern]
    return {
        "schema": SCHEMA,
        "nic_bandwidth": fit["bandwidth_Bps"],
        "nic_latency": fit["latency_s"],
        "work_seconds_per_element": work,
        "source": (f"zensim calibrate: {describe['ranks']} ranks in network namespaces, tbf "
                   f"{describe['rate_bps'] / 1e6:g} Mbit/s per NIC direction, link fit on the {pattern} pattern, "
                   f"work fit over the calibration runs' stage steps (2-core shared machine)"),
    }


def write_profile(path: Path, profile: dict, details: dict) -> None:
    """Write the profile and its details file atomically (temporary file, then rename)."""
    for target, data in ((path, profile), (path.with_name(path.stem + ".details.json"), details)):
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(target)
