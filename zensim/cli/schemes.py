"""`zensim schemes`: list the design space (distinct schemes and presets) as a table or JSON."""

from __future__ import annotations

import argparse
import json

from zensim.report.table import format_table

COLUMNS = ("name", "kind", "communication", "aggregation", "partition", "balance", "format", "partitioner")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `schemes` command."""
    cmd = subparsers.add_parser("schemes", help="list the design space: distinct schemes and named presets")
    cmd.add_argument("--kind", choices=("all", "distinct", "preset"), default="all",
                     help="only distinct schemes or only presets (default all)")
    cmd.add_argument("--options", metavar="NAME", default=None,
                     help="the options scheme NAME accepts (from its parts), their defaults and choices")
    cmd.add_argument("--json", action="store_true", help="print the rows as JSON")
    cmd.set_defaults(func=cmd_schemes)


def cmd_schemes(args: argparse.Namespace) -> int:
    """Print the design-space listing."""
    from zensim.schemes import design_space, scheme_options
    from zensim.schemes.options import describe

    if args.options is not None:
        rows = describe(scheme_options(args.options))
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            print(format_table([[r["name"], r["default"], " | ".join(map(str, r["choices"] or [])) or "-", r["help"]]
                                for r in rows], ["option", "default", "choices", "what it sets"]))
        return 0
    rows = [r for r in design_space() if args.kind in ("all", r["kind"])]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    table = [[r[c] for c in COLUMNS] + [", ".join(r["collapses"])] for r in rows]
    print(format_table(table, [*COLUMNS, "raw combinations (distinct) / runs as (preset)"]))
    return 0
