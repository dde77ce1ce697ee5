"""The result options every command with records shares (`simulate`, `emulate`, `report`): --json,
--csv and --parquet (add_table_options: every command with a table), --plot, --timeline where a run has
timings, --links, --traffic, --link-plot where records carry per-link figures, and --chakra where a
simulated scheme's message log can be exported as Chakra execution traces; outputs checked before the work, written all or none after it, through the one
report path (zensim.report)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from zensim.extras import require_parquet
from zensim.net.profile import WorkCost
from zensim.report.links import link_files
from zensim.report.outputs import OutputFiles, plot_format, table_files, table_format
from zensim.report.record import RunRecord, results_csv, results_json
from zensim.report.table import render

OUTPUTS = ("csv", "parquet", "plot", "timeline", "links", "traffic", "link_plot")
PLOTS = ("plot", "link_plot")
TABLES = ("links", "traffic")  # .csv or .json, by the extension (zensim.report.links)


def add_options(p: argparse.ArgumentParser, timeline: bool = False, links: bool = False, chakra: bool = False) -> None:
    """--json (print the results document), --csv FILE, --parquet FILE, --plot FILE[, --timeline FILE][,
    --links FILE, --traffic FILE, --link-plot FILE][, --chakra PREFIX]."""
    p.add_argument("--json", action="store_true", help="print the records as a zensim-results/1 JSON document")
    add_table_options(p, "the records (zensim report reads the CSV)")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="also write a plot: times, time / dense and bytes per rank (format from the extension: "
                        ".png, .pdf, .svg, ...)")
    if timeline:
        p.add_argument("--timeline", default=None, metavar="FILE", help="also write a Chrome trace (Perfetto) timeline")
    if links:
        p.add_argument("--links", default=None, metavar="FILE",
                       help="also write bytes and mean utilization of every link, per scheme (.csv or .json)")
        p.add_argument("--traffic", default=None, metavar="FILE",
                       help="also write the traffic matrix between machines, per scheme (.csv or .json)")
        p.add_argument("--link-plot", default=None, metavar="FILE",
                       help="also plot every link's utilization and the traffic matrix, one row per scheme")
    if chakra:
        p.add_argument("--chakra", default=None, metavar="PREFIX",
                       help="also write the scheme's synchronization as Chakra execution traces for ASTRA-sim, "
                            "PREFIX.<rank>.et per rank (one scheme; needs mlc-chakra: docs/reports.md)")


def add_table_options(p: argparse.ArgumentParser, what: str) -> None:
    """--csv FILE and --parquet FILE: `what` (e.g. 'every iteration') as CSV, and the same table as Parquet."""
    p.add_argument("--csv", default=None, metavar="FILE", help=f"also write {what} as CSV")
    p.add_argument("--parquet", default=None, metavar="FILE",
                   help="also write the --csv table as Parquet (same columns and values; needs pip install "
                        "'zensim[parquet]')")


def plan(args: argparse.Namespace, inputs: Iterable[str | Path | None],
         ranks: int = 0) -> tuple[OutputFiles, dict[str, Path]]:
    """Check the output options before the work: {option: path} of those given (--chakra: its prefix,
    each of its `ranks` files checked)."""
    outs = OutputFiles(inputs=inputs)
    paths = {key: outs.add(getattr(args, key), "--" + key.replace("_", "-"), plot=key in PLOTS)
             for key in OUTPUTS if getattr(args, key, None)}
    for key in TABLES:
        if key in paths:
            table_format(paths[key], f"--{key}")
    if "parquet" in paths:
        require_parquet("--parquet")
    if getattr(args, "chakra", None):
        from zensim.report.chakra import chakra_modules, chakra_paths

        chakra_modules()
        for path in chakra_paths(args.chakra, ranks):
            outs.add(path, "--chakra")
        paths["chakra"] = Path(args.chakra)
    return outs, paths


def finish(args: argparse.Namespace, records: Sequence[RunRecord], outs: OutputFiles, paths: dict[str, Path],
           figure: Callable[[Sequence[RunRecord]], object] | None = None, text: str | None = None,
           work: WorkCost | None = None) -> None:
    """Write the outputs (all or none) and print the table (or --json). `figure` makes the plot (default:
    the run's bars); `text` replaces the default table; `work` prices the local work of --chakra's trace
    (the one record's message log)."""
    from zensim.report.plots import figure_bytes, run_figure

    files = table_files(paths, lambda: results_csv(records))
    if "timeline" in paths:
        import json

        from zensim.report.chrome import chrome_trace, track_of
        files[paths["timeline"]] = json.dumps(chrome_trace([track_of(r) for r in records]))
    if "plot" in paths:
        files[paths["plot"]] = figure_bytes((figure or run_figure)(records), plot_format(paths["plot"]))
    files.update(link_files(records, paths, lambda key: "--" + key.replace("_", "-")))
    if "chakra" in paths:
        from zensim.report.chakra import chakra_paths, chakra_traces

        (record,) = records
        files.update(zip(chakra_paths(paths["chakra"], record.simulated.log.n),
                               chakra_traces(record.simulated.log, work)))
    outs.write(files)
    print(results_json(records) if args.json else text if text is not None else render(records))

