"""Simulator speed: the whole pipeline (driver -> message log -> network model) per scheme and size.

Default (the 128-GPU table of docs/results.md): 128x1 and 16x8 (`--shapes`), the 15 distinct
schemes (or `--schemes`), fifo and maxmin (`--models`, or none: the driver alone). `--scale`: one GPU per
machine at each of `--ranks` (default 64,128,256,512,1024) for `--schemes` (default
zen,sparcml,agsparse-ring,dense-allreduce), each (size, scheme) in a process of its own so that its
peak memory is its own; prints wall and CPU seconds per part and the growth exponent of the driver
and of each scheme's total between successive sizes (log t2/t1 / log n2/n1). `--exact` also replays
maxmin with batch 0 (exact max-min) to give its cost and the fast mode's error against it: the
makespan's, and the worst (rank, stage) end's as a share of the makespan and of that stage end, checked
against the bound docs/simulator.md states (makespan within 0.5%, every stage end within 1%).
`--nic-latency` (scale mode) sets the NIC latency, e.g. 5us.

One iteration of a 10M-element trace at 1% density (synthetic, overlap 0.3, skew 4; written once to
a temporary directory, not timed). Peak memory: ru_maxrss of the process.

    .venv/bin/python benchmarks/simulate.py [--trace T] [--numel 10000000] [--density 0.01]
    .venv/bin/python benchmarks/simulate.py --scale [--ranks 64,128,256] [--schemes zen] [--exact] [--json F]
    .venv/bin/python benchmarks/simulate.py --scale --ranks 16 --gpus 8 --nic-latency 5us --models maxmin --exact
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from growth import exponents  # benchmarks/growth.py (this script's directory is on sys.path)
from zensim.layout import Prepared, place, prepare_trace
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.replay import replay
from zensim.net.topology import ClusterSpec
from zensim.net.units import parse_latency
from zensim.net.waterfill import waterfill
from zensim.run import Tables
from zensim.schemes import build_scheme
from zensim.sim.run import resolve_schemes
from zensim.trace.format import Trace
from zensim.trace.synth import SynthParams, synthesize


def peak_gib() -> float:
    """Peak resident memory of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def prepared(path: str, machines: int, gpus: int) -> tuple[Prepared, float]:
    """The chunks of every scheme instance on this shape, and the seconds it took (not counted)."""
    t0 = time.perf_counter()
    with Trace.open(path) as trace:
        prep = prepare_trace(trace, 0, machines, gpus, "zen")
    return prep, time.perf_counter() - t0


MAKESPAN_BOUND, STAGE_BOUND = 0.005, 0.01  # the fast maxmin mode against exact (docs/simulator.md)


def errors(fast, exact) -> dict:
    """The fast mode's error against exact max-min (two Timings of one log): the makespan's, relative; the
    worst (rank, stage) end's, as a share of the exact makespan and of that exact stage end."""
    gap = np.abs(fast.stage_end - exact.stage_end)
    return {"makespan_err": fast.makespan / exact.makespan - 1, "stage_err": float(gap.max()) / exact.makespan,
            "stage_err_own": float((gap / np.maximum(exact.stage_end, 1e-300)).max())}


def measure(prep: Prepared, load_s: float, name: str, models: list[str], exact: bool, latency: float = 0.0) -> dict:
    """Driver and replay seconds of one scheme on one cluster shape (this process); with `exact` and maxmin,
    the fast mode's errors against exact max-min."""
    machines, gpus = prep.machines, prep.gpus
    t1, c1 = time.perf_counter(), time.process_time()
    placed = place(prep, lambda n, size, part: build_scheme(name, n, size, tables=tables), tables := Tables())
    t2, c2 = time.perf_counter(), time.process_time()
    costs = Costs(ClusterSpec(machines, gpus, 25e9 / 8, nic_latency=latency))
    row = {"machines": machines, "gpus": gpus, "scheme": name, "messages": len(placed.log),
           "load_s": load_s, "driver_wall_s": t2 - t1, "driver_cpu_s": c2 - c1}
    runs = [(m, {}) for m in models] + ([("maxmin-exact", {"batch": 0})] if exact else [])
    waterfill(np.array([[0, 1]]), np.array([1.0, np.inf]))  # load the compiled solver before timing
    timings = {}
    for label, options in runs:
        start, cpu = time.perf_counter(), time.process_time()
        timing = timings[label] = replay(placed.log, costs, label.split("-")[0], options=options)
        seconds = time.perf_counter() - start
        row[label] = {"wall_s": seconds, "cpu_s": time.process_time() - cpu, "events": timing.events,
                      "makespan_s": timing.makespan}
    if exact and "maxmin" in timings:
        row["maxmin-exact"].update(errors(timings["maxmin"], timings["maxmin-exact"]))
    row["peak_gib"] = peak_gib()
    return row


def synth(path: Path, workers: int, numel: int, density: float) -> None:
    """The benchmark trace (not timed)."""
    t0 = time.perf_counter()
    synthesize(str(path), workers, [("bench", numel)], SynthParams(density=density, overlap=0.3, skew=4.0))
    print(f"trace: {workers} workers x {numel} elements at {density:.1%} written in "
          f"{time.perf_counter() - t0:.1f} s (not timed)", file=sys.stderr)


