"""Simulator validation: emulate and simulate every scheme on the same trace, compare time and bytes.

For each bandwidth and cluster size n: calibrate the emulated cluster (links, and local work on the
calibration iteration of the trace) into a profile; for each validated iteration, emulate every
scheme and the torch peers (repeats, median and spread); run the same stage programs through the
in-memory driver and time their message log with the simulator (fifo and maxmin sharing) under that
profile; compare the whole run and its communication part (the wait for messages,
emulate.summary.comm_part), and the emulated time against the wire bound. Bytes per rank must be
identical (same code, same data); times are a model, and the error says how good it is.
"""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path


from emulate.session import calibrate_cluster, emulate_trace, preflight
from emulate.simulate import scheme_logs, sim_parts
from zensim.atomic import write_atomic
from zensim.errors import ConfigError
from zensim.net.models import MODELS
from zensim.net.profile import load_profile
from zensim.report.table import format_table
from zensim.run.log import MessageLog
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.imbalance import imbalance_report
from zensim.sparse.registry import make_partitioner
from zensim.trace import Trace


# simulated variants: sharing model, with the local work as measured (x cpu_slowdown) or at the
# profile's fitted costs per element ("/elements")
VARIANTS = (*MODELS, *(f"{m}/elements" for m in MODELS))


def simulate_schemes(logs: dict[str, MessageLog], profile_path: Path) -> dict[str, dict]:
    """Per scheme: the bytes per rank of its message log (emulate.simulate.scheme_logs) and, per
    variant, the simulated time, communication part and per-stage communication under the profile
    (emulate.simulate.sim_parts)."""
    profile = load_profile(profile_path)
    measured, elements = sim_parts(logs, profile, measured_work=True), sim_parts(logs, profile)
    return {name: {"sent": log.bytes_sent().tolist(), "received": log.bytes_received().tolist(), **measured[name],
                   **{f"{m}/elements": part for m, part in elements[name].items()}}
            for name, log in logs.items()}


def hash_imbalance(trace: Trace, iteration: int, n: int, seed: int = 0) -> dict:
    """Measured push and pull imbalance of ZEN's h0 on the trace, with Theorem 2's bounds as
    zensim.sparse.imbalance states them (explicit Chernoff constants)."""
    chunks = [SparseChunk(trace.flat_indices(iteration, w), None) for w in range(n)]
    return imbalance_report(make_partitioner("zen", trace.numel, n, seed=seed), chunks).as_dict()


def wire_bound(rec: dict, rate_bps: float) -> float | None:
    """Seconds the busiest NIC direction needs at the link rate: the largest payload bytes any rank
    sends or receives (a scheme); for a torch peer, whose payload is not ours to count, the largest
    bytes a rank's interface carried (link counters: payload, headers, TCP/IP). None if unknown."""
    counts = [b for key in (("sent", "received") if rec["kind"] == "scheme" else ("wire_tx", "wire_rx"))
              for b in rec.get(key) or [] if b is not None]
    return 8 * max(counts) / rate_bps if counts else None


def compare(n: int, emulated: list[dict], simulated: dict[str, dict], rate_bps: float = 0.0,
            iteration: int = 0) -> list[dict]:
    """Rows: emulated time (median, spread) and communication part, simulated per variant, relative
    errors of both, bytes equality, emulated / wire bound."""
    rows = []
    for rec in emulated:
        row = {"ranks": n, "rate_bps": rate_bps, "iteration": iteration, "name": rec["name"], "kind": rec["kind"],
               "emulated_s": rec["time_s"], "min_s": rec["min_s"], "max_s": rec["max_s"], "correct": rec["correct"]}
        bound = wire_bound(rec, rate_bps) if rate_bps else None
        if bound:
            row.update(wire_s=bound, emu_over_wire=rec["time_s"] / bound)
        sim = simulated.get(rec["name"]) if rec["kind"] == "scheme" else None
        if sim is not None:
            comm = rec.get("comm_s")
            row.update(emulated_comm_s=comm, comm_stages={"emulated": rec.get("comm_stages_s")})
            for m in VARIANTS:
                row[m] = sim[m]["time"]
                row[f"err_{m}"] = (sim[m]["time"] - rec["time_s"]) / rec["time_s"]
                row[f"comm_{m}"] = sim[m]["comm"]
                row["comm_stages"][m] = sim[m]["comm_stages"]
                if comm:
                    row[f"err_comm_{m}"] = (sim[m]["comm"] - comm) / comm
            row["bytes_equal"] = sim["sent"] == rec["sent"] and sim["received"] == rec["received"]
            row["max_sent"] = max(rec["sent"])
        rows.append(row)
    return rows


