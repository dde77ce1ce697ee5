"""zensim_hook's work inside `run_ranks` outside the scheme's stages, per rank and bucket, measured in one
quiet process: every rank of a captured trace's world run in memory on one bucket of all its elements (torch
tensors, as the hook's), timed (`run_ranks(timed=True)`); the thread's CPU of the whole run minus the stages'
(pre, comm, post), divided by the ranks: the input and value-range checks, the message log and the results,
which the timeline prices as `zensim iteration --hook-run-s` (docs/ddp.md, issue 24). One thread.

    flock /tmp/zsim-bench.lock .venv/bin/python benchmarks/hook_run_overhead.py TRACE [--scheme zen]

Prints per trace iteration the run's CPU, the stages' CPU and the rest per rank (ms), and the median.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from zensim.run import Tables, run_ranks
from zensim.schemes import build_scheme
from zensim.sparse.chunk import SparseChunk
from zensim.trace.format import Trace


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--scheme", default="zen")
    p.add_argument("--iterations", type=int, default=15, help="trace iterations to run (cycling; default 15: "
                   "the first few run slower)")
    args = p.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    with Trace.open(args.trace) as trace:
        n, numel = trace.workers, trace.numel
        tables = Tables()
        program = build_scheme(args.scheme, n, numel, tables=tables, value_dtype="float32")
        rest = []
        for i in range(args.iterations):
            chunks = []
            for r in range(n):
                index = torch.from_numpy(trace.flat_indices(i % trace.iterations, r).astype(np.int64))  # sorted: a trace keeps ids sorted
                chunks.append(SparseChunk(index, torch.from_numpy(rng.standard_normal(len(index)).astype(np.float32))))
            c0 = time.thread_time()
            out = run_ranks(program, chunks, None, check=False, timed=True, tables=tables)
            total = time.thread_time() - c0
            stages = float(out.context.meter.cpu.sum())
            rest.append((total - stages) / n)
            print(f"iteration {i}: run {total * 1e3:.2f} ms CPU, stages {stages * 1e3:.2f} ms, "
                  f"outside them {rest[-1] * 1e3:.2f} ms a rank")
    print(f"{args.scheme}, {n} ranks, a bucket of {numel} elements: outside the stages {statistics.median(rest) * 1e3:.2f} "
          "ms a rank (median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
