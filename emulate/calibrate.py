"""Calibration of an emulated cluster: NIC bandwidth, latency and efficiency by flows, CPU cost per element.

Network: the rank program's `netcal` task times the stage exchange (ping-pong: one flow on an idle
link; shift: one flow per NIC, every NIC busy both ways; all-to-all: n-1 flows on every NIC) at
several sizes; each pattern is fitted to seconds = latency + bytes / bandwidth. The profile keeps the
shaped rate B as the NIC bandwidth and the measured loss as `nic_efficiency`: eff(1) = the one-flow
pattern's bandwidth / B (ping-pong by default), eff(n-1) = the all-to-all's bandwidth / B (gloo moves
many concurrent flows less efficiently than one on these cores); the simulator interpolates between
them. The per-message latency is the one-flow pattern's empty-message time.

Local work: the emulation records, per (stage, phase), the wall time of the `pre` and `post` steps
and the elements the stage program metered per kind. All rank processes share this host's cores, so
each step is charged the processor time it got (`cpu_seconds`: at each instant the ranks inside a
pre or post step share `host_cores` processors fairly), and a non-negative least-squares fit over all
steps gives the seconds per element of one rank alone; the profile's `host_cores` makes the
simulator share processors the same way.

The result is a `zensim-profile/1` JSON (schema in zensim/net/profile.py, read by the simulator),
and the full fit (every pattern's points) beside it as `<profile>.details.json`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from emulate.netcal import PATTERNS, fit_alpha_beta
from zensim.atomic import write_atomic
from zensim.net.profile import SCHEMA, WORK_KINDS, NicEfficiency, Profile, WorkCost


def fit_network(rank_outputs: list[dict]) -> dict[str, dict]:
    """Per pattern: the alpha-beta fit over every rank's samples of that pattern."""
    samples = [s for out in rank_outputs for s in out["samples"]]
    return {p: fit_alpha_beta([s for s in samples if s["pattern"] == p]) for p in PATTERNS}


def cpu_seconds(starts: np.ndarray, ends: np.ndarray, cores: int | None) -> np.ndarray:
    """Processor time each busy interval got when all of them shared `cores` processors fairly.

    At an instant with b intervals open each gets min(1, cores / b) of a processor (the OS time-
    slicing runnable processes); None = a processor each, i.e. the wall time.
    """
    if cores is None or not len(starts):
        return ends - starts
    bounds = np.unique(np.concatenate([starts, ends]))
    open_now = np.cumsum(np.bincount(np.searchsorted(bounds, starts), minlength=len(bounds))
                         - np.bincount(np.searchsorted(bounds, ends), minlength=len(bounds)))[:-1]
    speed = np.minimum(1.0, cores / np.maximum(open_now, 1))
    done = np.concatenate([[0.0], np.cumsum(np.diff(bounds) * speed)])
    return done[np.searchsorted(bounds, ends)] - done[np.searchsorted(bounds, starts)]


def _steps(run: dict) -> list[tuple[int, str, float, float]]:
    """(stage, phase, start, end) of a scheme run's pre and post steps, from its start stamp and durations."""
    t, out = run.get("t_start", 0.0), []
    for stage, st in enumerate(run["stages"]):
        out.append((stage, "pre", t, t + st["pre_s"]))
        t += st["pre_s"] + st["comm_s"]
        out.append((stage, "post", t, t + st["post_s"]))
        t += st["post_s"]
    return out