def validate(trace_path: str, ranks: list[int], rates_bps: list[float], schemes: list[str], repeats: int,
             iterations: list[int], calibration_iteration: int, options: dict, workdir: Path,
             wait_lock: float = 0.0, step_repeats: int = 3) -> dict:
    """Run the whole validation: per bandwidth and cluster size, one calibration, then every iteration
    emulated and simulated; returns {'rows', 'summary', 'imbalance', 'profiles', ...} (JSON-ready).
    `step_repeats`: timed in-process runs per scheme whose median is the measured local work
    (emulate.stepcost)."""
    trace = Trace.open(trace_path)
    if not 0 <= calibration_iteration < trace.iterations:
        raise ConfigError(f"--calibration-iteration: {calibration_iteration} out of range for {trace_path} "
                          f"({trace.iterations} iterations)")
    for it in iterations:  # every user error before the first (minutes-long) run, not after it
        if not 0 <= it < trace.iterations:
            raise ConfigError(f"--iterations: {it} out of range for {trace_path} ({trace.iterations} iterations)")
    for n in ranks:
        preflight(trace_path, n, schemes, iterations[0], options)
    workdir.mkdir(parents=True, exist_ok=True)
    rows, profiles, logs = [], [], {}
    for rate in rates_bps:
        for n in ranks:
            tag = f"{rate / 1e6:g}mbit-n{n}"
            profile_path = workdir / f"profile-{tag}.json"
            profile = calibrate_cluster(n, rate, profile_path, trace_path, schemes, calibration_iteration,
                                        options, wait_lock=wait_lock, step_repeats=step_repeats)
            profiles.append({"rate_bps": rate, "ranks": n, "profile": profile})
            for it in iterations:
                records, outs, _ = emulate_trace(trace_path, n, rate, schemes, repeats, "dense,sparse", it,
                                                 options, wait_lock=wait_lock)
                # every rank's raw records, for re-analysis without re-running
                write_atomic(workdir / f"emulated-{tag}-i{it}.json.gz", gzip.compress(json.dumps(outs).encode()))
                if (n, it) not in logs:  # the same steps at every bandwidth: measured once
                    logs[n, it] = scheme_logs(trace, it, n, schemes, options, step_repeats)
                rows += compare(n, records, simulate_schemes(logs[n, it], profile_path), rate, it)
    imbalance = [{"ranks": n, "iteration": it, **hash_imbalance(trace, it, n)} for n in ranks for it in iterations]
    return {"trace": trace_path, "iterations": iterations, "calibration_iteration": calibration_iteration,
            "rates_bps": list(rates_bps), "repeats": repeats, "step_repeats": step_repeats, "rows": rows, "imbalance": imbalance,
            "profiles": profiles, "summary": error_summary(rows)}


def upgrade(result: dict) -> dict:
    """A validation result of the one-bandwidth, one-iteration form (`rate_bps`, `iteration`, profiles by
    n) in the current form, so that an earlier validation.json still renders."""
    if "rates_bps" in result or "rate_bps" not in result:
        return result
    rate, it = result["rate_bps"], result.get("iteration", 0)
    rows = [{"rate_bps": rate, "iteration": it, **r} for r in result["rows"]]
    return {**result, "rates_bps": [rate], "iterations": [it], "rows": rows, "summary": error_summary(rows),
            "imbalance": [{"iteration": it, **i} for i in result["imbalance"]],
            "profiles": [{"rate_bps": rate, "ranks": int(n), "profile": p} for n, p in result["profiles"].items()]}


