"""`zensim simulate --iterations A:B`: sparsifier + scheme pairs over many iterations of a trace with
values (a dense-gradient trace), per-rank state carried; summary table, per-iteration figures."""

from __future__ import annotations

import argparse

from zensim.errors import ConfigError
from zensim.replay.method import ITERATION_SET


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the iteration mode of `simulate`."""
    p.add_argument("--iterations", default=None, metavar="A:B",
                   help="replay iterations A..B-1 with state carried (a trace with values: capture --dense); "
                        "--scheme takes SCHEME or SCHEME+SPARSIFIER items (exdyna+cltk); all means "
                        + ", ".join(ITERATION_SET))
    p.add_argument("--sparsifier", default=None,
                   help="with --iterations: sparsifier of every scheme, or 'none' (default: each scheme's own: "
                        "spardl blocktopk, exdyna exdyna, oktopk oktopk, dense-allreduce none, others topk)")
    p.add_argument("--density", type=float, default=0.01, help="with --iterations: user-set density (default 0.01)")
    p.add_argument("--per-iteration", action="store_true", help="with --iterations: print every iteration too")


def cmd_replay(args: argparse.Namespace, cluster, profile, outs, paths) -> int:  # type: ignore[no-untyped-def]
    """Run the replay and print / write its results."""
    from emulate.options import parse_options
    from zensim.net.costs import Costs
    from zensim.replay import make_methods, parse_range, replay_iterations, summarize
    from zensim.replay.report import iterations_figure, render_iterations, render_summary
    from zensim.trace import Trace
    from zensim.trace.gradients import TraceGradients

    for option in ("timeline", "links", "traffic", "link_plot"):
        if getattr(args, option, None):
            raise ConfigError(f"--{option.replace('_', '-')}: not with --iterations")
    if not 0 < args.density <= 1:
        raise ConfigError(f"--density {args.density}: must be in (0, 1]")
    source = TraceGradients(Trace.open(args.trace))
    if source.workers < cluster.gpus:
        raise ConfigError(f"{args.trace}: trace has {source.workers} workers, the cluster asks for {cluster.gpus} GPUs")
    first, last = parse_range(args.iterations, source.iterations)
    methods = make_methods(args.scheme, args.sparsifier, args.density, cluster.gpus, source.numel, 0,
                           parse_options(args.options), default=ITERATION_SET)
    model = args.model if args.model != "analytic" else "fifo"
    records = replay_iterations(source, methods, first, last, Costs.of(cluster, profile), model, progress=True)
    summary = summarize(records)
    title = f"{args.trace}: {cluster.describe()}, d = {args.density}, iterations {first}:{last}"
    if finish(args, outs, paths, records, summary, lambda: iterations_figure(records, title)):
        return 0
    if args.per_iteration:
        for m in methods:
            print(f"{m.label}:\n{render_iterations(records, m.label)}\n")
    print(f"{args.trace}: {cluster.describe()}, {len(methods)} methods, iterations {first}:{last}, "
          f"user-set density {args.density}")
    print(render_summary(summary))
    return 0



def finish(args: argparse.Namespace, outs, paths: dict, records: list, summary: list[dict], figure) -> bool:  # type: ignore[no-untyped-def]
    """Write --csv (every record) and --plot (`figure()`) all or none, print --json (summary and
    records); whether the JSON was printed (then nothing else is)."""
    from zensim.report.export import to_csv, to_json
    from zensim.report.outputs import plot_format
    from zensim.report.plots import figure_bytes

    files: dict = {}
    if "csv" in paths:
        files[paths["csv"]] = to_csv([r.to_dict() for r in records])
    if "plot" in paths:
        files[paths["plot"]] = figure_bytes(figure(), plot_format(paths["plot"]))
    outs.write(files)
    if args.json:
        print(to_json([{"summary": summary, "iterations": [r.to_dict() for r in records]}]))
    return bool(args.json)
