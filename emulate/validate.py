"""Simulator validation: emulate and simulate every scheme on the same trace, compare time and bytes.

For each cluster size n: calibrate the emulated cluster (links, and local work on the calibration
iteration of the trace) into a profile; emulate every scheme and the torch peers (repeats, median
and spread); run the same stage programs through the in-memory driver and time their message log
with the simulator (fifo and maxmin sharing) under that profile; compare. Bytes per rank must be
identical (same code, same data); times are a model, and the error says how good it is.
"""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path


from emulate.session import calibrate_cluster, emulate_trace, preflight
from emulate.simulate import scheme_logs, sim_times
from zensim.atomic import write_atomic
from zensim.errors import ConfigError
from zensim.net.models import MODELS
from zensim.net.profile import load_profile
from zensim.report.table import format_table
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.imbalance import imbalance_report
from zensim.sparse.registry import make_partitioner
from zensim.trace import Trace


# simulated variants: sharing model, with the local work as measured (x cpu_slowdown) or at the
# profile's fitted costs per element ("/elements")
VARIANTS = (*MODELS, *(f"{m}/elements" for m in MODELS))


def simulate_schemes(trace: Trace, iteration: int, n: int, schemes: list[str], profile_path: Path,
                     options: dict) -> dict[str, dict]:
    """Per scheme: the simulated time of every variant and the bytes per rank of its message log."""
    logs = scheme_logs(trace, iteration, n, schemes, options)
    profile = load_profile(profile_path)
    measured, elements = sim_times(logs, profile, measured_work=True), sim_times(logs, profile)
    return {name: {"sent": log.bytes_sent().tolist(), "received": log.bytes_received().tolist(), **measured[name],
                   **{f"{m}/elements": t for m, t in elements[name].items()}}
            for name, log in logs.items()}


def hash_imbalance(trace: Trace, iteration: int, n: int, seed: int = 0) -> dict:
    """Measured push and pull imbalance of ZEN's h0 on the trace, with Theorem 2's bounds as
    zensim.sparse.imbalance states them (explicit Chernoff constants)."""
    chunks = [SparseChunk(trace.flat_indices(iteration, w), None) for w in range(n)]
    return imbalance_report(make_partitioner("zen", trace.numel, n, seed=seed), chunks).as_dict()


def compare(n: int, emulated: list[dict], simulated: dict[str, dict]) -> list[dict]:
    """Rows: emulated time (median, spread), simulated per model, relative errors, bytes equality."""
    rows = []
    for rec in emulated:
        row = {"ranks": n, "name": rec["name"], "kind": rec["kind"], "emulated_s": rec["time_s"],
               "min_s": rec["min_s"], "max_s": rec["max_s"], "correct": rec["correct"]}
        sim = simulated.get(rec["name"]) if rec["kind"] == "scheme" else None
        if sim is not None:
            for m in VARIANTS:
                row[m] = sim[m]
                row[f"err_{m}"] = (sim[m] - rec["time_s"]) / rec["time_s"]
            row["bytes_equal"] = sim["sent"] == rec["sent"] and sim["received"] == rec["received"]
            row["max_sent"] = max(rec["sent"])
        rows.append(row)
    return rows


def validate(trace_path: str, ranks: list[int], rate_bps: float, schemes: list[str], repeats: int,
             iteration: int, calibration_iteration: int, options: dict, workdir: Path,
             wait_lock: float = 0.0) -> dict:
    """Run the whole validation; returns {'rows', 'imbalance', 'profiles', ...} (JSON-ready)."""
    trace = Trace.open(trace_path)
    if not 0 <= calibration_iteration < trace.iterations:
        raise ConfigError(f"--calibration-iteration: {calibration_iteration} out of range for {trace_path} "
                          f"({trace.iterations} iterations)")
    for n in ranks:  # every user error before the first (minutes-long) run, not after it
        preflight(trace_path, n, schemes, iteration, options)
    workdir.mkdir(parents=True, exist_ok=True)
    rows, imbalance, profiles = [], [], {}
    for n in ranks:
        profile_path = workdir / f"profile-n{n}.json"
        profiles[n] = calibrate_cluster(n, rate_bps, profile_path, trace_path, schemes, calibration_iteration,
                                        options, wait_lock=wait_lock)
        records, outs, _ = emulate_trace(trace_path, n, rate_bps, schemes, repeats, "dense,sparse", iteration,
                                         options, wait_lock=wait_lock)
        # every rank's raw records, for re-analysis without re-running
        write_atomic(workdir / f"emulated-n{n}.json.gz", gzip.compress(json.dumps(outs).encode()))
        rows += compare(n, records, simulate_schemes(trace, iteration, n, schemes, profile_path, options))
        imbalance.append({"ranks": n, **hash_imbalance(trace, iteration, n)})
    return {"trace": trace_path, "iteration": iteration, "calibration_iteration": calibration_iteration,
            "rate_bps": rate_bps, "repeats": repeats, "rows": rows, "imbalance": imbalance,
            "profiles": {str(k): v for k, v in profiles.items()}, "summary": error_summary(rows)}


def error_summary(rows: list[dict]) -> list[dict]:
    """Per n and simulated variant: median and max absolute relative error over schemes, the worst scheme."""
    out = []
    for n in sorted({r["ranks"] for r in rows}):
        sel = [r for r in rows if r["ranks"] == n and "fifo" in r]
        for m in VARIANTS:
            errs = [abs(r[f"err_{m}"]) for r in sel]
            if errs:
                worst = max(sel, key=lambda r: abs(r[f"err_{m}"]))
                out.append({"ranks": n, "model": m, "median_abs_err": statistics.median(errs),
                            "max_abs_err": max(errs), "worst": worst["name"]})
    return out


def tables(result: dict) -> str:
    """The validation as text tables: per scheme and n, the error summary, the hashing imbalance."""
    shown = ("fifo", "maxmin", "maxmin/elements")
    main = [[r["name"] + (" (torch)" if r["kind"] == "peer" else ""), r["ranks"], r["emulated_s"] * 1e3,
             f"{r['min_s'] * 1e3:.4g}-{r['max_s'] * 1e3:.4g}",
             *(r[m] * 1e3 if m in r else None for m in shown), *(_pct(r.get(f"err_{m}")) for m in shown),
             r.get("max_sent"), {True: "equal", False: "DIFFER", None: "-"}[r.get("bytes_equal")],
             "yes" if r["correct"] else "NO"]
            for r in result["rows"]]
    t1 = format_table(main, ["scheme", "n", "emulated ms", "spread ms", "fifo ms", "maxmin ms", "max/el ms",
                             "err fifo", "err maxmin", "err max/el", "max sent B/rank", "bytes emu/sim", "correct"])
    t2 = format_table([[s["ranks"], s["model"], _pct(s["median_abs_err"]), _pct(s["max_abs_err"]), s["worst"]]
                       for s in result["summary"]], ["n", "simulated", "median |err|", "max |err|", "worst scheme"])
    t3 = format_table([[i["ranks"], i["push"], i["push_bound"], i["pull"], i["pull_bound"]] for i in result["imbalance"]],
                      ["n", "push imbalance", "Thm 2 push bound", "pull imbalance", "Thm 2 pull bound"])
    return "\n\n".join([t1, t2, t3])


def _pct(x: float | None) -> str | None:
    return None if x is None else f"{100 * x:+.1f}%"
