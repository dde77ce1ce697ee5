"""Replay-over-iterations figures: wall time of SparDL and ExDyna (with their sparsifiers, state
carried) on 100 iterations of 10M-element dense gradients at 16 workers (target <= 60 s each on
2 cores), and with --compare the simulated communication time of SparDL, TopkA, TopkDSA, gTop-k and
Ok-Topk at 14 workers next to the ratios SparDL's paper reports (`--since N` summarizes iterations N
onwards: Ok-Topk's second exact threshold at iteration 32 is its steady state).

The gradients are zensim.trace.gradients.SyntheticGradients (a 10M x 16 x 100 dense trace would
be 32 GB in float16), scaled so that ExDyna's starting threshold selects about the user's density;
their set-up (drawing the vectors once) is reported apart. The conservation
check (float64 totals, n x numel per iteration) is off here; tests run it on every iteration.

Prints the load averages before and after, and the peak resident memory of the process (gradients,
residuals and the replay together).

Usage: flock /tmp/zsim-bench.lock .venv/bin/python benchmarks/replay.py [--compare] [--schemes S] [--numel N ...] [--options JSON]
    [--json FILE]

--json FILE also writes the run's settings, the summary rows, the timings and the machine, commit and time
(docs/replay.md's comparison and speed tables are rendered by benchmarks/doc_tables.py from the committed
docs/replay-compare/*.json and docs/replay-speed/*.json).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import time

import numpy as np

from run_record import host
from zensim.atomic import write_atomic
from zensim.net.costs import Costs
from zensim.net.topology import ClusterSpec
from zensim.replay import make_methods, replay_iterations, summarize
from zensim.report.table import format_table
from zensim.trace.gradients import SyntheticGradients

# SparDL's Fig. 8, 14 workers, communication cost: SparDL's speed-up over TopkA and TopkDSA per case
PAPER_TOPKA = {"VGG-19 CIFAR-100": 5.1, "VGG-11 House": 4.7, "LSTM-IMDB": 3.8, "LSTM-PTB": 4.5}
PAPER_TOPKDSA = {"VGG-19 CIFAR-100": 6.4, "VGG-11 House": 5.6, "LSTM-IMDB": 2.7, "LSTM-PTB": 5.0}
PAPER_OKTOPK = {"VGG-19 CIFAR-100": 1.6, "VGG-11 House": 2.2, "LSTM-IMDB": 1.8, "LSTM-PTB": 2.3}


def matched_scale(density: float, numel: int) -> float:
    """The synthetic gradients' scale at which 1% of the elements reach ExDyna's starting threshold
    1 / (2 sqrt(k)): the authors' threshold assumes gradients of that size, and with another scale
    it needs hundreds of iterations (0.5% a step) before selecting about k."""
    sample = SyntheticGradients(1, 1, 1 << 18, seed=2, scale=1.0).gradient(0, 0)
    return 1.0 / (2.0 * math.sqrt(max(1, int(density * numel)))) / float(np.quantile(np.abs(sample), 1 - density))


def run(schemes: str, workers: int, numel: int, iterations: int, density: float, nic: str,
        latency: str, options: dict | None = None,
        since: int = 0) -> tuple[list[dict], dict[str, tuple[float, float]], float]:
    """Replay every method alone on the same gradients; (summary rows of iterations `since` onwards,
    (wall, CPU) seconds per method (CPU: every thread of the process), set-up s)."""
    start = time.perf_counter()
    source = SyntheticGradients(workers, iterations, numel, seed=1, scale=matched_scale(density, numel))
    setup = time.perf_counter() - start
    costs = Costs(ClusterSpec.parse(workers, 1, nic, nic_latency=latency))
    rows, walls = [], {}
    for method in make_methods(schemes, None, density, workers, numel, 0, options or {}, default=[]):
        method.check = False
        start, cpu = time.perf_counter(), time.process_time()
        records = replay_iterations(source, [method], 0, iterations, costs, check=False)
        walls[method.label] = (time.perf_counter() - start, time.process_time() - cpu)
        rows += summarize([r for r in records if r.iteration >= since])
    return rows, walls, setup


def main() -> None:
    """Print the figures (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", action="store_true",
                        help="SparDL vs TopkA, TopkDSA, gTop-k and Ok-Topk at 14 workers")
    parser.add_argument("--schemes", default=None, help="SCHEME[+SPARSIFIER] items (default spardl,exdyna; "
                        "with --compare spardl,topka,topkdsa,gtopk,oktopk)")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--numel", type=int, default=10_000_000)
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--nic", default="10Gbps")
    parser.add_argument("--latency", default="20us")
    parser.add_argument("--since", type=int, default=0, help="summarize iterations from this one on")
    parser.add_argument("--options", default="{}", help="scheme options as JSON, e.g. '{\"teams\": 7}' (SparDL's B-SAG)")
    parser.add_argument("--json", default=None, metavar="FILE",
                        help="also write the settings, summary rows and timings as JSON to FILE")
    args = parser.parse_args()
    if args.compare:
        schemes = args.schemes or "spardl,topka,topkdsa,gtopk,oktopk"
        workers, iterations = args.workers or 14, args.iterations or 5
    else:
        schemes, workers, iterations = args.schemes or "spardl,exdyna", args.workers or 16, args.iterations or 100
    start = host()
    load = start["load"]
    rows, walls, setup = run(schemes, workers, args.numel, iterations, args.density, args.nic, args.latency,
                             json.loads(args.options), args.since)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(f"load average (1, 5, 15 min) before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, after "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f"; peak resident memory of the process {peak:.2f} GiB")
    print(f"machine: {os.cpu_count()} cores (shared); {workers} workers, {args.numel:,} elements, {iterations} "
          f"iterations (summarized from {args.since}), density {args.density}, {args.nic} NICs, "
          f"{args.latency} latency, options {args.options}; gradient set-up {setup:.1f} s")
    table = [[r["method"], *walls[r["method"]], walls[r["method"]][0] / iterations, r["time_s_mean"], r["bytes_mean"],
              r["actual_density_mean"], r["padding_mean"]] for r in rows]
    if args.json:
        write_atomic(args.json, json.dumps({
            "settings": {"schemes": schemes, "workers": workers, "numel": args.numel, "iterations": iterations,
                         "since": args.since, "density": args.density, "nic": args.nic, "latency": args.latency,
                         "options": json.loads(args.options)},
            "host": start, "rows": rows, "replay_wall_cpu_s": walls, "setup_s": setup, "load_before": load,
            "load_after": os.getloadavg(), "peak_rss_gib": peak}, indent=1, default=float) + "\n")
    print(format_table(table, ["method", "replay wall s", "replay CPU s", "wall s / it", "simulated s / it",
                               "bytes / it", "d' mean", "f(t) mean"]))
    if args.compare:
        spardl = next(r["time_s_mean"] for r in rows if r["method"] == "spardl")
        print(format_table([[r["method"], r["time_s_mean"] / spardl] for r in rows],
                           ["method", "simulated comm time / SparDL's"]))
        print("SparDL's paper (Fig. 8, 14 workers, Ethernet): SparDL faster than TopkA by "
              + ", ".join(f"{v}x ({k})" for k, v in PAPER_TOPKA.items()) + "; than TopkDSA by "
              + ", ".join(f"{v}x ({k})" for k, v in PAPER_TOPKDSA.items()) + "; than Ok-Topk by "
              + ", ".join(f"{v}x ({k})" for k, v in PAPER_OKTOPK.items()))


if __name__ == "__main__":
    main()
