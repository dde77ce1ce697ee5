"""`zensim fusion`: tensor missing rate of sparsification-behind fusion on a dense trace; fusion strategies compared."""

from __future__ import annotations

import argparse
import json

import numpy as np

from zensim.errors import ConfigError
from zensim.net.units import parse_bandwidth
from zensim.report.outputs import OutputFiles, plot_format
from zensim.report.table import format_table
from zensim.request import at_least

DEGREES = "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `fusion missing` and `fusion strategies`."""
    p = subparsers.add_parser("fusion", help="fusion strategies: tensor missing rate, SAFusion / Cupcake / DDP compared")
    sub = p.add_subparsers(dest="fusion_command", required=True, metavar="SUBCOMMAND")
    m = sub.add_parser("missing", help="tensor missing rate against fusion degree on a dense-gradient trace")
    m.add_argument("--trace", required=True, help="dense-gradient trace (.zt, captured with --dense)")
    m.add_argument("--density", type=float, default=0.01, help="selection density per bucket (default 0.01)")
    m.add_argument("--sparsifier", default="topk,dgc", help="topk, dgc or threshold, comma-separated (default topk,dgc)")
    m.add_argument("--by", default="bytes,tensors", help="fusion degree counts bytes and/or tensors (default both)")
    m.add_argument("--degrees", default=DEGREES, help=f"fusion degrees in [0, 1] (default {DEGREES})")
    m.add_argument("--iterations", type=int, default=1, help="trace iterations averaged (default 1)")
    m.add_argument("--workers", type=int, default=1, help="workers averaged (default 1)")
    m.add_argument("--json", action="store_true", help="print the curves as JSON")
    m.add_argument("--plot", default=None, metavar="FILE", help="also write the plot (.png, .pdf, .svg, ...)")
    m.set_defaults(func=cmd_missing)
    s = sub.add_parser("strategies", help="iteration time of no compression, layer-wise, sparsification-behind, "
                                          "SAFusion and Cupcake on a model by shape")
    s.add_argument("--model", default="bert-base", help="bert-base, gpt2 or gpt-3b (default bert-base)")
    s.add_argument("--machines", type=int, default=16)
    s.add_argument("--gpus-per-machine", type=int, default=8)
    s.add_argument("--nic", default="25Gbps", help="NIC bandwidth per machine (default 25Gbps)")
    s.add_argument("--device", default="v100", help="FLOP estimate device: v100 or a100-bf16 (default v100)")
    s.add_argument("--tokens", type=int, default=4096, help="tokens per GPU per iteration (default 4096)")
    s.add_argument("--batch", type=int, default=32, help="samples per GPU per iteration (default 32)")
    s.add_argument("--density", type=float, default=0.01)
    s.add_argument("--cost", choices=("dgc", "threshold"), default="dgc", help="compression cost profile")
    s.add_argument("--json", action="store_true", help="print the plans as JSON")
    s.add_argument("--plot", default=None, metavar="FILE", help="also write a bar chart of samples/s")
    s.set_defaults(func=cmd_strategies)


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(f"{what} {text}: expected numbers separated by commas") from None


