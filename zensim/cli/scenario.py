"""`zensim run` / `zensim sweep`: run a YAML scenario (points as tasks, here or on Dask), print its table,
write its outputs."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from zensim.atomic import check_creatable
from zensim.errors import ConfigError
from zensim.extras import installed
from zensim.sim.scenario import load_scenario
from zensim.sim.sweep import records_of, render_results, results_document, run_scenario, write_outputs

STORE = ".zensim"  # under --out: finished points (and cached message logs)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `run SCENARIO` (any scenario) and `sweep SCENARIO` (the same, requiring a sweep)."""
    for name, helptext in (("run", "run a YAML scenario (a single point or a sweep)"),
                           ("sweep", "run a YAML scenario that has a sweep: section (error if it has none)")):
        p = subparsers.add_parser(name, help=helptext, description=helptext + ". Points run as independent "
                                  "tasks on a local Dask cluster (--processes), a running Dask scheduler "
                                  "(--scheduler) or here (--processes 0); finished points are kept under the "
                                  "cache folder and skipped on a rerun. See docs/scenarios.md.")
        p.add_argument("scenario", help="scenario file (.yaml), see docs/scenarios.md")
        p.add_argument("--out", default=None, metavar="DIR",
                       help="folder for the scenario's relative output paths (default: the current directory)")
        p.add_argument("--json", action="store_true",
                       help="print the records (one per point and scheme) as a zensim-results/1 JSON document")
        p.add_argument("--workers", type=int, default=None, metavar="N",
                       help="worker processes of a local Dask cluster (default: one per core, at most one per "
                            "point; a single point runs here); 0 = every point here, one after the other")
        p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                       help="run the points on this running Dask scheduler instead (docs/scenarios.md: Slurm)")
        p.add_argument("--cache", default=None, metavar="DIR",
                       help=f"folder keeping finished points for resuming (default: OUT/{STORE}; 'none' keeps nothing)")
        p.add_argument("--fresh", action="store_true", help="simulate every point again, even those kept")
        p.set_defaults(func=cmd_run, require_sweep=name == "sweep")


def cmd_run(args: argparse.Namespace) -> int:
    """Load, validate, run, write the outputs, print the table (or --json); failed points: exit 1."""
    scn = load_scenario(args.scenario, args.out)
    if args.require_sweep and not scn.is_sweep:
        raise ConfigError(f"{scn.path}: no sweep: section with more than one point (use `zensim run`)")
    if args.workers is not None and args.scheduler is not None:
        raise ConfigError("--processes: not with --scheduler (the scheduler's workers run the points)")
    workers = args.workers
    if workers is None:
        # without the dask extra, every point runs here (an explicit --processes N asks for Dask)
        workers = 0 if len(scn.points) == 1 or not installed("distributed") else min(os.cpu_count() or 1, len(scn.points))
    store = None if args.cache == "none" else Path(args.cache) if args.cache else Path(args.out or ".") / STORE
    if store is not None:  # a cache under a file fails in every worker: one line now instead
        check_creatable(store, "--cache" if args.cache else "--out")
    outcome = run_scenario(scn, progress=True, command=args.command_line, workers=workers,
                           scheduler=args.scheduler, store=store, fresh=args.fresh)
    where = (f"Dask scheduler {args.scheduler}" if args.scheduler else
             f"local Dask cluster of {workers} workers" if workers else "this process")
    count = len(scn.points)
    kept = f"{outcome.reused} kept from {store}" if store else "no cache"
    print(f"{count} point{'s' if count > 1 else ''}: {kept}, {outcome.computed} simulated ({where}), "
          f"{len(outcome.failures)} failed; {outcome.wall_s:.1f} s", file=sys.stderr)
    if outcome.failures:
        for failure in outcome.failures:
            print(f"zensim: error: {scn.path}: {failure.line()}", file=sys.stderr)
        print(f"zensim: no outputs written; the {len(outcome.results)} finished points are kept"
              + (f" in {store}: a rerun simulates only the failed ones" if store else ""), file=sys.stderr)
        return 1
    write_outputs(scn, outcome.results)
    print(results_document(records_of(outcome.results)) if args.json else render_results(outcome.results))
    return 0
