"""`zensim iteration`: training iterations (backward overlap, buckets, compression) per scheme and cluster."""

from __future__ import annotations

import argparse
import json
import sys

from emulate.options import parse_options
from zensim.cli import results
from zensim.errors import ConfigError
from zensim.request import add_arguments, at_least, requests_from_args
from zensim.sim.request import IterationRequest

LISTS = ("machines", "strategy", "fusion_degree")  # comma lists: every combination runs (--strategy all: each)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `iteration` command."""
    p = subparsers.add_parser(
        "iteration", help="simulate training iterations: backward overlap, buckets, compression, throughput",
        description="Simulate training iterations of a model (its layer profile) on a cluster: backward layer by "
        "layer, DDP buckets synchronized as they become ready (the trace's sparse tensors by the scheme, the rest "
        "by dense all-reduce), the optimizer after the last bucket. See docs/iteration.md.")
    p.add_argument("--trace", default=None, help="trace (.zt) of the sparse tensors (none: every tensor dense)")
    p.add_argument("--scheme", default="zen", help="scheme(s) for the sparse tensors, comma-separated (default zen); "
                   "dense-allreduce (DDP, every tensor dense) always runs first, as the baseline")
    add_arguments(p, IterationRequest, lists=LISTS)
    p.add_argument("--options", default="{}", metavar="JSON",
                   help="scheme options as JSON, e.g. '{\"value_dtype\": \"float16\"}'")
    p.add_argument("--buckets", action="store_true", help="also print each record's buckets")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    results.add_table_options(p, "the records")
    p.add_argument("--timeline", default=None, metavar="FILE", help="also write a Chrome trace (Perfetto)")
    p.add_argument("--timeline-gpus", type=int, default=None, help="GPUs shown in the timeline (default: machine 0's)")
    p.add_argument("--plot", default=None, metavar="FILE", help="also write throughput against GPUs per scheme")
    p.add_argument("--chakra", default=None, metavar="PREFIX",
                   help="also write the first iteration of the one scheme as Chakra execution traces for ASTRA-sim, "
                        "PREFIX.<rank>.et per GPU (one scheme, one machine count; needs mlc-chakra: docs/reports.md)")
    p.set_defaults(func=cmd_iteration)


def _chakra_ranks(args: argparse.Namespace, schemes: list[str], reqs: list[IterationRequest]) -> int:
    """--chakra exports one iteration of one scheme on one cluster: a one-line error otherwise; the
    cluster's GPUs (one file each)."""
    if len(schemes) != 1 or len(reqs) != 1 or args.strategy:
        raise ConfigError(f"--chakra: one iteration of one scheme on one cluster; --scheme {args.scheme} "
                          f"--machines {args.machines}{' and --strategy' if args.strategy else ''} make "
                          f"{len(schemes) * len(reqs) if not args.strategy else 'several'} runs")
    return reqs[0].build()[0].gpus


def cmd_iteration(args: argparse.Namespace) -> int:
    """Run every (cluster size, scheme) and print/write the results."""
    from tqdm import tqdm

    from zensim.report.export import to_csv, to_json
    from zensim.report.iteration import (bucket_table, iteration_rows, iteration_table, iteration_trace,
                                         throughput_figure)
    from zensim.report.outputs import plot_format, table_files
    from zensim.report.provenance import provenance
    from zensim.sim.iteration import check_schemes, layer_profile, run_count, run_iterations
    from zensim.sim.run import resolve_schemes
    from zensim.train.fusion.schedule import STRATEGIES
    from zensim.train.iteration import check_scheme

    schemes = resolve_schemes(args.scheme)
    options = parse_options(args.options)
    for name in schemes:
        check_scheme(name, options)
    if args.strategy == "all":
        args.strategy = ",".join(STRATEGIES)
    reqs = requests_from_args(IterationRequest, args, tuple(LISTS))
    check_schemes(reqs, schemes, args.trace)
    if args.timeline_gpus is not None:
        at_least("--timeline-gpus", args.timeline_gpus, 1)
    ranks = _chakra_ranks(args, schemes, reqs) if args.chakra else 0
    outs, paths = results.plan(args, inputs=[args.trace, args.layers, args.profile], ranks=ranks)
    profile = layer_profile(reqs[0], args.trace)
    strategies = args.strategy is not None
    bar = tqdm(total=run_count(reqs, schemes), desc="iteration", unit="run", disable=None, leave=False,
               file=sys.stderr)
    records = run_iterations(reqs, profile, schemes, trace=args.trace, options=options,
                             keep_runs="timeline" in paths or "chakra" in paths, done=bar.update)
    bar.close()
    made = provenance(getattr(args, "command_line", None))
    for rec in records:
        rec.provenance = made
    files = table_files(paths, lambda: to_csv(iteration_rows(records)))
    if "timeline" in paths:
        files[paths["timeline"]] = json.dumps(iteration_trace(records, args.timeline_gpus))
    if "plot" in paths:
        from zensim.report.plots import figure_bytes

        title = (f"{profile.workload or 'model'} on {profile.device}, batch {profile.batch_size}/GPU, "
                 f"{records[0].cluster.split(',', 1)[1].strip()}, {reqs[0].model}")
        if strategies:
            from zensim.train.fusion.plots import strategy_plot

            files[paths["plot"]] = strategy_plot(records, title, plot_format(paths["plot"]))
        else:
            files[paths["plot"]] = figure_bytes(throughput_figure(records, title), plot_format(paths["plot"]))
    if "chakra" in paths:
        from zensim.report.chakra import chakra_paths
        from zensim.train.chakra import chakra_iteration

        files.update(zip(chakra_paths(paths["chakra"], ranks), chakra_iteration(records[-1].run.timeline)))
    outs.write(files)
    if args.json:
        print(to_json([r.to_dict() for r in records]))
        return 0
    print(iteration_table(records))
    if args.buckets:
        for rec in records:
            print()
            print(bucket_table(rec))
    return 0
