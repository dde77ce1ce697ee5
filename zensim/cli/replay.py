"""`zensim simulate --iterations A:B`: sparsifier + scheme pairs over many iterations of a trace with
values (a dense-gradient trace), per-rank state carried; summary table, per-iteration figures."""

from __future__ import annotations

import argparse

from zensim.errors import ConfigError
from zensim.replay.method import ITERATION_SET

DENSITY = 0.01  # --density's default
ONLY_WITH_ITERATIONS = ("sparsifier", "density", "per_iteration")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the iteration mode of `simulate`."""
    p.add_argument("--iterations", default=None, metavar="A:B",
                   help="replay iterations A..B-1 with state carried (a trace with values: capture --dense); "
                        "--scheme takes SCHEME or SCHEME+SPARSIFIER items (exdyna+cltk); all means "
                        + ", ".join(ITERATION_SET))
    p.add_argument("--sparsifier", default=None,
                   help="with --iterations: sparsifier of every scheme, or 'none' (default: each scheme's own: "
                        "spardl blocktopk, exdyna exdyna, oktopk oktopk, dense-allreduce none, others topk)")
    p.add_argument("--density", type=float, default=None, help=f"with --iterations: user-set density (default {DENSITY})")
    p.add_argument("--per-iteration", action="store_true", help="with --iterations: print every iteration too")


def check_mode(args: argparse.Namespace) -> None:
    """One line, before any work, for an option of one mode of `simulate` given with the other: the
    replay's options without --iterations, --iteration or the analytic model with it."""
    if args.iterations is None:
        for name in ONLY_WITH_ITERATIONS:
            if getattr(args, name) is not None and getattr(args, name) is not False:  # (0.0 == False)
                raise ConfigError(f"--{name.replace('_', '-')}: only with --iterations A:B (without it, simulate "
                                  "times one iteration's synchronization of the trace's own indices)")
        return
    if args.iteration is not None:
        raise ConfigError(f"--iteration {args.iteration}: not with --iterations {args.iterations} (which replays "
                          "iterations A..B-1)")
    if args.model == "analytic":
        raise ConfigError("--model analytic: not with --iterations (a replay times every iteration on fifo or maxmin)")


def cmd_replay(args: argparse.Namespace, cluster, profile, outs, paths) -> int:  # type: ignore[no-untyped-def]
    """Run the replay and print / write its results."""
    from emulate.options import parse_options
    from zensim.net.costs import Costs
    from zensim.replay import make_methods, parse_range, replay_iterations, summarize
    from zensim.replay.document import REPLAY_SCHEMA
    from zensim.replay.report import iterations_figure, render_iterations, render_summary
    from zensim.report.provenance import provenance, trace_info
    from zensim.sim.run import cluster_info
    from zensim.trace import Trace
    from zensim.trace.gradients import TraceGradients

    for option in ("timeline", "links", "traffic", "link_plot"):
        if getattr(args, option, None):
            raise ConfigError(f"--{option.replace('_', '-')}: not with --iterations")
    density = DENSITY if args.density is None else args.density
    if not 0 < density <= 1:
        raise ConfigError(f"--density {density}: must be in (0, 1]")
    trace = Trace.open(args.trace)
    source = TraceGradients(trace)
    if source.workers < cluster.gpus:
        raise ConfigError(f"{args.trace}: trace has {source.workers} workers, the cluster asks for {cluster.gpus} GPUs")
    first, last = parse_range(args.iterations, source.iterations)
    methods = make_methods(args.scheme, args.sparsifier, density, cluster.gpus, source.numel, 0,
                           parse_options(args.options), default=ITERATION_SET)
    costs = Costs.of(cluster, profile)
    records = replay_iterations(source, methods, first, last, costs, args.model, progress=True)
    summary = summarize(records)
    title = f"{args.trace}: {cluster.describe()}, d = {density}, iterations {first}:{last}"
    made = {"provenance": provenance(args.command_line),
            "trace": {**trace_info(trace, first), "iteration": None, "iterations": [first, last]},
            "cluster": {**cluster_info(costs), "model": args.model}}
    if finish(args, outs, paths, records, summary, lambda: iterations_figure(records, title), REPLAY_SCHEMA, made):
        return 0
    if args.per_iteration:
        for m in methods:
            print(f"{m.label}:\n{render_iterations(records, m.label)}\n")
    print(f"{args.trace}: {cluster.describe()}, {len(methods)} methods, iterations {first}:{last}, "
          f"user-set density {density}")
    print(render_summary(summary))
    return 0



def finish(args: argparse.Namespace, outs, paths: dict, records: list, summary: list[dict], figure,  # type: ignore[no-untyped-def]
           schema: str, made: dict) -> bool:
    """Write --csv and --parquet (every record, with the `made` blocks as dotted columns) and --plot (`figure()`) all
    or none, print --json (the `schema` document: `made`, summary, records; zensim.replay.document);
    whether the JSON was printed (then nothing else is)."""
    from zensim.replay.document import csv_rows, document
    from zensim.report.export import to_csv
    from zensim.report.outputs import plot_format, table_files
    from zensim.report.plots import figure_bytes

    files = table_files(paths, lambda: to_csv(csv_rows(records, made)))
    if "plot" in paths:
        files[paths["plot"]] = figure_bytes(figure(), plot_format(paths["plot"]))
    outs.write(files)
    if args.json:
        print(document(schema, records, summary, made))
    return bool(args.json)
