"""Python API of the local emulation (the CLI and `validate` call these): emulate, calibrate.

    from emulate.session import emulate_trace, calibrate_cluster
    records = emulate_trace("traces/x.zt", ranks=8, rate_bps=200e6, schemes=["zen"], repeats=3)
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
from pathlib import Path

from emulate import calibrate
from emulate.launch import launch_local
from emulate.netns import LocalCluster
from emulate.simulate import scheme_logs, sim_times
from zensim.schemes import build_scheme, needs_profile
from emulate.summary import summarize
from zensim.atomic import write_atomic
from zensim.errors import ConfigError
from zensim.net.models import MODELS
from zensim.net.profile import WORK_OPS, Profile, parse_profile
from zensim.schemes.workbench import measure_steps
from zensim.trace import Trace, trace_path


def run_args(trace: str, schemes: list[str], repeats: int, peers: str, iteration: int, options: dict,
             timeout: float) -> list[str]:
    """Arguments of the rank program's `run` task."""
    return ["--task", "run", "--trace", str(trace), "--schemes", ",".join(schemes), "--repeats", str(repeats),
            "--peers", peers, "--iteration", str(iteration), "--options", json.dumps(options),
            "--timeout", str(timeout)]


def preflight(trace: str, ranks: int, schemes: list[str], iteration: int, options: dict | None) -> None:
    """Catch user errors here, in one line, before any namespace or rank process exists."""
    if ranks < 2:
        raise ConfigError(f"--ranks: an emulated cluster needs at least 2 ranks, got {ranks}")
    with Trace.open(trace) as t:
        if t.workers < ranks:
            raise ConfigError(f"{trace}: trace has {t.workers} workers, cannot emulate {ranks} ranks")
        if not 0 <= iteration < t.iterations:
            raise ConfigError(f"--iteration: {iteration} out of range for {trace} ({t.iterations} iterations)")
        for name in schemes:
            if not needs_profile(name):  # zen-auto needs every rank's data to build; its name is known
                build_scheme(name, ranks, t.numel, **(options or {}))


def emulate_trace(trace: str | Path | Trace, ranks: int, rate_bps: float, schemes: list[str], repeats: int = 1,
                  peers: str = "dense,sparse", iteration: int = 0, options: dict | None = None,
                  timeout: float = 900.0, wait_lock: float = 0.0) -> tuple[list[dict], list[dict], dict]:
    """Emulate `schemes` (and the torch peers) on `ranks` namespaces shaped to `rate_bps` bit/s per NIC;
    the trace is a path or an open Trace (the rank processes reopen its file).

    Returns (records per scheme/peer, raw rank outputs, cluster description).
    """
    trace = trace_path(trace)
    preflight(trace, ranks, schemes, iteration, options)
    with LocalCluster(ranks, int(rate_bps), wait_lock=wait_lock) as cluster:
        outs = launch_local(cluster, run_args(trace, schemes, repeats, peers, iteration, options or {}, timeout),
                            timeout=timeout, desc=f"emulate n={ranks}")
        return summarize(outs), outs, cluster.describe()


def calibrate_cluster(ranks: int, rate_bps: float, out: Path, trace: str | None = None, schemes: list[str] = (),
                      iteration: int = 0, options: dict | None = None, timeout: float = 900.0,
                      wait_lock: float = 0.0, repeats: int = 2, step_repeats: int = 3) -> dict:
    """Measure links (and, given a trace and schemes, local work) on an emulated cluster; write the profile.

    `step_repeats`: timed in-process runs per scheme for the measured local work (emulate.stepcost).
    Returns the profile dict (also written to `out`; the fits and samples beside it in
    `<out stem>.details.json`, the calibration runs' raw records in `<out stem>.runs.json.gz`).
    """
    if trace and schemes:
        preflight(trace, ranks, list(schemes), iteration, options)
    with LocalCluster(ranks, int(rate_bps), wait_lock=wait_lock) as cluster:
        net_outs = launch_local(cluster, ["--task", "netcal", "--timeout", str(timeout)], timeout=timeout,
                                desc=f"calibrate links n={ranks}")
        work_outs = []
        if trace and schemes:
            work_outs = launch_local(cluster, run_args(trace, list(schemes), repeats, "none", iteration, options or {}, timeout),
                                     timeout=timeout, desc=f"calibrate work n={ranks}")
        describe = cluster.describe()
    network = calibrate.fit_network(net_outs)
    logs = {}
    if work_outs:
        with Trace.open(trace) as t:
            logs = scheme_logs(t, iteration, ranks, list(schemes), options or {}, step_repeats)
    links = calibrate.fit_links(network, rate_bps / 8, ranks)
    details = {"cluster": describe, "network": network,
               "samples": [dict(s, rank=out["rank"]) for out in net_outs for s in out["samples"]]}
    work: dict = {"work_seconds_per_element": {op: 0.0 for op in WORK_OPS}}  # links only: no local work
    if work_outs:  # this host's step kernels, one process alone (the cluster is gone), up to the largest count
        largest = max((int(log.work_arrays()["elements"].max(initial=0)) for log in logs.values()), default=0)
        details["work_kernels"] = kernels = measure_steps(min(22, max(12, largest.bit_length())))
        work, details["work_scale"] = calibrate.fit_work(work_outs, kernels)
    profile = calibrate.make_profile(links, work, os.cpu_count(), calibrate.cpu_slowdown(work_outs, logs), describe,
                                     calibrate.fit_exchange(work_outs) if work_outs else None)
    if work_outs:
        write_atomic(Path(out).with_name(Path(out).stem + ".runs.json.gz"), gzip.compress(json.dumps(work_outs).encode()))
        emulated = {r["name"]: r["time_s"] for r in summarize(work_outs)}
        details.update(calibration_check=_check(logs, emulated, parse_profile(profile, out)),
                       calibration_runs={"trace": trace, "iteration": iteration, "emulated_s": emulated})
    calibrate.write_profile(Path(out), profile, details)
    return profile


def _check(logs: dict, emulated: dict[str, float], profile: Profile) -> dict[str, float]:
    """Median |simulated - emulated| / emulated on the calibration runs themselves, per sharing model,
    local work measured (`<model>`) or at the fitted costs per element (`<model>/elements`)."""
    out = {}
    for measured, suffix in ((True, ""), (False, "/elements")):
        sims = sim_times(logs, profile, measured_work=measured)
        for m in MODELS:
            out[m + suffix] = statistics.median(abs(sims[k][m] - t) / t for k, t in emulated.items())
    return out
