"""`zensim simulate --replay A:B`: sparsifier + scheme pairs over many iterations of a trace with
values (a dense-gradient trace), per-rank state carried; summary table, per-iteration figures."""

from __future__ import annotations

import argparse

from zensim.errors import ConfigError
from zensim.replay.method import ITERATION_SET
from zensim.sim.request import ReplayRequest, SimulateRequest

ONLY_WITH_ITERATIONS = ("sparsifier", "density", "per_iteration")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the iteration mode of `simulate` that are not the request's."""
    p.add_argument("--per-iteration", action="store_true", help="with --replay: print every iteration too")


def check_mode(args: argparse.Namespace) -> None:
    """One line, before any work, for an option of one mode of `simulate` given with the other: the
    replay's options without --replay, --iteration with it."""
    if args.range is None:
        unset = {"sparsifier": None, "density": ReplayRequest.density, "per_iteration": False}
        for name in ONLY_WITH_ITERATIONS:
            if getattr(args, name) != unset[name]:
                raise ConfigError(f"--{name.replace('_', '-')}: only with --replay A:B (without it, simulate "
                                  "times one iteration's synchronization of the trace's own indices)")
        return
    if args.iteration != SimulateRequest.iteration:
        raise ConfigError(f"--iteration {args.iteration}: not with --replay {args.range} (which replays "
                          "iterations A..B-1)")


def cmd_replay(args: argparse.Namespace, req: ReplayRequest, costs, outs, paths) -> int:  # type: ignore[no-untyped-def]
    """Run the replay on the request's cluster (`costs`) and print / write its results."""
    from emulate.options import parse_options
    from zensim.replay import summarize
    from zensim.replay.document import REPLAY_SCHEMA
    from zensim.replay.report import iterations_figure, render_iterations, render_summary
    from zensim.report.provenance import provenance, trace_info
    from zensim.sim.replay import run_replay
    from zensim.sim.run import cluster_info
    from zensim.trace import Trace

    for option in ("timeline", "links", "traffic", "link_plot"):
        if getattr(args, option, None):
            raise ConfigError(f"--{option.replace('_', '-')}: not with --replay")
    records, methods, (first, last), costs = run_replay(req, args.trace, args.scheme, parse_options(args.options),
                                                        costs=costs, default=ITERATION_SET, progress=True)
    summary = summarize(records)
    title = f"{args.trace}: {costs.cluster.describe()}, d = {req.density}, iterations {first}:{last}"
    with Trace.open(args.trace) as trace:
        made = {"provenance": provenance(args.command_line),
                "trace": {**trace_info(trace, first), "iteration": None, "iterations": [first, last]},
                "cluster": {**cluster_info(costs), "model": req.model}}
    if finish(args, outs, paths, records, summary, lambda: iterations_figure(records, title), REPLAY_SCHEMA, made):
        return 0
    if args.per_iteration:
        for m in methods:
            print(f"{m.label}:\n{render_iterations(records, m.label)}\n")
    print(f"{args.trace}: {costs.cluster.describe()}, {len(methods)} methods, iterations {first}:{last}, "
          f"user-set density {req.density}")
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