def cmd_missing(args: argparse.Namespace) -> int:
    """Curves of missing rate against fusion degree, per sparsifier and degree reading."""
    from zensim.sparsify import local_names
    from zensim.trace import Trace
    from zensim.train.fusion.missing import trace_curve
    from zensim.train.fusion.plots import missing_plot

    degrees = _floats(args.degrees, "--degrees")
    if any(not 0 <= d <= 1 for d in degrees):
        raise ConfigError(f"--degrees {args.degrees}: each must be in [0, 1]")
    if not 0 < args.density <= 1:
        raise ConfigError(f"--density {args.density}: must be in (0, 1]")
    sparsifiers = args.sparsifier.split(",")
    for sp in sparsifiers:
        if sp not in local_names():
            raise ConfigError(f"--sparsifier {sp}: choose from {', '.join(local_names())}")
    readings = args.by.split(",")
    if any(by not in ("bytes", "tensors") for by in readings):
        raise ConfigError(f"--by {args.by}: bytes and/or tensors")
    outs = OutputFiles(inputs=[args.trace])
    plot = outs.add(args.plot, "--plot", plot=True) if args.plot else None
    trace = Trace.open(args.trace)
    if not trace.is_dense:
        raise ConfigError(f"{args.trace}: not a dense-gradient trace (capture it with --dense)")
    if not 1 <= args.iterations <= trace.iterations or not 1 <= args.workers <= trace.workers:
        raise ConfigError(f"--iterations/--ranks: the trace has {trace.iterations} iterations of {trace.workers} "
                          "workers")
    curves = {f"{sp} / by {by}": trace_curve(trace, degrees, args.density, by, sp, range(args.iterations),
                                            range(args.workers))
              for sp in sparsifiers for by in readings}
    if args.json:
        print(json.dumps({"trace": args.trace, "tensors": len(trace.tensors), "density": args.density,
                          "degrees": degrees, "curves": curves}, indent=1))
    else:
        print(format_table([[k] + [round(r, 3) for r in v] for k, v in curves.items()],
                           ["selection"] + [f"{100 * d:g}%" for d in degrees]))
        print(f"{args.trace}: {len(trace.tensors)} tensors, density {args.density}; tensor missing rate of "
              "sparsification-behind fusion (SAFusion Fig. 3: 75-81% at 100%)")
    if plot:
        outs.write({plot: missing_plot(degrees, curves, f"{args.trace}, density {args.density}",
                                       plot_format(plot))})
    return 0


def cmd_strategies(args: argparse.Namespace) -> int:
    """The five strategies' iteration times and throughput on one model, cluster and cost."""
    from zensim.net.topology import ClusterSpec
    from zensim.train.fusion.chain import Affine
    from zensim.train.fusion.plots import throughput_plot
    from zensim.train.fusion.shapes import DEVICES, MODELS, estimate
    from zensim.train.fusion.registry import STRATEGIES
    from zensim.train.fusion.strategies import Compression, Workload, plan

    if args.model not in MODELS:
        raise ConfigError(f"--workload {args.model}: choose from {', '.join(MODELS)}")
    if args.device not in DEVICES:
        raise ConfigError(f"--device {args.device}: choose from {', '.join(DEVICES)}")
    for flag, value in (("--machines", args.machines), ("--gpus-per-machine", args.gpus_per_machine),
                        ("--tokens", args.tokens), ("--batch-size", args.batch)):
        at_least(flag, value, 1)
    if not 0 < args.density <= 1:
        raise ConfigError(f"--density {args.density}: must be in (0, 1]")
    outs = OutputFiles()
    plot = outs.add(args.plot, "--plot", plot=True) if args.plot else None
    nic = parse_bandwidth(args.nic, "--nic")
    e = estimate(MODELS[args.model](), args.tokens, DEVICES[args.device])
    w = Workload(args.model, e.sizes, e.backward, e.forward, args.batch)
    cost = Affine(2.5e-4, 6.25e-11) if args.cost == "dgc" else Affine(2e-5, 6.25e-12)
    comp = Compression(density=args.density, encode=cost)
    cluster = ClusterSpec(args.machines, args.gpus_per_machine, nic, nic_latency=5e-6, nvlink_latency=2e-6)
    plans = [plan(s, w, cluster, comp) for s in STRATEGIES]
    records = [{"strategy": p.strategy, "groups": p.groups, "iteration_s": p.iteration,
                "samples_per_s": p.samples_per_s, "vs_none": p.samples_per_s / plans[0].samples_per_s} for p in plans]
    if args.json:
        print(json.dumps({"model": args.model, "tensors": len(w.sizes), "forward_s": w.forward,
                          "backward_s": float(np.sum(w.backward)), "plans": records}, indent=1))
    else:
        print(format_table([[r["strategy"], r["groups"], round(r["iteration_s"] * 1e3, 2), round(r["samples_per_s"]),
                             round(r["vs_none"], 3)] for r in records],
                           ["strategy", "groups", "iteration ms", "samples/s", "vs none"]))
        print(f"{args.model} ({len(w.sizes)} tensors, {args.device} FLOP estimate), {args.machines} x "
              f"{args.gpus_per_machine} GPUs, NIC {args.nic}, density {args.density}, {args.cost} cost")
    if plot:
        outs.write({plot: throughput_plot(STRATEGIES, {args.model: [r["samples_per_s"] for r in records]},
                                          f"{args.model}, {args.machines} x {args.gpus_per_machine}, {args.nic}",
                                          plot_format(plot))})
    return 0
