"""`zensim converge`: train a built-in workload with virtual workers whose gradients go through each
scheme (sparsifier + scheme, state carried), and give loss against simulated wall-clock per scheme."""

from __future__ import annotations

import argparse

from zensim.cli import results
from zensim.errors import ConfigError
from zensim.net.models import MODELS
from zensim.request import at_least

DEFAULT_SCHEMES = "dense-allreduce,topka,spardl,exdyna"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `converge` subcommand."""
    p = sub.add_parser(
        "converge", help="training loss against simulated wall-clock, the scheme inside the training loop",
        description="Train a built-in workload with N virtual workers; every iteration the workers' gradients "
        "go through the scheme (with its sparsifier and per-worker residuals) in memory, so the model follows "
        "the trajectory the scheme produces; each synchronization's messages are timed on the simulated "
        "cluster. Prints the final loss, test figures and simulated time per scheme; --plot draws loss "
        "against simulated wall-clock (docs/replay.md).")
    p.add_argument("--workload", default="digits-cnn", help="built-in workload (default digits-cnn)")
    p.add_argument("--workers", type=int, default=16, help="virtual workers = simulated GPUs (default 16)")
    p.add_argument("--iterations", type=int, default=100, help="training iterations (default 100)")
    p.add_argument("--scheme", default=DEFAULT_SCHEMES,
                   help=f"SCHEME or SCHEME+SPARSIFIER items, comma-separated (default {DEFAULT_SCHEMES})")
    p.add_argument("--sparsifier", default=None, help="sparsifier of every scheme, or 'none' (default: each scheme's own)")
    p.add_argument("--density", type=float, default=0.01, help="user-set density (default 0.01)")
    p.add_argument("--compute", type=float, default=0.0, metavar="SECONDS",
                   help="forward+backward time of one iteration on the target GPUs, added to the clock (default 0)")
    p.add_argument("--eval-every", type=int, default=10, help="held-out evaluation every N iterations (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus", help="corpus of the language-model workloads")
    p.add_argument("--nic", default=None, help="NIC bandwidth per machine, one GPU each (default: profile or 25Gbps)")
    p.add_argument("--nic-latency", default=None, help="per-message latency, e.g. 5us (default: profile or 0)")
    p.add_argument("--profile", default=None, help="calibration profile JSON (link figures)")
    p.add_argument("--model", default="fifo", help="bandwidth sharing model (default fifo)")
    p.add_argument("--json", action="store_true", help="print the summary and every iteration as JSON")
    results.add_table_options(p, "every iteration")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="also write loss vs simulated wall-clock (format from the extension: .png, .pdf, .svg)")
    p.set_defaults(func=cmd_converge)


def cmd_converge(args: argparse.Namespace) -> int:
    """Run the training per scheme and report."""
    from zensim.net.costs import Costs
    from zensim.cli.replay import finish
    from zensim.replay import make_methods
    from zensim.replay.document import TRAINING_SCHEMA
    from zensim.replay.report import render_training
    from zensim.report.provenance import provenance
    from zensim.sim.run import cluster_info
    from zensim.replay.training import loss_figure, summarize_training, train
    from zensim.sim.cluster import build_cluster
    from zensim.trace.capture.workloads import make_workload

    for name, value, low in (("--ranks", args.workers, 1), ("--iterations", args.iterations, 1),
                             ("--eval-every", args.eval_every, 1)):
        at_least(name, value, low)
    if not 0 < args.density <= 1:
        raise ConfigError(f"--density {args.density}: must be in (0, 1]")
    if args.compute < 0:
        raise ConfigError(f"--compute {args.compute}: must be non-negative")
    if args.model not in MODELS:  # before the first iteration of training, not after it
        raise ConfigError(f"--model {args.model}: unknown (choose from {', '.join(MODELS)})")
    outs, paths = results.plan(args, inputs=[args.profile])
    cluster, profile = build_cluster(args.workers, 1, nic=args.nic, nic_latency=args.nic_latency, profile=args.profile)
    make = lambda: make_workload(args.workload, None, args.seed, args.corpus)  # noqa: E731
    numel = sum(p.numel() for p in make().model.parameters() if p.requires_grad)
    methods = make_methods(args.scheme, args.sparsifier, args.density, args.workers, numel, args.seed, {},
                           default=DEFAULT_SCHEMES.split(","))
    costs = Costs.of(cluster, profile)
    records = train(make, methods, args.iterations, costs, args.model, args.compute, args.eval_every, progress=True)
    summary = summarize_training(records)
    made = {"provenance": provenance(args.command_line),
            "workload": {"name": args.workload, "workers": args.workers, "iterations": args.iterations,
                         "seed": args.seed, "density": args.density, "compute_s": args.compute,
                         "corpus": args.corpus},
            "cluster": {**cluster_info(costs), "model": args.model}}
    title = f"{args.workload}, {args.workers} workers, {cluster.describe()}, d = {args.density}, " \
            f"compute {args.compute} s/iteration"
    if finish(args, outs, paths, records, summary, lambda: loss_figure(records, title), TRAINING_SCHEMA, made):
        return 0
    print(f"{args.workload}: {args.workers} virtual workers, {args.iterations} iterations, {cluster.describe()}, "
          f"user-set density {args.density}, compute {args.compute} s per iteration")
    print(render_training(summary))
    return 0
