"""`zensim report RESULTS...`: re-render tables and plots from results files (JSON or CSV written by
simulate, run/sweep, emulate or report itself) and compare runs side by side, without simulating."""

from __future__ import annotations

import argparse
from pathlib import Path

from zensim.cli import results
from zensim.errors import ConfigError
from zensim.report.record import RunRecord, load_results
from zensim.report.runs import group_sweep, split_runs
from zensim.report.table import render, render_comparison


def comparison_figure(runs):
    """The comparison plot (matplotlib imported only when a plot is asked for)."""
    from zensim.report.plots import comparison_figure as figure

    return figure(runs)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `report` command."""
    p = subparsers.add_parser(
        "report", help="re-render and compare results files (no simulation)",
        description="Print the tables of one or more results files (JSON or CSV from simulate, run, sweep, "
        "emulate) and, when they hold more than one run, a comparison: each run's time per scheme, its ratio "
        "to the first run, and the parameters that differ. --plot draws the comparison (one run: its bars; "
        "one sweep: its lines).")
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results files (.json or .csv)")
    p.add_argument("--labels", default=None, help="comma-separated names of the files in the comparison "
                   "(default: the file names)")
    results.add_options(p, links=True)
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    """Load every file, then print and write the tables/plots."""
    labels = _labels(args)
    outs, paths = results.plan(args, inputs=args.results)
    files = []
    for path, label in zip(args.results, labels):
        mine = load_results(path)
        if not mine:
            raise ConfigError(f"{path}: no records")
        files.append((label, mine))
    records = [r for _, mine in files for r in mine]
    runs = [run for label, mine in files for run in split_runs(mine, label)]
    single_sweep = len(files) == 1 and len(runs) > 1 and all(r.sweep for r in records)
    if len(runs) == 1 or single_sweep:
        results.finish(args, records, outs, paths, figure=_sweep_figure if single_sweep else None)
        return 0
    text = "\n\n".join([*(f"{label}\n{render(mine)}" for label, mine in files), render_comparison(runs)])
    results.finish(args, records, outs, paths, figure=lambda _: comparison_figure(runs), text=text)
    return 0


def _labels(args: argparse.Namespace) -> list[str]:
    """A name per file: --labels, else the file names (the paths where two names are equal)."""
    if args.labels is not None:
        labels = [s.strip() for s in args.labels.split(",")]
        if len(labels) != len(args.results) or not all(labels):
            raise ConfigError(f"--labels: {len(labels)} name(s) for {len(args.results)} file(s)")
        return labels
    names = [Path(p).name for p in args.results]
    return names if len(set(names)) == len(names) else list(args.results)


def _sweep_figure(records: list[RunRecord]) -> object:
    """The lines of a sweep file (one group: the others need one figure each)."""
    from zensim.report.plots import sweep_figure

    (group, x_key, runs), *rest = group_sweep(records)
    if rest:
        raise ConfigError(f"--plot: the sweep has {len(rest) + 1} groups ({group}, ...), one figure each; "
                          "the scenario's plot: output writes them all")
    return sweep_figure(runs, x_key, group)
