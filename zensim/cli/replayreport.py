"""`zensim report` of replay, training and partition documents (zensim-replay/1 from `simulate
--replay --json`, zensim-training/1 from `converge --json`, zensim-partition/1 from `partition
--json`): what made each run, its table, --csv of every record with that context, --plot of one
replay's or training's figures."""

from __future__ import annotations

import argparse
from typing import Any

from zensim.errors import ConfigError
from zensim.replay.document import PARTITION_SCHEMA, REPLAY_SCHEMA, TRAINING_SCHEMA, csv_rows, document


def made_line(context: dict[str, Any]) -> str:
    """One line naming what made the run: zensim version and commit, the command, the trace (path and
    SHA-256 prefix) or workload, the cluster and model (or the partitioners)."""
    prov, cluster = context.get("provenance", {}), context.get("cluster")
    trace, workload = context.get("trace"), context.get("workload")
    source = (f"trace {trace['path']} (sha256 {str(trace.get('sha256'))[:12]})" if trace else
              f"workload {workload['name']}" if workload else "source unknown")
    where = (f"{cluster.get('description')}, model {cluster.get('model')}" if cluster else
             f"partitioners {', '.join(context.get('partitioners', {}))}")
    return (f"made by zensim {prov.get('zensim')} (commit {prov.get('commit') or 'unknown'}) at {prov.get('created')}: "
            f"{prov.get('command') or 'the Python API'}; {source}; {where}")


def report_documents(args: argparse.Namespace, labels: list[str], docs: list, outs, paths: dict) -> int:  # type: ignore[no-untyped-def]
    """Replay or training documents, all of one schema: each one's line of provenance and summary table
    (--json with one file: the document again; --csv, --parquet: every record with its context; --plot: one file's
    figures)."""
    from zensim.replay.report import iterations_figure, render_summary, render_training
    from zensim.report.export import to_csv
    from zensim.report.outputs import plot_format, table_files
    from zensim.report.plots import figure_bytes

    schemas = {schema for schema, _, _, _ in docs}
    if len(schemas) > 1:
        raise ConfigError(f"{args.results[0]}: {', '.join(sorted(schemas))} documents cannot be reported together")
    other = sorted(set(paths) - {"csv", "parquet", "plot"})
    if other:
        raise ConfigError(f"--{other[0].replace('_', '-')}: not from replay or training records")
    for name, many in (("--json", args.json), ("--plot", "plot" in paths)):
        if many and len(docs) > 1:
            raise ConfigError(f"{name}: one file at a time ({len(docs)} given)")
    replayed = schemas == {REPLAY_SCHEMA}
    if schemas == {PARTITION_SCHEMA} and "plot" in paths:
        raise ConfigError("--plot: partition rows have no figure")
    out = table_files(paths, lambda: to_csv([row for _, records, _, context in docs
                                             for row in csv_rows(records, context)]))
    if "plot" in paths:
        _, records, _, _ = docs[0]
        if replayed:
            figure = iterations_figure(records, labels[0])
        else:
            from zensim.replay.training import loss_figure

            figure = loss_figure(records, labels[0])
        out[paths["plot"]] = figure_bytes(figure, plot_format(paths["plot"]))
    outs.write(out)
    if args.json:
        schema, records, summary, context = docs[0]
        print(document(schema, records, summary, context))
        return 0
    from zensim.cli.partition import partition_table

    render = {REPLAY_SCHEMA: lambda records, summary: render_summary(summary),
              TRAINING_SCHEMA: lambda records, summary: render_training(summary),
              PARTITION_SCHEMA: lambda records, summary: partition_table(records)}[next(iter(schemas))]
    print("\n\n".join(f"{label}: {made_line(context)}\n{render(records, summary)}"
                      for label, (_, records, summary, context) in zip(labels, docs)))
    return 0
