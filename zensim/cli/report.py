"""`zensim report RESULTS...`: re-render tables and plots from results files (JSON or CSV written by
simulate, run/sweep, emulate or report itself) and compare runs side by side, without simulating;
training-iteration records (`zensim iteration --json`, a scenario's zensim-iterations/1 JSON) render
as the iteration table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from zensim.cli import results
from zensim.cli.replayreport import report_documents
from zensim.errors import ConfigError
from zensim.inputs import read_text
from zensim.replay.document import read_document
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
    docs = [_json(path) for path in args.results]
    replays = [read_document(doc, path) for doc, path in zip(docs, args.results)]
    if any(r is not None for r in replays):
        missing = next((path for path, r in zip(args.results, replays) if r is None), None)
        if missing is not None:
            raise ConfigError(f"{missing}: not a replay or training document (report those apart from other results)")
        return report_documents(args, labels, replays, outs, paths)
    iterations = [_iteration_records(doc, path) for doc, path in zip(docs, args.results)]
    if any(r is not None for r in iterations):
        return _report_iterations(args, labels, iterations, outs, paths)
    from zensim.schemes.registry import with_lossless  # the schemes take 0.1 s to import

    files = []
    for path, label in zip(args.results, labels):
        mine = with_lossless(load_results(path))  # files written before records said whether a scheme is lossy
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


def _json(path: str) -> object:
    """The file read as JSON; None for a file that is not (CSV, or broken: load_results names the problem)."""
    text = read_text(path, "results file")
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _iteration_records(doc: object, path: str) -> list | None:
    """The training-iteration records of a JSON document, None for any other results file."""
    from zensim.report.iteration import iteration_records_of

    return None if doc is None else iteration_records_of(doc, path)


def _report_iterations(args: argparse.Namespace, labels: list[str], files: list, outs, paths) -> int:
    """Training-iteration files: each one's iteration table (--json: the records as one
    zensim-iterations/1 document; --csv, --parquet the rows; --plot samples/s against the GPU count)."""
    from zensim.report.export import to_csv
    from zensim.report.iteration import ITERATION_SCHEMA, iteration_rows, iteration_table, throughput_figure
    from zensim.report.plots import figure_bytes
    from zensim.report.outputs import plot_format, table_files

    for path, mine in zip(args.results, files):
        if mine is None:
            raise ConfigError(f"{path}: not training-iteration records (report iteration files apart from "
                              "other results)")
    other = sorted(set(paths) - {"csv", "parquet", "plot"})
    if other:
        raise ConfigError(f"--{other[0].replace('_', '-')}: not from iteration records (the run is not stored; "
                          "zensim iteration writes it)")
    records = [r for mine in files for r in mine]
    out = table_files(paths, lambda: to_csv(iteration_rows(records)))
    if "plot" in paths:
        out[paths["plot"]] = figure_bytes(throughput_figure(records, ", ".join(labels)), plot_format(paths["plot"]))
    outs.write(out)
    if args.json:
        print(json.dumps({"schema": ITERATION_SCHEMA, "records": [r.to_dict() for r in records]}, indent=1))
    else:
        print("\n\n".join(f"{label}\n{iteration_table(mine)}" if len(files) > 1 else iteration_table(mine)
                          for label, mine in zip(labels, files)))
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
