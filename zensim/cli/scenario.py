"""`zensim run` / `zensim sweep`: run a YAML scenario, print its table, write its outputs."""

from __future__ import annotations

import argparse

from zensim.errors import ConfigError
from zensim.report.record import results_json
from zensim.sim.scenario import load_scenario
from zensim.sim.sweep import records_of, render_results, run_scenario, write_outputs


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `run SCENARIO` (any scenario) and `sweep SCENARIO` (the same, requiring a sweep)."""
    for name, helptext in (("run", "run a YAML scenario (a single point or a sweep)"),
                           ("sweep", "run a YAML scenario that has a sweep: section (error if it has none)")):
        p = subparsers.add_parser(name, help=helptext)
        p.add_argument("scenario", help="scenario file (.yaml), see docs/scenarios.md")
        p.add_argument("--out", default=None, metavar="DIR",
                       help="folder for the scenario's relative output paths (default: the current directory)")
        p.add_argument("--json", action="store_true",
                       help="print the records (one per point and scheme) as a zensim-results/1 JSON document")
        p.set_defaults(func=cmd_run, require_sweep=name == "sweep")


def cmd_run(args: argparse.Namespace) -> int:
    """Load, validate, run, write the outputs, print the table (or --json)."""
    scn = load_scenario(args.scenario, args.out)
    if args.require_sweep and not scn.is_sweep:
        raise ConfigError(f"{scn.path}: no sweep: section with more than one point (use `zensim run`)")
    results = run_scenario(scn, progress=True, command=args.command_line)
    write_outputs(scn, results)
    print(results_json(records_of(results)) if args.json else render_results(results))
    return 0
