"""Trace I/O figures: file size per index, write time, one-chunk read time, full statistics time.

Default: 128 workers x 10M elements x 1% density x 2 iterations (targets: <= 3 bytes/index,
statistics <= 10 s on 2 cores). Usage: .venv/bin/python benchmarks/trace_io.py [--workers N ...]
[--json FILE] (the figures, the arguments and the load average before and after, as JSON: docs/trace-stats.md's
table is rendered from the committed docs/trace-io.json by benchmarks/doc_tables.py)
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np

from zensim.report.table import format_table
from zensim.trace import TensorSpec, Trace, TraceWriter
from zensim.trace.stats import trace_stats
from zensim.trace.synth import SynthParams, layout, worker_sets


def main() -> None:
    """Generate index sets in memory, then time writing, reading one chunk and the statistics."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=128)
    parser.add_argument("--numel", type=int, default=10_000_000)
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--overlap", type=float, default=0.3)
    parser.add_argument("--skew", type=float, default=2.0)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--values", choices=("none", "float32", "float16"), default="none")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    load_before = os.getloadavg()
    value_dtype = None if args.values == "none" else args.values
    lay = layout(args.numel, SynthParams(args.density, args.overlap, args.skew))

    t0 = time.perf_counter()
    sets = {it: list(worker_sets(lay, args.workers, (0, it, 0))) for it in range(args.iterations)}
    rows = [["generate index sets (not part of the format)", time.perf_counter() - t0, "s"]]
    values = np.random.default_rng(0).standard_normal(lay.nnz).astype(np.float32) if value_dtype else None

    with tempfile.TemporaryDirectory(dir=".") as tmp:
        path = os.path.join(tmp, "bench.zt")
        t0 = time.perf_counter()
        with TraceWriter(path, [TensorSpec("g", args.numel)], args.workers, args.iterations, value_dtype) as w:
            for it, per_worker in sets.items():
                for worker, idx in enumerate(per_worker):
                    w.write(it, worker, 0, idx, values)
        rows.append(["write (encode + write + fsync + rename)", time.perf_counter() - t0, "s"])
        total = sum(len(idx) for per_worker in sets.values() for idx in per_worker)
        size = os.path.getsize(path)
        rows += [["file size", size, "bytes"], ["indices", total, ""], ["bytes per index (whole file)", size / total, "B"]]

        t0 = time.perf_counter()
        trace = Trace.open(path)
        rows.append(["open (header + chunk table)", time.perf_counter() - t0, "s"])
        reads = []
        for worker in range(0, args.workers, max(1, args.workers // 16)):
            t0 = time.perf_counter()
            trace.read(args.iterations - 1, worker)
            reads.append(time.perf_counter() - t0)
        rows.append([f"read one (iteration, worker): median of {len(reads)}", float(np.median(reads)), "s"])

        t0 = time.perf_counter()
        stats = trace_stats(trace)
        rows.append(["full statistics (trace_stats)", time.perf_counter() - t0, "s"])
        trace.close()
    print(f"{args.workers} workers x {args.numel} elements x density {args.density} x {args.iterations} iterations, "
          f"values {args.values}; measured gamma^n = {stats['densification'][-1]['mean']:.4g}, "
          f"overlap = {stats['overlap']['mean']:.4g}, s^8 = {stats['skewness'][2]['mean']:.4g}")
    print(format_table(rows, ["figure", "value", "unit"]))
    if args.json:
        from zensim.atomic import write_atomic

        write_atomic(args.json, json.dumps({"args": vars(args), "figures": {r[0]: r[1] for r in rows},
                                            "load_before": load_before, "load_after": os.getloadavg()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
