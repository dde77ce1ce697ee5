"""Benchmark the iteration timeline: a 100-tensor model at 16 x 8 GPUs, 10 iterations (target <= 30 s).

The model: a transformer-like layer profile of 100 parameter tensors (an embedding table of
--embedding elements, then 11 blocks of 9 tensors, ~--params elements in all), V100-like compute
(`--compute-ms` per step spread over the tensors by size), DDP's 25 MiB buckets. The sparse tensor
is the embedding, from a synthetic trace of 128 workers at 1% density (zensim.trace.synth, written
to a temporary file). Timed per (scheme, model): the whole `simulate_iteration` call (logs, the
timeline and the figures; dense DDP for the dense-allreduce row) in wall and CPU seconds, events
simulated, and the peak RSS. Dense buckets take the dense all-reduce fastest for their size (zensim.train.tuner);
`--dense-algorithms auto,ring` times the choice against the ring forced, back to back.

    .venv/bin/python benchmarks/iteration.py [--iterations 10] [--machines 16] [--gpus 8]
        [--schemes dense-allreduce,zen] [--models fifo,maxmin] [--dense-algorithms auto] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from zensim.memo import Memo
from zensim.net.costs import Costs
from zensim.net.topology import ClusterSpec
from zensim.report.table import format_table
from zensim.trace.synth import SynthParams, synthesize
from zensim.train.iteration import simulate_iteration
from zensim.train.layers import LayerProfile, ParamTime

TARGET_S = 30.0


def model_profile(params: int, embedding: int, compute_ms: float) -> LayerProfile:
    """100 tensors: per block (ready first from the last block) two LayerNorms' weight and bias, the
    attention's in/out projections and the MLP's two matrices and a bias; the embedding ready last."""
    blocks, dim = 11, int(np.sqrt((params - embedding) / (12 * 11)))
    shapes = []
    for b in reversed(range(blocks)):
        shapes += [(f"blocks.{b}.mlp.2.bias", dim), (f"blocks.{b}.mlp.2.weight", 4 * dim * dim),
                   (f"blocks.{b}.mlp.0.weight", 4 * dim * dim), (f"blocks.{b}.ln2.weight", dim),
                   (f"blocks.{b}.ln2.bias", dim), (f"blocks.{b}.attn.out.weight", dim * dim),
                   (f"blocks.{b}.attn.in.weight", 3 * dim * dim), (f"blocks.{b}.ln1.weight", dim),
                   (f"blocks.{b}.ln1.bias", dim)]
    shapes.append(("embedding.weight", embedding))
    total = sum(n for _, n in shapes)
    backward = 2 / 3 * compute_ms * 1e-3
    ps = tuple(ParamTime(name, n, len(shapes) - 1 - i, 0.0, backward * n / total) for i, (name, n) in enumerate(shapes))
    return LayerProfile(ps, forward_s=compute_ms * 1e-3 / 3 * 0.9, optimizer_s=compute_ms * 1e-3 / 30, batch_size=32,
                        workload="bench-100", kind="estimate", device="synthetic V100-like")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--machines", type=int, default=16)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--params", type=int, default=100_000_000)
    p.add_argument("--embedding", type=int, default=10_000_000)
    p.add_argument("--compute-ms", type=float, default=150.0)
    p.add_argument("--schemes", default="dense-allreduce,zen")
    p.add_argument("--models", default="fifo,maxmin")
    p.add_argument("--dense-algorithms", default="auto", help="comma-separated: auto, ring, doubling (default auto)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    prof = model_profile(args.params, args.embedding, args.compute_ms)
    assert len(prof.params) == 100
    costs = Costs(ClusterSpec.parse(args.machines, args.gpus, "25Gbps"))
    rows, out = [], []
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "embedding.zt"
        start = time.perf_counter()
        synthesize(trace, args.machines * args.gpus, [("embedding.weight", args.embedding)],
                   SynthParams(density=0.01, overlap=0.3, skew=4), iterations=2, seed=0, batch_size=32)
        synth_s = time.perf_counter() - start
        total = 0.0
        dense_times: Memo[dict[str, float]] = Memo()  # the dense algorithms' times alone, timed once for every run
        for model, scheme, dense in itertools.product(args.models.split(","), args.schemes.split(","),
                                                      args.dense_algorithms.split(",")):
            start, cpu0 = time.perf_counter(), time.process_time()
            rec = simulate_iteration(prof, scheme, costs, trace=trace, model=model, iterations=args.iterations,
                                     dense_baseline=False, dense_algorithm=dense, dense_times=dense_times)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
            total += wall
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            rows.append([scheme, model, dense, len(rec.buckets), rec.iteration_s * 1e3, rec.events, wall, cpu, rss])
            out.append({"scheme": scheme, "model": model, "dense_algorithm": dense, "buckets": len(rec.buckets),
                        "iteration_ms": rec.iteration_s * 1e3, "events": rec.events, "wall_s": wall,
                        "cpu_s": cpu, "peak_rss_mb": rss})
    if args.json:
        print(json.dumps({"runs": out, "synth_s": synth_s, "total_s": total}, indent=1))
        return 0
    print(f"{args.machines}x{args.gpus} GPUs, {len(prof.params)} tensors, {prof.numel / 1e6:.0f}M elements, "
          f"{args.iterations} iterations; synthetic trace made in {synth_s:.1f} s (not counted)")
    print(format_table(rows, ["scheme", "model", "dense", "buckets", "iteration ms", "events", "wall s", "CPU s",
                              "peak RSS MB"]))
    print(f"total {total:.1f} s wall; target <= {TARGET_S:.0f} s per (scheme, model), CPU time: "
          + ", ".join(f"{r[0]}/{r[1]}/{r[2]} {'met' if r[7] <= TARGET_S else 'MISSED'}" for r in rows))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine: wall time includes "
          "the other jobs' share, CPU time does not)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
