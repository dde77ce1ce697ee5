"""`zensim simulate`: time schemes on a trace x cluster; table, --json, --csv, --timeline, --plot, --chakra."""

from __future__ import annotations

import argparse

from emulate.options import parse_options
from zensim.cli import results
from zensim.cli.replay import add_arguments as add_replay_arguments, check_mode
from zensim.errors import ConfigError
from zensim.request import add_arguments
from zensim.sim.request import ClusterRequest, ReplayRequest, SimulateRequest
from zensim.sim.run import resolve_schemes


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `simulate` command."""
    p = subparsers.add_parser("simulate", help="time sparse synchronization schemes on a simulated cluster")
    p.add_argument("--trace", required=True, help="trace file (.zt)")
    p.add_argument("--scheme", default="all", help="all | presets | distinct | NAME[,NAME...] (default all)")
    add_arguments(p, SimulateRequest)
    add_arguments(p, ReplayRequest, below=ClusterRequest)  # --replay A:B and its options
    p.add_argument("--options", default="{}", metavar="JSON",
                   help="scheme options as JSON, e.g. '{\"value_dtype\": \"float16\", \"pull\": \"coo\"}' "
                        "(`zensim schemes --options NAME` lists a scheme's)")
    results.add_options(p, timeline=True, links=True, chakra=True)
    add_replay_arguments(p)
    p.set_defaults(func=cmd_simulate)


def cmd_simulate(args: argparse.Namespace) -> int:
    """Run the simulation and print/write the results."""
    from zensim.net.costs import Costs
    from zensim.report.provenance import provenance

    check_mode(args)
    req = (SimulateRequest if args.range is None else ReplayRequest).from_args(args)
    for option in ("timeline", "links", "traffic", "link_plot"):
        if getattr(args, option) and args.model == "analytic":
            raise ConfigError(f"--{option.replace('_', '-')}: the analytic model has no timeline nor per-link "
                              "figures (use fifo or maxmin)")
    if args.chakra:
        check_chakra(args)
    costs = Costs.of(*req.build())
    outs, paths = results.plan(args, inputs=[args.trace, args.profile], ranks=costs.cluster.gpus)
    if isinstance(req, ReplayRequest):
        from zensim.cli.replay import cmd_replay
        return cmd_replay(args, req, costs, outs, paths)
    records = req.run(args.trace, args.scheme, options=parse_options(args.options), costs=costs, progress=True,
                      provenance=provenance(args.command_line))
    results.finish(args, records, outs, paths, work=costs.work)
    return 0


def check_chakra(args: argparse.Namespace) -> None:
    """--chakra exports one scheme's synchronization (one workload for ASTRA-sim): a one-line error for
    several schemes or with --replay."""
    if args.range is not None:
        raise ConfigError("--chakra: exports one synchronization, not with --replay")
    names = resolve_schemes(args.scheme)
    if len(names) > 1:
        raise ConfigError(f"--chakra: one scheme per trace, --scheme {args.scheme} names {len(names)}; "
                          "name one (e.g. --scheme zen)")
