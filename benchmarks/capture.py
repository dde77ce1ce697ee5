"""Capture speed: iterations per second of each built-in workload at 16 and 128 virtual workers.

Times the virtual-worker steps (every worker's forward/backward and selection, then the averaged
optimizer step) over a few iterations, after building the workload and one untimed step; trace
writing is not included (small next to the steps). Language models need the KJV corpus (apt-get install bible-kjv bible-kjv-text) or
--corpus FILE. Figures depend on the machine and its load: report them with both.

    .venv/bin/python benchmarks/capture.py [--workers 16 128] [--iterations 2] [--json]

--json prints the figures with the machine, the load average before and after, the commit and the time
(docs/capture.md's speed table is rendered by benchmarks/doc_tables.py from the committed
docs/capture-data/speed.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

from run_record import host
from zensim.report.table import format_table
from zensim.trace.capture.run import step_batches, virtual_runner
from zensim.trace.capture.names import WORKLOADS
from zensim.trace.capture.workloads import make_workload


def measure(name: str, workers: int, iterations: int, corpus: str | None) -> dict[str, object]:
    """Seconds per synchronous step of `workers` virtual workers, after one untimed step."""
    workload = make_workload(name, None, 0, corpus)
    runner = virtual_runner(workload, workers, None, None)
    runner.step(step_batches(workload, 0, workers))  # first-call costs (lazy imports, allocations)
    start = time.perf_counter()
    for step in range(1, iterations + 1):
        runner.step(step_batches(workload, step, workers))
    seconds = time.perf_counter() - start
    return {"workload": name, "workers": workers, "iterations": iterations, "seconds": seconds,
            "it_per_s": iterations / seconds, "worker_steps_per_s": iterations * workers / seconds}


def main() -> int:
    """Print the table (or JSON) of capture speeds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    parser.add_argument("--workers", nargs="+", type=int, default=[16, 128])
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--corpus")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    start = host()
    rows = [measure(w, n, args.iterations, args.corpus) for w in args.workloads for n in args.workers]
    if args.json:
        json.dump({"host": start, "load_after": os.getloadavg(), "torch_threads": torch.get_num_threads(),
                   "results": rows}, sys.stdout, indent=2)
        print()
        return 0
    print(f"capture speed, torch threads {torch.get_num_threads()}, {os.cpu_count()} cpus")
    keys = ["workload", "workers", "iterations", "seconds", "it_per_s", "worker_steps_per_s"]
    print(format_table([[r[k] for k in keys] for r in rows], keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
