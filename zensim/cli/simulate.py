"""`zensim simulate`: time schemes on a trace x cluster; table, --json, --csv, --timeline, --plot, --chakra."""

from __future__ import annotations

import argparse

from emulate.options import parse_options
from zensim.cli import results
from zensim.cli.replay import add_arguments as add_iteration_arguments, check_mode
from zensim.errors import ConfigError
from zensim.layout import LAYOUTS
from zensim.sim.run import all_models, resolve_schemes
from zensim.net.models import MODELS, parse_model_options
from zensim.net.profile import Profile
from zensim.net.presets import PRESETS
from zensim.net.topology import FABRICS, NIC_LAYOUTS, TRANSPORTS, ClusterSpec
from zensim.sim.cluster import build_cluster


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `simulate` command."""
    p = subparsers.add_parser("simulate", help="time sparse synchronization schemes on a simulated cluster")
    p.add_argument("--trace", required=True, help="trace file (.zt)")
    p.add_argument("--scheme", default="all", help="all | presets | distinct | NAME[,NAME...] (default all)")
    p.add_argument("--machines", type=int, default=16, help="machines (default 16)")
    p.add_argument("--gpus-per-machine", type=int, default=None, help="GPUs per machine (default: the preset's or 1)")
    add_link_args(p)
    p.add_argument("--model", choices=all_models(), default="fifo", help="bandwidth sharing model (default fifo)")
    p.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option the model declares (repeatable), e.g. --model fifo-overhead --model-option overhead=2e-6")
    p.add_argument("--iteration", type=int, default=None, help="trace iteration (default 0; not with --iterations)")
    p.add_argument("--options", default="{}", metavar="JSON",
                   help="scheme options as JSON, e.g. '{\"value_dtype\": \"float16\", \"pull\": \"coo\"}' "
                        "(`zensim schemes --options NAME` lists a scheme's)")
    p.add_argument("--values", action="store_true",
                   help="carry values (the trace's, or synthetic ones) even where no scheme needs them")
    p.add_argument("--profile", default=None, help="calibration profile JSON (links and per-element work costs)")
    results.add_options(p, timeline=True, links=True, chakra=True)
    add_iteration_arguments(p)
    p.set_defaults(func=cmd_simulate)


def add_link_args(p: argparse.ArgumentParser) -> None:
    """The cluster's links and fabric, the multi-GPU layout and the max-min batch (simulate, iteration)."""
    p.add_argument("--preset", default=None, choices=list(PRESETS),
                   help="machine type: GPUs, NVLink, NICs, transport and NIC latency (docs/simulator.md, Presets); "
                        "explicit options win")
    p.add_argument("--nic", default=None, help="bandwidth of one NIC, e.g. 25Gbps, 12.5GB/s (default: profile, preset or 25Gbps)")
    p.add_argument("--nics", choices=NIC_LAYOUTS, default=None,
                   help="one NIC per machine, or one per GPU on rail-optimized switches (default: preset's or machine)")
    p.add_argument("--transport", choices=TRANSPORTS, default=None,
                   help="tcp or rdma: the default NIC latency (tcp 25us, rdma 2us; default: preset's or tcp)")
    p.add_argument("--nic-latency", default=None,
                   help="per-message latency across machines, e.g. 5us (default: profile, preset or by --transport)")
    p.add_argument("--nvlink", default=None, help="per-GPU intra-machine bandwidth (default: profile, preset or 300GB/s)")
    p.add_argument("--nvlink-latency", default=None, help="per-message latency inside a machine (default: profile or 1us)")
    p.add_argument("--fabric", choices=FABRICS, default="switch",
                   help="non-blocking switch, two-level leaf-spine, or multi-tier fat-tree (with --tiers)")
    p.add_argument("--oversub", type=float, default=None, help="leaf-spine oversubscription ratio (default 1)")
    p.add_argument("--machines-per-leaf", type=int, default=None, help="leaf-spine: machines under one leaf (default 4)")
    p.add_argument("--tiers", default=None, metavar="M:O[,M:O...]",
                   help="fat-tree tiers from the bottom, members per group : oversubscription of its uplinks, e.g. "
                        "4:1,8:2 = leaves of 4 machines (1:1), pods of 8 leaves (2:1), a non-blocking core")
    p.add_argument("--layout", choices=LAYOUTS, default="zen", help="multi-GPU layout (default zen)")
    p.add_argument("--maxmin-batch", type=float, default=MODELS["maxmin"].options["batch"],
                   help="maxmin: service a link may lose to freed capacity left idle between solves, as a fraction "
                        "of its work (0 = exact max-min; default 1/256)")


