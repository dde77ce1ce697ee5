"""Ok-Topk per iteration at 14 workers: elements kept against k, and the bytes the most loaded rank
and the mean rank receive in each phase (reduce, balance, all-gather), on the synthetic gradients of
benchmarks/replay.py. Simulated bytes: deterministic, independent of the machine's load.

Usage: .venv/bin/python benchmarks/oktopk_phases.py [--method oktopk+topk] [--numel N] [--iterations N] [--options JSON]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from replay import matched_scale
from zensim.replay import make_methods
from zensim.report.table import format_table
from zensim.trace.gradients import SyntheticGradients

PHASES = ("reduce", "balance", "gather")


def main() -> None:
    """Print one row per iteration (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", default="oktopk", help="oktopk (its local threshold re-use) or oktopk+SPARSIFIER")
    parser.add_argument("--workers", type=int, default=14)
    parser.add_argument("--numel", type=int, default=10_000_000)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--options", default="{}", help="oktopk options as JSON, e.g. '{\"repartition\": 1}'")
    args = parser.parse_args()
    n, numel = args.workers, args.numel
    source = SyntheticGradients(n, args.iterations, numel, seed=1, scale=matched_scale(args.density, numel))
    method, = make_methods(args.method, None, args.density, n, numel, 0, json.loads(args.options), default=[])
    method.check = False
    rows = []
    for it in range(args.iterations):
        step = method.step([source.gradient(it, w) for w in range(n)])
        cols = step.run.log.arrays()
        phase = np.array([method.program.phase(int(s))[0] for s in cols["stage"]])
        row = [it, step.run.context.stats["kept"] / method.program.k]
        for name in PHASES:
            mine = phase == name
            received = np.bincount(cols["dst"][mine], weights=cols["nbytes"][mine], minlength=n)
            row += [int(received.max()), received.max() / max(received.mean(), 1.0)]
        rows.append(row)
    print(f"{method.label}: {n} workers, {numel:,} elements, density {args.density}, options {args.options}")
    print(format_table(rows, ["iteration", "kept / k"] + [f"{p} {w}" for p in PHASES for w in ("max B", "max/mean")]))


if __name__ == "__main__":
    main()
