"""Capture speed: iterations per second of each built-in workload at 16 and 128 virtual workers.

Times `zensim.trace.capture.capture` (forward/backward of every worker, selection, the averaged
step, trace writing) over a few iterations, after building the workload (model and data, not
timed). Language models need the KJV corpus (apt-get install bible-kjv bible-kjv-text) or
--corpus FILE. Figures depend on the machine and its load: report them with both.

    .venv/bin/python benchmarks/capture.py [--workers 16 128] [--iterations 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import torch

from zensim.report.table import format_table
from zensim.trace.capture import capture
from zensim.trace.capture.names import WORKLOADS
from zensim.trace.capture.workloads import make_workload


def measure(name: str, workers: int, iterations: int, corpus: str | None) -> dict[str, object]:
    """One timed capture of `iterations` recorded steps."""
    workload = make_workload(name, None, 0, corpus)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.zt")
        start = time.perf_counter()
        capture(workload, path, workers, iterations, progress=False)
        seconds = time.perf_counter() - start
        size = os.path.getsize(path)
    return {"workload": name, "workers": workers, "iterations": iterations, "seconds": seconds,
            "it_per_s": iterations / seconds, "worker_steps_per_s": iterations * workers / seconds,
            "trace_bytes_per_it": size / iterations}


def main() -> int:
    """Print the table (or JSON) of capture speeds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    parser.add_argument("--workers", nargs="+", type=int, default=[16, 128])
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--corpus")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(w, n, args.iterations, args.corpus) for w in args.workloads for n in args.workers]
    if args.json:
        json.dump({"torch_threads": torch.get_num_threads(), "results": rows}, sys.stdout, indent=2)
        print()
        return 0
    print(f"capture speed, torch threads {torch.get_num_threads()}, {os.cpu_count()} cpus")
    keys = ["workload", "workers", "iterations", "seconds", "it_per_s", "worker_steps_per_s", "trace_bytes_per_it"]
    print(format_table([[r[k] for k in keys] for r in rows], keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