def table(path: str, models: list[str], shapes: list[tuple[int, int]], names: list[str]) -> None:
    """The schemes (default: the 15 distinct) on each cluster shape (machines, GPUs per machine)."""
    totals = {"driver": 0.0, **{m: 0.0 for m in models}}
    events = {m: 0 for m in models}
    print(f"{'cluster':8} {'scheme':34} {'driver s':>8} " + " ".join(f"{m + ' s':>9}" for m in models) + f" {'messages':>9}")
    for machines, gpus in shapes:
        prep, load_s = prepared(path, machines, gpus)
        print(f"{machines}x{gpus}: trace read and layout prepared in {load_s:.1f} s (not counted)", flush=True)
        for name in names:
            row = measure(prep, load_s, name, models, exact=False)
            totals["driver"] += row["driver_wall_s"]
            for m in models:
                totals[m] += row[m]["wall_s"]
                events[m] += row[m]["events"]
            print(f"{machines}x{gpus:<5} {name:34} {row['driver_wall_s']:8.2f} "
                  + " ".join(f"{row[m]['wall_s']:9.2f}" for m in models) + f" {row['messages']:9d}", flush=True)
    print(f"total {sum(totals.values()):.1f} s: " + ", ".join(f"{k} {v:.1f} s" for k, v in totals.items()))
    for m in models:
        print(f"{m}: {events[m]} events, {events[m] / max(totals[m], 1e-9):,.0f} events/s")
    print(f"peak memory (ru_maxrss): {peak_gib():.2f} GiB")


def scale(args: argparse.Namespace, path: str) -> None:
    """One process per (size, scheme); a table and growth exponents."""
    rows = []
    for n in args.ranks:
        for name in args.schemes:
            cmd = [sys.executable, __file__, "--one",
                   json.dumps([path, n, args.gpus, name, args.models, args.exact, args.nic_latency])]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode:
                print(f"{n} {name}: failed: {out.stderr.strip().splitlines()[-1:]}", flush=True)
                continue
            row = json.loads(out.stdout)
            rows.append(row)
            parts = " ".join(f"{m} {row[m]['wall_s']:7.2f} s (cpu {row[m]['cpu_s']:.2f} s, "
                             f"{row[m]['events'] / row[m]['wall_s']:,.0f} ev/s)"
                             for m in [*args.models, *(["maxmin-exact"] if args.exact else [])])
            print(f"n={n * args.gpus:5} {name:16} msgs {row['messages']:8d} driver {row['driver_wall_s']:7.2f} s "
                  f"(cpu {row['driver_cpu_s']:.2f} s) {parts} peak {row['peak_gib']:.2f} GiB", flush=True)
            if "makespan_err" in row.get("maxmin-exact", {}):
                err = row["maxmin-exact"]
                within = abs(err["makespan_err"]) <= MAKESPAN_BOUND and err["stage_err"] <= STAGE_BOUND
                print(f"  maxmin against exact: makespan {err['makespan_err']:+.4%}, worst stage end "
                      f"{err['stage_err']:.4%} of the makespan ({err['stage_err_own']:.4%} of its own time): "
                      f"{'within' if within else 'OUTSIDE'} the bound ({MAKESPAN_BOUND:.1%}, {STAGE_BOUND:.0%})",
                      flush=True)
    print("\ngrowth exponent of the driver alone and of driver + replay between successive sizes, per model:")
    for name in args.schemes:
        mine = [r for r in rows if r["scheme"] == name]
        for m in ["driver", *args.models]:  # the driver alone, then driver + each model's replay
            for clock, part in (("wall", "wall_s"), ("cpu", "cpu_s")):
                total = [(r["machines"] * r["gpus"], r[f"driver_{part}"] + (r[m][part] if m in r else 0.0))
                         for r in mine]
                print(f"  {name:16} {m:7} {clock:4} " + " ".join(f"{n}:{t:.1f}s" for n, t in total)
                      + "  exponents " + exponents(total))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


def main() -> None:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=None)
    ap.add_argument("--numel", type=int, default=10_000_000)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--models", default=",".join(MODELS), help="replay models, or none (the driver alone)")
    ap.add_argument("--shapes", default="128x1,16x8", help="table mode: cluster shapes MACHINESxGPUS")
    ap.add_argument("--scale", action="store_true")
    ap.add_argument("--ranks", default="64,128,256,512,1024")
    ap.add_argument("--gpus", type=int, default=1, help="--scale: GPUs per machine (machines = ranks)")
    ap.add_argument("--schemes", default=None, help="default: zen,sparcml,agsparse-ring,dense-allreduce with "
                    "--scale, else distinct")
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--nic-latency", type=parse_latency, default=0.0, help="--scale: NIC latency, e.g. 5us")
    ap.add_argument("--json", default=None)
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        path, n, gpus, name, models, exact, latency = json.loads(args.one)
        print(json.dumps(measure(*prepared(path, n, gpus), name, models, exact, latency)))
        return
    args.models = [] if args.models == "none" else args.models.split(",")
    args.ranks = [int(x) for x in args.ranks.split(",")]
    args.schemes = resolve_schemes(args.schemes or ("zen,sparcml,agsparse-ring,dense-allreduce" if args.scale
                                                    else "distinct"))
    shapes = [tuple(int(x) for x in shape.split("x")) for shape in args.shapes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        path = args.trace
        if path is None:
            path = str(Path(tmp) / "bench.zt")
            synth(Path(path), max(args.ranks) * args.gpus if args.scale else max(m * g for m, g in shapes),
                  args.numel, args.density)
        if args.scale:
            scale(args, path)
        else:
            table(path, args.models, shapes, args.schemes)


if __name__ == "__main__":
    main()
