"""The result options every command with records shares (`simulate`, `emulate`, `report`): --json,
--csv, --plot, and --timeline where a run has timings; outputs checked before the work, written all or
none after it, through the one report path (zensim.report)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from zensim.report.outputs import OutputFiles, plot_format
from zensim.report.record import RunRecord, results_csv, results_json
from zensim.report.table import render

OUTPUTS = ("csv", "plot", "timeline")


def add_options(p: argparse.ArgumentParser, timeline: bool = False) -> None:
    """--json (print the results document), --csv FILE, --plot FILE[, --timeline FILE]."""
    p.add_argument("--json", action="store_true", help="print the records as a zensim-results/1 JSON document")
    p.add_argument("--csv", default=None, metavar="FILE", help="also write the records as CSV (zensim report reads it)")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="also write a plot: times, time / dense and bytes per rank (format from the extension: "
                        ".png, .pdf, .svg, ...)")
    if timeline:
        p.add_argument("--timeline", default=None, metavar="FILE", help="also write a Chrome trace (Perfetto) timeline")


def plan(args: argparse.Namespace, inputs: Iterable[str | Path | None]) -> tuple[OutputFiles, dict[str, Path]]:
    """Check the output options before the work: {option: path} of those given."""
    outs = OutputFiles(inputs=inputs)
    paths = {key: outs.add(getattr(args, key), f"--{key}", plot=key == "plot")
             for key in OUTPUTS if getattr(args, key, None)}
    return outs, paths


def finish(args: argparse.Namespace, records: Sequence[RunRecord], outs: OutputFiles, paths: dict[str, Path],
           figure: Callable[[Sequence[RunRecord]], object] | None = None, text: str | None = None) -> None:
    """Write the outputs (all or none) and print the table (or --json). `figure` makes the plot (default:
    the run's bars); `text` replaces the default table."""
    from zensim.report.plots import figure_bytes, run_figure

    files: dict[Path, str | bytes] = {}
    if "csv" in paths:
        files[paths["csv"]] = results_csv(records)
    if "timeline" in paths:
        import json

        from zensim.report.chrome import chrome_trace
        files[paths["timeline"]] = json.dumps(chrome_trace([(r.scheme, r.timing, r.log) for r in records]))
    if "plot" in paths:
        files[paths["plot"]] = figure_bytes((figure or run_figure)(records), plot_format(paths["plot"]))
    outs.write(files)
    print(results_json(records) if args.json else text if text is not None else render(records))
