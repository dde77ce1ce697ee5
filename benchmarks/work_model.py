"""The per-element local-work model against a stored validation, without emulating again.

    python benchmarks/work_model.py --data docs/validation-data --trace /tmp/zfid-val.zt [--kernels K.json]

For every cluster size and bandwidth of `<data>/validation.json`: the step kernels' fits (measured
here, `zensim work measure --kernels steps`, or read from --kernels) x the work scale of that
calibration's runs (`<data>/profile-<bw>-n<n>.runs.json.gz`: their CPU per scheme over the same
steps priced by the fits, the calibration iteration's counts from the in-memory driver), and the
exchange CPU fitted to those runs' comm steps (emulate.calibrate.fit_exchange); then every
validated iteration's schemes simulated with `maxmin` and that model, against the emulated times
stored in validation.json. Prints per scheme the stored errors (whole: `maxmin/elements`, the
model the run was made with; communication part: `maxmin`, measured work) and the new model's,
and per size and bandwidth the median and largest |error|.
Machine: whatever runs it (the kernels time this host; the emulated times are the stored ones).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from emulate.calibrate import fit_exchange, fit_work
from emulate.simulate import sim_parts
from zensim.net.profile import parse_profile
from zensim.report.table import format_table
from zensim.run import run_ranks
from zensim.schemes import build_scheme, needs_profile
from zensim.schemes.workbench import measure_steps
from zensim.trace import Trace
from zensim.trace.values import worker_chunk


def logs_of(trace: Trace, iteration: int, n: int, schemes: list[str]) -> dict:
    """The message log (kinds and counts of local work) of every scheme on `iteration`, in memory."""
    chunks = [worker_chunk(trace, iteration, w) for w in range(n)]
    return {s: run_ranks(build_scheme(s, n, trace.numel, profile=chunks if needs_profile(s) else None), chunks,
                         check=False).log for s in schemes}


def as_calibration(runs: list[dict], logs: dict) -> list[dict]:
    """The stored calibration runs with each scheme's work records as the current driver meters them
    (the counts are the data's; runs stored before the work kinds changed have the old kinds)."""
    out = []
    for rank_out in runs:
        rank = rank_out["rank"]
        fixed = []
        for run in rank_out["runs"]:
            log = logs.get(run["name"])
            if run["kind"] == "scheme" and log is not None:
                run = dict(run, work=[[w.stage, w.phase, w.kind, w.elements] for w in log.work if w.rank == rank])
            fixed.append(run)
        out.append(dict(rank_out, runs=fixed))
    return out


def worst(errors: list[float], rows: list[dict]) -> str:
    """The scheme of the largest error (errors in the order of `rows`, iterations one after the other)."""
    names = [r["name"] for it in sorted({r["iteration"] for r in rows}) for r in rows if r["iteration"] == it]
    return names[max(range(len(errors)), key=errors.__getitem__)]


def main() -> int:
    """Fit, rescale, re-simulate, compare (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="folder with validation.json and profile-*.runs.json.gz")
    ap.add_argument("--trace", required=True, help="the trace the validation ran on")
    ap.add_argument("--kernels", default=None, help="step-kernel measurements (default: measure now)")
    args = ap.parse_args()
    data = Path(args.data)
    result = json.loads((data / "validation.json").read_text())
    kernels = json.loads(Path(args.kernels).read_text()) if args.kernels else measure_steps()
    trace = Trace.open(args.trace)
    rows, summary = [], []
    cache: dict = {}
    for entry in result["profiles"]:
        n, rate = entry["ranks"], entry["rate_bps"]
        tag = f"{rate / 1e6:g}mbit-n{n}"
        stored = [r for r in result["rows"] if r["ranks"] == n and r["rate_bps"] == rate and "maxmin" in r]
        schemes = sorted({r["name"] for r in stored})
        calib = json.loads(gzip.decompress((data / f"profile-{tag}.runs.json.gz").read_bytes()))
        key = (n, result["calibration_iteration"])
        if key not in cache:
            cache[key] = logs_of(trace, key[1], n, schemes)
        work, scale = fit_work(as_calibration(calib, cache[key]), kernels)
        profile = parse_profile({**entry["profile"], **work, "exchange_cpu": fit_exchange(calib)},
                                f"{tag} with step-kernel work and exchange CPU")
        errs: dict[str, list[float]] = defaultdict(list)
        for it in sorted({r["iteration"] for r in stored}):
            if (n, it) not in cache:
                cache[n, it] = logs_of(trace, it, n, schemes)
            sims = sim_parts(cache[n, it], profile, ("maxmin",))
            for r in (r for r in stored if r["iteration"] == it):
                sim = sims[r["name"]]["maxmin"]
                new = (sim["time"] - r["emulated_s"]) / r["emulated_s"]
                comm = (sim["comm"] - r["emulated_comm_s"]) / r["emulated_comm_s"]
                for key, err in (("old", r["err_maxmin/elements"]), ("new", new), ("old comm", r["err_comm_maxmin"]),
                                 ("new comm", comm)):
                    errs[key].append(abs(err))
                rows.append([f"{rate / 1e6:g}", n, it, r["name"], r["emulated_s"] * 1e3, *(f"{100 * e:+.1f}%" for e in (
                    r["err_maxmin/elements"], new, r["err_comm_maxmin"], comm))])
        summary.append([f"{rate / 1e6:g}", n, f"{scale:.2f}", *(f"{100 * statistics.median(errs[k]):.1f}% / "
                                                                 f"{100 * max(errs[k]):.1f}% ({worst(errs[k], stored)})"
                                                                 for k in ("old", "new", "old comm", "new comm"))])
        print(f"done {tag}", file=sys.stderr, flush=True)
    print(format_table(rows, ["Mbit/s", "n", "it", "scheme", "emulated ms", "whole: stored max/el", "new max/el",
                              "comm: stored maxmin", "new max/el"]))
    print()
    print(format_table(summary, ["Mbit/s", "n", "work scale", "whole |err| median / max: stored max/el",
                                 "new max/el", "comm |err|: stored maxmin", "new max/el"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
