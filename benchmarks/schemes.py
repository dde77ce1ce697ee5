"""Benchmark the in-memory driver: every distinct scheme at n = 128 on one 10M-element 1% iteration.

Default: 128 workers x 100k indices of a 10M-element tensor (zensim.trace.synth in memory:
density 1%, pairwise overlap 0.3, skewness s^8 = 4), indices-only (bitset pieces), results
checked against the union. What one process would share between schemes is computed once first
(the expected union, ZEN's hash domains). Each scheme then runs in a forked child, so its peak
RSS is its own (the child starts from the parent's resident data, printed as the baseline). Prints per scheme the
build time (plans, hash domains), the run time (stages + check), CPU time, bytes sent and peak
RSS, and the total against the 30 s target. Wall time is noisy on a shared machine; the CPU time of the
child (user + system) is less so.

    .venv/bin/python benchmarks/schemes.py [--n 128] [--numel 10000000] [--density 0.01]
        [--overlap 0.3] [--skew 4] [--schemes a,b,...] [--presets] [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import time

import numpy as np

from zensim.report.table import format_table
from zensim.run import Tables, expected_sum, run_ranks
from zensim.schemes import CATALOG, DISTINCT, build_scheme
from zensim.sparse.chunk import SparseChunk
from zensim.trace.synth import SynthParams, layout, worker_sets

TARGET_S = 30.0


def peak_rss_mb() -> float:
    """Peak resident set size of this process, MB (Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_one(name: str, n: int, numel: int, chunks: list[SparseChunk], tables: Tables, queue: mp.Queue) -> None:
    """Child: build and run one scheme, report its figures."""
    t0, c0 = time.perf_counter(), time.process_time()
    prog = build_scheme(name, n, numel, tables=tables)
    t1 = time.perf_counter()
    res = run_ranks(prog, chunks, check=True, tables=tables)
    t2 = time.perf_counter()
    queue.put({"scheme": name, "stages": prog.num_stages, "build_s": t1 - t0, "run_s": t2 - t1,
               "total_s": t2 - t0, "cpu_s": time.process_time() - c0, "messages": len(res.log),
               "gbytes": int(res.log.nbytes.sum()) / 1e9, "peak_rss_mb": peak_rss_mb()})


def main() -> None:
    """Parse arguments, generate the iteration, run every scheme in its own child, print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--numel", type=int, default=10_000_000)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--overlap", type=float, default=0.3)
    ap.add_argument("--skew", type=float, default=4.0)
    ap.add_argument("--schemes", help="comma-separated names (default: the 15 distinct schemes)")
    ap.add_argument("--presets", action="store_true", help="also run every preset (not counted in the total)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    t0 = time.perf_counter()
    lay = layout(args.numel, SynthParams(args.density, args.overlap, args.skew))
    chunks = [SparseChunk(s.astype(np.int64)) for s in worker_sets(lay, args.n, (0, 0, 0))]
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tables = Tables()  # what one process shares between schemes: the check's expected sum, ZEN's 𝕀_j
    expected_sum(chunks, args.numel, tables)
    build_scheme("zen", args.n, args.numel, tables=tables)
    shared_s = time.perf_counter() - t0
    baseline = peak_rss_mb()
    names = args.schemes.split(",") if args.schemes else [p.name for p in DISTINCT]
    extra = [p for p in CATALOG if args.presets and p not in names and not CATALOG[p].needs_profile]
    ctx = mp.get_context("fork")
    rows = []
    for name in names + extra:
        queue = ctx.Queue()
        child = ctx.Process(target=run_one, args=(name, args.n, args.numel, chunks, tables, queue))
        child.start()
        row = queue.get()
        child.join()
        row["counted"] = name in names
        rows.append(row)
        if not args.json:
            print(f"{name:34s} {row['total_s']:7.2f} s  cpu {row['cpu_s']:7.2f} s  peak {row['peak_rss_mb']:7.0f} MB",
                  flush=True)
    total = sum(r["total_s"] for r in rows if r["counted"])
    cpu = sum(r["cpu_s"] for r in rows if r["counted"])
    summary = {"n": args.n, "numel": args.numel, "nnz_per_worker": chunks[0].nnz, "generate_s": gen_s,
               "shared_setup_s": shared_s,
               "baseline_rss_mb": baseline, "total_s": total, "cpu_s": cpu, "target_s": TARGET_S, "schemes": rows}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    cols = ["scheme", "stages", "messages", "gbytes", "build_s", "run_s", "total_s", "cpu_s", "peak_rss_mb"]
    print(format_table([[r[c] for c in cols] for r in rows], cols))
    print(f"n = {args.n}, {args.numel} elements, {chunks[0].nnz} indices per worker (generated in {gen_s:.1f} s); "
          f"baseline RSS {baseline:.0f} MB")
    print(f"shared set-up before the schemes (expected union for the checks, hash domains): {shared_s:.1f} s")
    print(f"total over {len(names)} schemes + set-up: {total + shared_s:.1f} s wall, {cpu:.1f} s CPU of the children "
          f"(target <= {TARGET_S:.0f} s on 2 cores; wall time grows with the machine's load)")


if __name__ == "__main__":
    main()
