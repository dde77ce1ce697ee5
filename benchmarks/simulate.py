"""Simulator speed at 128 GPUs: 128x1 and 16x8, the 15 distinct schemes, fifo and maxmin.

One iteration of a 10M-element trace at 1% density (synthetic, written to a temporary directory
unless --trace is given). Prints driver time (stage programs producing the message logs), replay
time per model, events per second, and peak memory (ru_maxrss). Target: <= 60 s total, <= 4 GiB.

    .venv/bin/python benchmarks/simulate.py [--trace T] [--numel 10000000] [--density 0.01]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from zensim.net.costs import Costs
from zensim.net.replay import replay
from zensim.net.topology import ClusterSpec
from zensim.schemes import build_scheme
from zensim.sim.layout import place, prepare
from zensim.sim.run import GROUPS, load_chunks
from zensim.trace.format import Trace
from zensim.trace.synth import SynthParams, synthesize


def main() -> None:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=None)
    ap.add_argument("--numel", type=int, default=10_000_000)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--maxmin-batch", type=float, default=1 / 64)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.trace
        if path is None:
            path = str(Path(tmp) / "bench.zt")
            t0 = time.perf_counter()
            synthesize(path, 128, [("bench", args.numel)], SynthParams(density=args.density, overlap=0.3, skew=4.0))
            print(f"trace: 128 workers x {args.numel} elements at {args.density:.1%} written in "
                  f"{time.perf_counter() - t0:.1f} s (not counted)")
        with Trace.open(path) as trace:
            chunks, numel = load_chunks(trace, 0, 128), trace.numel
        totals = {"driver": 0.0, "fifo": 0.0, "maxmin": 0.0}
        events = {"fifo": 0, "maxmin": 0}
        print(f"{'cluster':8} {'scheme':34} {'driver s':>8} {'fifo s':>7} {'maxmin s':>8} {'fifo ms':>8} {'maxmin ms':>9} {'messages':>8}")
        for machines, gpus in ((128, 1), (16, 8)):
            costs = Costs(ClusterSpec(machines, gpus, 25e9 / 8))
            t0 = time.perf_counter()
            prep = prepare(chunks, numel, machines, gpus, "zen")
            totals["driver"] += time.perf_counter() - t0
            for name in GROUPS["distinct"]:
                t0 = time.perf_counter()
                placed = place(prep, lambda n, size, part, name=name: build_scheme(name, n, size))
                t1 = time.perf_counter()
                totals["driver"] += t1 - t0
                row = []
                for model in ("fifo", "maxmin"):
                    start = time.perf_counter()
                    timing = replay(placed.log, costs, model, options={"batch": args.maxmin_batch})
                    totals[model] += time.perf_counter() - start
                    events[model] += timing.events
                    row.append((time.perf_counter() - start, timing.makespan))
                print(f"{machines}x{gpus:<5} {name:34} {t1 - t0:8.2f} {row[0][0]:7.2f} {row[1][0]:8.2f} "
                      f"{row[0][1] * 1e3:8.3f} {row[1][1] * 1e3:9.3f} {len(placed.log):8d}")
    total = sum(totals.values())
    print(f"total {total:.1f} s: driver {totals['driver']:.1f} s, fifo {totals['fifo']:.1f} s, maxmin {totals['maxmin']:.1f} s")
    for model in ("fifo", "maxmin"):
        print(f"{model}: {events[model]} events, {events[model] / max(totals[model], 1e-9):,.0f} events/s")
    print(f"peak memory (ru_maxrss): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