def merge(results: list[dict]) -> dict:
    """One validation from several runs of the same trace (say, one per bandwidth): rows, profiles and
    imbalance together, the summary recomputed, the commands joined; ConfigError if the runs differ in
    trace, repeats or calibration iteration."""
    first = results[0]
    for key in ("trace", "repeats", "calibration_iteration"):
        if len({json.dumps(r.get(key)) for r in results}) > 1:
            raise ConfigError(f"--from-json: the validations differ in {key}; only runs of the same trace and settings merge")
    rows = [row for r in results for row in r["rows"]]
    imbalance = {(i["ranks"], i.get("iteration")): i for r in results for i in r["imbalance"]}
    return {**first, "rows": rows, "summary": error_summary(rows),
            "rates_bps": sorted({x for r in results for x in r["rates_bps"]}),
            "iterations": sorted({x for r in results for x in r["iterations"]}),
            "profiles": [p for r in results for p in r["profiles"]],
            "imbalance": [imbalance[k] for k in sorted(imbalance, key=lambda k: (k[0], k[1] or 0))],
            "command": " and ".join(r.get("command", "zensim validate") for r in results)}


def error_summary(rows: list[dict]) -> list[dict]:
    """Per bandwidth, n and simulated variant, over schemes and iterations: median and max absolute
    relative error of the whole and of the communication part, the worst scheme of each."""
    out = []
    for rate, n in sorted({(r.get("rate_bps", 0.0), r["ranks"]) for r in rows}):
        sel = [r for r in rows if r.get("rate_bps", 0.0) == rate and r["ranks"] == n and "fifo" in r]
        for m in VARIANTS:
            entry = {"rate_bps": rate, "ranks": n, "model": m}
            for part, key in (("", f"err_{m}"), ("comm_", f"err_comm_{m}")):
                have = [r for r in sel if key in r]
                if have:
                    worst = max(have, key=lambda r: abs(r[key]))
                    entry.update({f"{part}median_abs_err": statistics.median(abs(r[key]) for r in have),
                                  f"{part}max_abs_err": abs(worst[key]), f"{part}worst": worst["name"]})
            if len(entry) > 3:
                out.append(entry)
    return out


def tables(result: dict) -> str:
    """The validation as text tables: per scheme, bandwidth, n and iteration (whole and communication
    part, emulated / wire bound), the error summary, the hashing imbalance."""
    shown = ("fifo", "maxmin", "maxmin/elements")
    main = [[r["name"] + (" (torch)" if r["kind"] == "peer" else ""), _mbit(r.get("rate_bps")), r["ranks"],
             r.get("iteration"), r["emulated_s"] * 1e3, f"{r['min_s'] * 1e3:.4g}-{r['max_s'] * 1e3:.4g}",
             _ratio(r.get("emu_over_wire")), r["maxmin"] * 1e3 if "maxmin" in r else None,
             *(_pct(r.get(f"err_{m}")) for m in shown),
             _ms(r.get("emulated_comm_s")), _ms(r.get("comm_maxmin")),
             *(_pct(r.get(f"err_comm_{m}")) for m in ("fifo", "maxmin")),
             {True: "equal", False: "DIFFER", None: "-"}[r.get("bytes_equal")], "yes" if r["correct"] else "NO"]
            for r in result["rows"]]
    t1 = format_table(main, ["scheme", "Mbit/s", "n", "it", "emulated ms", "spread ms", "emu/wire", "maxmin ms",
                             "err fifo", "err maxmin", "err max/el", "comm emu ms", "comm maxmin ms",
                             "err comm fifo", "err comm maxmin", "bytes emu/sim", "correct"])
    t2 = format_table([[_mbit(s.get("rate_bps")), s["ranks"], s["model"], _pct(s.get("median_abs_err")),
                        _pct(s.get("max_abs_err")), s.get("worst"), _pct(s.get("comm_median_abs_err")),
                        _pct(s.get("comm_max_abs_err")), s.get("comm_worst")] for s in result["summary"]],
                      ["Mbit/s", "n", "simulated", "whole median |err|", "whole max |err|", "worst scheme",
                       "comm median |err|", "comm max |err|", "worst scheme (comm)"])
    t3 = format_table([[i["ranks"], i.get("iteration"), i["push"], i["push_bound"], i["pull"], i["pull_bound"]]
                       for i in result["imbalance"]],
                      ["n", "it", "push imbalance", "Thm 2 push bound", "pull imbalance", "Thm 2 pull bound"])
    return "\n\n".join([t1, t2, t3])


def _mbit(rate_bps: float | None) -> str | None:
    return None if not rate_bps else f"{rate_bps / 1e6:g}"


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def _ratio(x: float | None) -> str | None:
    return None if x is None else f"{x:.3f}"


def _pct(x: float | None) -> str | None:
    return None if x is None else f"{100 * x:+.1f}%"
