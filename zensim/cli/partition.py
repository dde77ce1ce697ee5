"""`zensim partition TRACE`: push/pull imbalance, Theorem 2 bounds, collisions and losses of every
partitioner on a trace, iteration by iteration."""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from zensim.cli import results
from zensim.errors import ConfigError
from zensim.replay.document import PARTITION_SCHEMA, csv_rows, document
from zensim.report.export import to_csv
from zensim.report.provenance import provenance, trace_info
from zensim.report.outputs import table_files
from zensim.report.table import format_table
from zensim.request import at_least
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.imbalance import imbalance_report
from zensim.sparse.partition import Partitioner, PartitionStats
from zensim.sparse.registry import PARTITIONERS, make_partitioner

COLUMNS = ["partitioner", "iteration", "push", "push_bound", "pull", "pull_bound",
           "collided_rate", "serial_rate", "overflow_rate", "lost_rate"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `partition` command."""
    p = subparsers.add_parser("partition", help="imbalance, collisions and losses of the partitioners on a trace")
    p.add_argument("path", help="trace file (.zt)")
    p.add_argument("--partitioners", default=",".join(PARTITIONERS),
                   help=f"comma-separated, from {', '.join(PARTITIONERS)} (default all)")
    p.add_argument("--period", type=int, default=1000, help="thresholds: recompute every T iterations (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="hash seed shared by all ranks (default 0)")
    p.add_argument("--k", type=int, default=3, help="zen: rehash functions (default 3)")
    p.add_argument("--load", type=float, default=2.0, help="zen: r1 = load x nnz parallel slots (default 2)")
    p.add_argument("--scope", choices=["total", "per_partition"], default="total", help="zen: r1, r2 for all partitions or each")
    p.add_argument("--iterations", type=int, default=None, help="first N iterations only (default all)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    results.add_table_options(p, "the rows")
    p.set_defaults(func=cmd_partition)


def _options(name: str, args: argparse.Namespace) -> dict:
    """The command-line options that apply to partitioner `name`."""
    return {
        "contiguous": {}, "thresholds": {"period": args.period}, "single_hash": {"seed": args.seed},
        "zen": {"seed": args.seed, "k": args.k, "load": args.load, "scope": args.scope},
    }[name]


def partition_rows(trace, partitioners: dict[str, Partitioner], iterations: int) -> list[dict]:
    """One row per (partitioner, iteration): imbalance, bounds and the split statistics."""
    rows = []
    # disable=None shows the bar only when stderr is a terminal (as trace stats, synth and simulate do)
    for it in tqdm(range(iterations), desc="partition", unit="it", file=sys.stderr, leave=False, disable=None):
        chunks = [SparseChunk(trace.flat_indices(it, w)) for w in range(trace.workers)]
        for name, part in partitioners.items():
            part.prepare(it, chunks)
            part.stats = PartitionStats()
            for chunk in chunks:
                part.split(chunk)
            report = imbalance_report(part, chunks)
            stats = part.stats
            rows.append({"partitioner": name, "iteration": it, **report.as_dict(),
                         **{f"{k}_rate": stats.rate(k) for k in ("collided", "serial", "overflow", "lost")}})
    return rows


def cmd_partition(args: argparse.Namespace) -> int:
    """Run every requested partitioner on every iteration of the trace and print the rows."""
    from zensim.trace import Trace

    names = [n.strip() for n in args.partitioners.split(",") if n.strip()]
    bad = [n for n in names if n not in PARTITIONERS]
    if bad or not names:
        raise ConfigError(f"--partitioners {args.partitioners!r}: expected names from {', '.join(PARTITIONERS)}")
    if args.iterations is not None:
        at_least("--iterations", args.iterations, 1)
    if args.k < 1:  # the library keeps k = 0 (every id serial) as a strawman; ZEN's first level needs one
        raise ConfigError(f"--k {args.k}: must be at least 1 (ZEN's first level places ids with k hash functions)")
    outs, paths = results.plan(args, inputs=[args.path])
    with Trace.open(args.path) as trace:
        parts = {n: make_partitioner(n, trace.numel, trace.workers, **_options(n, args)) for n in names}
        count = trace.iterations if args.iterations is None else min(args.iterations, trace.iterations)
        rows = partition_rows(trace, parts, count)
        info = trace_info(trace, 0)
    made = {"provenance": provenance(args.command_line),
            "trace": {**info, "iteration": None, "iterations": [0, count]},
            "partitioners": {n: _options(n, args) for n in names}}
    outs.write(table_files(paths, lambda: to_csv(csv_rows(rows, made))))
    print(document(PARTITION_SCHEMA, rows, [], made) if args.json else partition_table(rows))
    return 0


def partition_table(rows: list[dict]) -> str:
    """The rows as `zensim partition` prints them."""
    return format_table([[r[c] for c in COLUMNS] for r in rows], COLUMNS)