def cluster_from_args(args: argparse.Namespace, machines: int | None = None) -> tuple[ClusterSpec, Profile | None]:
    """ClusterSpec from the arguments: explicit options > profile > defaults; also the profile (or None)."""
    if args.maxmin_batch < 0 or args.maxmin_batch > 1:
        raise ConfigError(f"--maxmin-batch {args.maxmin_batch}: must be in [0, 1]")
    return build_cluster(machines or args.machines, args.gpus_per_machine, nic=args.nic, nic_latency=args.nic_latency,
                         nvlink=args.nvlink, nvlink_latency=args.nvlink_latency, fabric=args.fabric,
                         oversub=args.oversub, machines_per_leaf=args.machines_per_leaf, profile=args.profile,
                         preset=args.preset, nics=args.nics, transport=args.transport, tiers=args.tiers)


def cmd_simulate(args: argparse.Namespace) -> int:
    """Run the simulation and print/write the results."""
    from zensim.net.costs import Costs
    from zensim.report.provenance import provenance
    from zensim.sim.run import simulate

    check_mode(args)
    for option in ("timeline", "links", "traffic", "link_plot"):
        if getattr(args, option) and args.model == "analytic":
            raise ConfigError(f"--{option.replace('_', '-')}: the analytic model has no timeline nor per-link "
                              "figures (use fifo or maxmin)")
    if args.chakra:
        check_chakra(args)
    model_options = model_options_of(args)
    cluster, profile = cluster_from_args(args)
    outs, paths = results.plan(args, inputs=[args.trace, args.profile], ranks=cluster.gpus)
    if args.iterations is not None:
        from zensim.cli.replay import cmd_replay
        return cmd_replay(args, cluster, profile, outs, paths)
    costs = Costs.of(cluster, profile)
    records = simulate(args.trace, args.scheme, costs, args.model, iteration=args.iteration or 0,
                       options=parse_options(args.options), values=True if args.values else None,
                       layout=args.layout, maxmin_batch=args.maxmin_batch, progress=True,
                       provenance=provenance(args.command_line), model_options=model_options)
    results.finish(args, records, outs, paths, work=costs.work)
    return 0


def model_options_of(args: argparse.Namespace) -> dict[str, object]:
    """The --model-option KEY=VALUE pairs for --model: options the model declares, typed as their
    defaults (zensim.net.models.parse_model_options); a one-line error otherwise or with --iterations."""
    if args.model_option and args.iterations is not None:
        raise ConfigError("--model-option: not with --iterations (a replay over iterations runs each model's defaults)")
    return parse_model_options(args.model_option, args.model)


def check_chakra(args: argparse.Namespace) -> None:
    """--chakra exports one scheme's synchronization (one workload for ASTRA-sim): a one-line error for
    several schemes or with --iterations."""
    if args.iterations is not None:
        raise ConfigError("--chakra: exports one synchronization, not with --iterations")
    names = resolve_schemes(args.scheme)
    if len(names) > 1:
        raise ConfigError(f"--chakra: one scheme per trace, --scheme {args.scheme} names {len(names)}; "
                          "name one (e.g. --scheme zen)")
