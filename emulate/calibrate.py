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

Local work: t(x) = alpha + beta x per work kind (zensim.schemes.workkinds) fitted to the kernels of
the stage programs' steps timed on this host, one process alone (zensim.schemes.workbench); the
emulation records, per (stage, phase), the CPU time of the `pre` and `post` steps (the rank's main
thread) and the kinds and counts the stage program metered, and `work_scale` (emulated CPU / the
same steps priced by the kernels' fits, the median over the calibration's schemes) scales every
alpha and beta: the kernels say what each kind costs relative to the others, the calibration runs
how fast the host does it under the emulation's load. The profile's `host_cores` makes the
simulator share the host's processors among the ranks.

The exchange itself costs CPU too (posting a stage's sends, copying the bytes out, receipts): with
16 ranks on 2 cores about 0.5 ms per stage plus 0.3-0.4 ms per message sent per rank, which the
ping-pong latency (one pair on an idle host) does not see. `fit_exchange` fits it from the
calibration runs' `comm` steps (CPU of the rank's main thread) into the profile's `exchange_cpu`;
the simulator runs it on the shared processors inside the wait for messages (zensim.net.replay). The same steps run in one process alone
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
from zensim.net.profile import SCHEMA, WorkCost
from zensim.run.log import MessageLog
from zensim.train.cost import work_profile


def fit_network(rank_outputs: list[dict]) -> dict[str, dict]:
    """Per pattern (in the order measured): the alpha-beta fit over every rank's samples of that pattern."""
    samples = [s for out in rank_outputs for s in out["samples"]]
    names = dict.fromkeys(s["pattern"] for s in sorted(samples, key=lambda s: s["round"]))
    return {p: fit_alpha_beta([s for s in samples if s["pattern"] == p]) for p in names}


def scheme_runs(rank_outputs: list[dict]) -> list[dict]:
    """Every rank's record of every timed scheme run."""
    return [run for out in rank_outputs for run in out["runs"] if run["kind"] == "scheme"]


def work_scale(rank_outputs: list[dict], work: WorkCost) -> float:
    """How much slower the emulated ranks do their local work than the kernels' fits say: per scheme,
    the CPU seconds of every pre and post step (as the emulation measured them, all ranks running)
    over the same steps priced at `work` (their metered kinds and counts); the median over schemes
    (1.0 if none). The kernels give each kind's cost relative to the others; this gives the host's
    absolute speed under the emulation's load, measured the way the runs experience it."""
    emulated: dict[str, float] = defaultdict(float)
    priced: dict[str, float] = defaultdict(float)
    for run in scheme_runs(rank_outputs):
        emulated[run["name"]] += sum(st["pre_cpu_s"] + st["post_cpu_s"] for st in run["stages"])
        priced[run["name"]] += sum(work.seconds(kind, elements) for _, _, kind, elements in run["work"])
    ratios = [emulated[k] / priced[k] for k in priced if priced[k] > 0 and emulated[k] > 0]
    return float(np.median(ratios)) if ratios else 1.0


def fit_work(rank_outputs: list[dict], kernels: dict) -> tuple[dict, float]:
    """The profile's local-work costs: t(x) = alpha + beta x per kind fitted to the step kernels
    (`kernels`, zensim.schemes.workbench.measure_steps on this host), both x `work_scale` of the
    calibration runs; returns ({"work_fixed_seconds", "work_seconds_per_element"}, the scale)."""
    alone = work_profile(kernels)
    scale = work_scale(rank_outputs, WorkCost(alone["work_seconds_per_element"], alone["work_fixed_seconds"]))
    scaled = work_profile(kernels, time_scale=scale)
    return {k: scaled[k] for k in ("work_fixed_seconds", "work_seconds_per_element")}, scale


def fit_exchange(rank_outputs: list[dict]) -> dict[str, float]:
    """The CPU of the exchange itself, as the calibration runs measured it (the rank's main thread in
    each stage's `comm` step: posting, copying the bytes out, receipts, all ranks sharing the host):
    non-negative least squares of every stage's `comm_cpu_s` on (1 if the rank took part, messages
    it sent, bytes it sent); the profile's `exchange_cpu` {"stage", "message", "byte"} in seconds."""
    rows, cpu = [], []
    for run in scheme_runs(rank_outputs):
        for st in run["stages"]:
            if st["sent"] or st["received"]:
                rows.append([1.0, len(st["sent_to"]), st["sent"] / 1e6])
                cpu.append(st["comm_cpu_s"])
    if not rows:
        return {"stage": 0.0, "message": 0.0, "byte": 0.0}
    coef, _ = nnls(np.array(rows), np.array(cpu))
    return {"stage": float(coef[0]), "message": float(coef[1]), "byte": float(coef[2] / 1e6)}


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


def make_profile(links: dict, work: dict[str, dict], host_cores: int | None, slowdown: float, describe: dict,
                 exchange: dict[str, float] | None = None) -> dict:
    """The zensim-profile/1 dict: NIC figures (fit_links), work costs (fit_work's), processors, the
    exchange's CPU (fit_exchange's), how they were measured."""
    return {
        "schema": SCHEMA,
        **links,
        **work,
        "exchange_cpu": exchange,
        "host_cores": host_cores,
        "cpu_slowdown": slowdown,
        "rendezvous": True,  # the exchange (gloo) moves a message once its receive is posted
        "source": (f"zensim calibrate: {describe['ranks']} ranks in network namespaces on one host with "
                   f"{host_cores} cores, tbf {describe['rate_bps'] / 1e6:g} Mbit/s per NIC direction, MTU "
                   f"{describe['mtu']}, links from the pingpong, shift-k and alltoall patterns, work from the step "
                   "kernels (zensim work measure --kernels steps) x their slowdown in the calibration runs, exchange CPU "
                   "from the calibration runs' comm steps"),
    }


def write_profile(path: Path, profile: dict, details: dict) -> None:
    """Write the profile and its details file atomically (temporary file, then rename)."""
    for target, data in ((path, profile), (path.with_name(path.stem + ".details.json"), details)):
        write_atomic(target, json.dumps(data, indent=2) + "\n")
