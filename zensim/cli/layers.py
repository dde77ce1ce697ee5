"""`zensim layers`: per-layer profiles (record, estimate, from shapes, import a torch.profiler trace, show with buckets)."""

from __future__ import annotations

import argparse
import json
import sys

from zensim.atomic import check_output
from zensim.errors import ConfigError
from zensim.report.table import format_table
from zensim.request import at_least
from zensim.trace.capture.names import WORKLOADS

MS = 1e3


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `layers record | estimate | shapes | import | show`."""
    p = subparsers.add_parser("layers", help="per-layer profiles: compute per parameter, gradient-ready order",
                              description="Per-layer profiles for the iteration timeline (docs/iteration.md).")
    sub = p.add_subparsers(dest="layers_command", required=True, metavar="ACTION")

    rec = sub.add_parser("record", help="measure a built-in workload, or your DDP script's model, on this machine "
                                        "(hooks around real training)")
    _workload_args(rec, required=False)
    rec.add_argument("--script", default=None, help="instead of --workload: your DDP training script (arguments "
                     "after --), run here in one process; its first DistributedDataParallel model is profiled")
    rec.add_argument("--device", default=None, help="with --workload: torch device to train on: cpu, cuda, cuda:1 "
                     "(default cpu; a script's model is where the script puts it)")
    rec.add_argument("--iterations", type=int, default=10, help="timed training steps (default 10)")
    rec.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    rec.add_argument("script_args", nargs=argparse.REMAINDER, help="with --script: -- then the script's arguments")
    rec.set_defaults(func=cmd_record)

    est = sub.add_parser("estimate", help="estimate a built-in workload on a GPU preset (roofline of every operator)")
    _workload_args(est)
    _device_args(est)
    est.add_argument("--tf32", action="store_true", help="float32 matrix products in TF32 (torch default: off)")
    est.set_defaults(func=cmd_estimate)

    shp = sub.add_parser("shapes", help="estimate a model described by its layer shapes on a GPU preset "
                                        "(zensim-shapes/1 JSON; models too large to train here)")
    shp.add_argument("shapes", help="zensim-shapes/1 JSON file (zensim.train.shapes)")
    _device_args(shp)
    shp.add_argument("-o", "--output", required=True, help="layer profile JSON to write")
    shp.add_argument("--json", action="store_true", help="print the profile as JSON")
    shp.set_defaults(func=cmd_shapes)

    imp = sub.add_parser("import", help="a profile from a torch.profiler Chrome trace of annotated training")
    imp.add_argument("trace", help="Chrome trace JSON exported by torch.profiler (zensim.train.kineto.annotate)")
    imp.add_argument("--warmup", type=int, default=0, help="annotated steps to skip first (default 0)")
    imp.add_argument("--workload", default="", help="workload name to store")
    imp.add_argument("--batch-size", type=int, default=None, help="per-GPU batch of the profiled steps")
    imp.add_argument("-o", "--output", required=True, help="layer profile JSON to write")
    imp.add_argument("--json", action="store_true", help="print the profile as JSON")
    imp.set_defaults(func=cmd_import)

    show = sub.add_parser("show", help="print a profile in ready order, with its buckets")
    show.add_argument("profile", help="layer profile JSON")
    show.add_argument("--bucketing", default="ddp", help="ddp | per-tensor | single (default ddp)")
    show.add_argument("--bucket-mb", type=float, default=None, help="DDP bucket cap in MiB (default 25, first 1)")
    show.add_argument("--first-bucket-mb", type=float, default=None, help="DDP first bucket cap in MiB")
    show.add_argument("--own-bucket", default="", help="parameters with a bucket of their own (comma-separated)")
    show.add_argument("--json", action="store_true", help="print the profile and buckets as JSON")
    show.set_defaults(func=cmd_show)


def _workload_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--workload", choices=WORKLOADS, required=required, help="built-in workload")
    p.add_argument("--batch-size", type=int, default=None, help="per-GPU micro-batch (default: the workload's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus", help="plain-text corpus for the language models (default: installed KJV)")
    p.add_argument("-o", "--output", required=True, help="layer profile JSON to write")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")


def _device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", required=True, help="GPU preset: v100, a100, h100 (datasheet figures)")
    p.add_argument("--efficiency", type=float, default=None, help="fraction of the peaks reached (default 1)")
    p.add_argument("--launch-us", type=float, default=None, help="fixed cost per kernel in us (default: preset's)")


def _device(args: argparse.Namespace):
    """The GPU preset of --device, derated by --efficiency, with --launch-us."""
    from dataclasses import replace

    from zensim.train.devices import get_device

    device = get_device(args.device)
    if args.efficiency is not None:
        device = device.derated(args.efficiency)
    if args.launch_us is not None:
        if not args.launch_us >= 0:
            raise ConfigError(f"--launch-us {args.launch_us}: must be >= 0")
        device = replace(device, launch_s=args.launch_us * 1e-6)
    return device


def _workload(args: argparse.Namespace):
    from zensim.trace.capture.workloads import make_workload

    return make_workload(args.workload, _batch_size(args), args.seed, args.corpus)


def _batch_size(args: argparse.Namespace) -> int | None:
    """--batch-size, checked to be at least 1 (None: the workload's, the script's or the trace's own)."""
    if args.batch_size is not None:
        at_least("--batch-size", args.batch_size, 1)
    return args.batch_size


def _finish(args: argparse.Namespace, profile) -> int:
    """Write the profile, then print it (table or JSON); a busy machine's warning on stderr."""
    profile.save(args.output)
    warning = profile.extra.get("host", {}).get("warning")
    if warning:
        print(f"zensim: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(profile.to_json(), indent=1))
    else:
        print(f"wrote {args.output}")
        print(summary(profile))
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    """Measure on this machine: a built-in workload, or the model of a DDP script."""
    from zensim.train.clocks import torch_device
    from zensim.train.record import record_script, record_workload

    check_output(args.output, "-o")
    script_args = args.script_args[1:] if args.script_args[:1] == ["--"] else args.script_args
    if (args.workload is None) == (args.script is None):
        raise ConfigError("layers record: give --workload NAME or --script FILE (one of them)")
    if args.workload is not None:
        if script_args:
            raise ConfigError(f"{script_args[0]}: unexpected argument (script arguments go with --script)")
        device = torch_device(args.device or "cpu")
        return _finish(args, record_workload(_workload(args), device, args.iterations, args.warmup, progress=True))
    for flag in ("device", "corpus"):
        if getattr(args, flag) is not None:
            raise ConfigError(f"--{flag}: not with --script (the script decides)")
    return _finish(args, record_script(args.script, script_args, args.iterations, args.warmup, _batch_size(args)))


def cmd_estimate(args: argparse.Namespace) -> int:
    """Estimate on a GPU preset."""
    from zensim.train.roofline import estimate_workload

    check_output(args.output, "-o")
    device = _device(args)
    return _finish(args, estimate_workload(_workload(args), device, args.tf32))


def cmd_shapes(args: argparse.Namespace) -> int:
    """Estimate a model from its layer shapes on a GPU preset."""
    from zensim.train.shapes import load_shapes_profile

    check_output(args.output, "-o")
    return _finish(args, load_shapes_profile(args.shapes, _device(args)))


def cmd_import(args: argparse.Namespace) -> int:
    """Import a torch.profiler trace."""
    from zensim.train.kineto import import_trace

    check_output(args.output, "-o")
    at_least("--warmup", args.warmup, 0)
    return _finish(args, import_trace(args.trace, args.warmup, workload=args.workload, batch_size=_batch_size(args)))


def summary(profile) -> str:
    """Two lines: what it is, and its totals in ms (and a third with the step's other time and the hook's
    work on a bucket of the whole model, where the profile has them)."""
    out = (f"{profile.kind} profile of {profile.workload or '?'} (batch {profile.batch_size}) on {profile.device}: "
           f"{len(profile.params)} parameters, {profile.numel} elements\n"
           f"forward {profile.forward_s * MS:.4g} ms, backward {profile.backward_s * MS:.4g} ms, "
           f"optimizer {profile.optimizer_s * MS:.4g} ms, compute {profile.compute_s * MS:.4g} ms per step")
    before, after = profile.hook_work_s(profile.numel)
    if profile.step_other_s or before or after:
        out += (f"\nof it the step's other time {profile.step_other_s * MS:.4g} ms; zensim_hook's own work on a bucket "
                f"of all {profile.numel} elements {before * MS:.4g} ms before the scheme's run, {after * MS:.4g} ms after")
    return out


def cmd_show(args: argparse.Namespace) -> int:
    """Parameters in ready order with sizes, times and buckets."""
    from zensim.train.buckets import make_bucketing
    from zensim.train.layers import load_layers

    profile = load_layers(args.profile)
    own = {n for n in args.own_bucket.split(",") if n}
    unknown = own - set(profile.by_name())
    if unknown:
        raise ConfigError(f"--own-bucket: {sorted(unknown)[0]!r} is not a parameter of {args.profile}")
    buckets = make_bucketing(args.bucketing, args.bucket_mb, args.first_bucket_mb).assign(profile.params, own)
    bucket_of = {i: b for b, bucket in enumerate(buckets) for i in bucket.members}
    ready = profile.ready_s
    rows = [[p.name, p.numel, p.nbytes / 2**20, p.forward_s * MS, p.backward_s * MS, float(ready[i]) * MS,
             bucket_of[i]] for i, p in enumerate(profile.params)]
    if args.json:
        print(json.dumps({"profile": profile.to_json(),
                          "buckets": [{"params": list(b.names), "bytes": b.nbytes, "own": b.own,
                                       "ready_s": float(ready[b.members[-1]])} for b in buckets]}, indent=1))
        return 0
    print(summary(profile))
    print(format_table(rows, ["parameter (ready order)", "numel", "MiB", "fwd ms", "bwd ms", "ready ms", "bucket"]))
    return 0