def fit_work(rank_outputs: list[dict], cores: int | None = None) -> dict[str, float]:
    """Seconds per element for each work kind, from the (pre, post) steps of scheme runs.

    With `cores`, the ranks' steps of one run are taken to share that many processors (all rank
    processes on one host): each step counts the processor time it got, not its wall time, so the
    costs are those of one rank alone and the simulator's `host_cores` pool re-creates the contention.
    """
    rows, times = [], []
    kind_col = {k: i for i, k in enumerate(WORK_KINDS)}
    groups: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for out in rank_outputs:
        for run in out["runs"]:
            if run["kind"] == "scheme":
                groups[(run["name"], run["repeat"])].append(run)
    for runs in groups.values():
        steps = []
        for run in runs:
            counts: dict[tuple[int, str], np.ndarray] = defaultdict(lambda: np.zeros(len(WORK_KINDS)))
            for stage, phase, kind, elements in run["work"]:
                if kind in kind_col:
                    counts[(stage, phase)][kind_col[kind]] += elements
            steps += [(counts[(stage, phase)], start, end) for stage, phase, start, end in _steps(run)]
        rows += [row for row, _, _ in steps]
        times += cpu_seconds(np.array([s for _, s, _ in steps]), np.array([e for _, _, e in steps]), cores).tolist()
    if not rows:
        return {k: 0.0 for k in WORK_KINDS}
    a, b = np.array(rows), np.array(times)
    scale = np.maximum(a.max(axis=0), 1.0)  # columns of similar magnitude for a stable fit
    coef, _ = nnls(a / scale, b)
    return {k: float(c / s) for k, c, s in zip(WORK_KINDS, coef, scale)}


def fit_links(network: dict[str, dict], rate_Bps: float, ranks: int, one_flow: str = "pingpong") -> dict:
    """NIC figures of the profile: bandwidth = the shaped rate, efficiency by flows, latency per message.

    eff(1) from the `one_flow` pattern (pingpong or shift), eff(ranks-1) from the all-to-all, each
    its fitted bandwidth / rate clipped to (0, 1]; latency = the one-flow pattern's empty-message time.
    """
    def eff(pattern: str) -> float:
        return float(min(max(network[pattern]["bandwidth_Bps"] / rate_Bps, 1e-3), 1.0))

    points = {"1": eff(one_flow)}
    if ranks > 2:
        points[str(ranks - 1)] = eff("alltoall")
    empty = [p["median_s"] for p in network[one_flow]["points"] if p["bytes"] == 0]
    latency = empty[0] if empty else network[one_flow]["latency_s"]
    return {"nic_bandwidth": rate_Bps, "nic_latency": float(latency), "nic_efficiency": points}


def check_profile(logs: dict, emulated: dict[str, float], profile: dict) -> dict:
    """Median |simulated - emulated| / emulated per sharing model on the calibration runs (a check, not a fit)."""
    from emulate.simulate import sim_times

    eff = NicEfficiency(tuple((int(k), e) for k, e in profile["nic_efficiency"].items()))
    links = {k: profile[k] for k in ("nic_bandwidth", "nic_latency")}
    sims = sim_times(logs, Profile(links, WorkCost(dict(profile["work_seconds_per_element"])), nic_efficiency=eff,
                                   host_cores=profile["host_cores"]))
    models = next(iter(sims.values())).keys() if sims else ()
    return {m: float(np.median([abs(sims[k][m] - t) / t for k, t in emulated.items()])) for m in models}


def make_profile(links: dict, work: dict[str, float], host_cores: int | None, how: str, describe: dict) -> dict:
    """The zensim-profile/1 dict: NIC figures (fit_links), work costs, processors, how they were measured."""
    return {
        "schema": SCHEMA,
        **links,
        "work_seconds_per_element": work,
        "host_cores": host_cores,
        "source": (f"zensim calibrate: {describe['ranks']} ranks in network namespaces on one host with "
                   f"{host_cores} cores, tbf {describe['rate_bps'] / 1e6:g} Mbit/s per NIC direction, MTU "
                   f"{describe['mtu']}, links {how}, work fit over the calibration runs' stage steps"),
    }


def write_profile(path: Path, profile: dict, details: dict) -> None:
    """Write the profile and its details file atomically (temporary file, then rename)."""
    for target, data in ((path, profile), (path.with_name(path.stem + ".details.json"), details)):
        write_atomic(target, json.dumps(data, indent=2) + "\n")
