"""`zensim iteration`: training iterations (backward overlap, buckets, compression) per scheme and cluster."""

from __future__ import annotations

import argparse
import json
import sys

from zensim.cli import results
from zensim.errors import ConfigError
from zensim.net.models import MODELS
from zensim.sim.request import ClusterRequest, Where, add_arguments, integer
from zensim.train.buckets import BUCKETINGS
from zensim.train.iteration import DENSE_WORK
from zensim.train.syncs import SPARSE_BUCKETS
from zensim.train.tuner import DENSE_CHOICES


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `iteration` command."""
    p = subparsers.add_parser(
        "iteration", help="simulate training iterations: backward overlap, buckets, compression, throughput",
        description="Simulate training iterations of a model (its layer profile) on a cluster: backward layer by "
        "layer, DDP buckets synchronized as they become ready (the trace's sparse tensors by the scheme, the rest "
        "by dense all-reduce), the optimizer after the last bucket. See docs/iteration.md.")
    p.add_argument("--trace", default=None, help="trace (.zt) of the sparse tensors (none: every tensor dense)")
    p.add_argument("--layers", default=None, help="layer profile JSON (zensim layers record/estimate/import)")
    p.add_argument("--device", default=None, help="instead of --layers: a GPU preset (v100, a100, h100): the "
                   "shipped profile of the trace's workload and batch beside the trace (layers/), else an estimate")
    p.add_argument("--corpus", default=None, help="with --device and no shipped profile: corpus of the language models")
    p.add_argument("--scheme", default="zen", help="scheme(s) for the sparse tensors, comma-separated (default zen); "
                   "dense-allreduce (DDP, every tensor dense) always runs first, as the baseline")
    p.add_argument("--machines", default="16", help="machines, or a comma-separated list to sweep (default 16)")
    add_arguments(p, ClusterRequest, skip=("machines",))
    p.add_argument("--dense-work", choices=DENSE_WORK, default="fused", help="fused (default): the dense all-reduce's "
                   "merges cost per element only, one fused kernel as NCCL's; profile: as every local work; free: none")
    p.add_argument("--dense-algorithm", choices=DENSE_CHOICES, default="auto", help="the dense all-reduce of dense "
                   "buckets, in every scheme's run and dense DDP alike: auto (default) the fastest for each bucket's "
                   "size, as NCCL's tuner; ring or doubling (recursive doubling) forced")
    p.add_argument("--compute-scale", type=float, default=1.0, help="multiply the profile's compute times (e.g. the "
                   "calibration's cpu_slowdown for a profile measured alone on an emulation host; default 1)")
    p.add_argument("--shared-host", action="store_true", help="every GPU is a process of one host sharing its "
                   "processors (--profile's host_cores) for compute and local work: CPU training, the emulator")
    p.add_argument("--bucketing", choices=tuple(BUCKETINGS), default=None, help="default ddp")
    p.add_argument("--bucket-mb", type=float, default=None, help="DDP bucket_cap_mb in MiB (default 25, first 1)")
    p.add_argument("--first-bucket-mb", type=float, default=None, help="DDP first bucket cap in MiB")
    p.add_argument("--sparse-buckets", choices=SPARSE_BUCKETS, default=None,
                   help="own: a sparse tensor is a bucket of its own (torch's rule for sparse gradients); fused: "
                   "they join DDP's buckets and each bucket is synchronized as zensim_hook does (the scheme's run on "
                   "the whole bucket, dense members included)")
    p.add_argument("--dense-above", type=float, default=None, metavar="D", help="with --sparse-buckets fused: "
                   "all-reduce a bucket densely when its previous sum's density exceeded D, as zensim_hook's dense_above")
    add_strategy_args(p)
    p.add_argument("--sparse-tensors", default=None, help="trace tensors synchronized sparse (default: all)")
    p.add_argument("--iterations", type=int, default=4, help="training iterations (default 4)")
    p.add_argument("--first-iteration", type=int, default=0, help="trace iteration of the first one (default 0)")
    p.add_argument("--options", default=None, help="scheme options as JSON, e.g. '{\"value_dtype\": \"float16\"}'")
    p.add_argument("--buckets", action="store_true", help="also print each record's buckets")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    results.add_table_options(p, "the records")
    p.add_argument("--timeline", default=None, metavar="FILE", help="also write a Chrome trace (Perfetto)")
    p.add_argument("--timeline-gpus", type=int, default=None, help="GPUs shown in the timeline (default: machine 0's)")
    p.add_argument("--plot", default=None, metavar="FILE", help="also write throughput against GPUs per scheme")
    p.set_defaults(func=cmd_iteration)


def add_strategy_args(p: argparse.ArgumentParser) -> None:
    """Fusion strategies (docs/fusion.md): which, the selection of a dense trace, its cost, fusion degrees."""
    from zensim.train.fusion.schedule import COSTS, STRATEGIES

    p.add_argument("--strategy", default=None, help=f"fusion strategies, comma-separated or all ({', '.join(STRATEGIES)}): "
                   "buckets, selection and compression decided by each (none = dense DDP); instead of --bucketing")
    p.add_argument("--sparsifier", default="topk", help="with --strategy, on a dense trace: the selection (default topk)")
    p.add_argument("--density", type=float, default=0.01, help="with --strategy: selection density (default 0.01)")
    p.add_argument("--compression-cost", default="dgc", help=f"with --strategy: seconds per selection, "
                   f"{' or '.join(COSTS)} or ALPHA,BETA (s, s per dense byte); default dgc")
    p.add_argument("--fusion-degree", default=None, help="with --strategy: behind's (and none's) bucket cap as a fraction "
                   "of the model's bytes, comma-separated to sweep (0 = a bucket per tensor, 1 = one bucket)")


def _machines(text: str) -> list[int]:
    return [integer(1)(x, Where("--machines", True)) for x in text.split(",")]


def layer_profile(args: argparse.Namespace):
    """The profile from --layers, or for --device the shipped one beside the trace, else an estimate."""
    from zensim.train.devices import get_device
    from zensim.train.shipped import device_layers
    from zensim.train.layers import load_layers

    if args.layers:
        if args.device:
            raise ConfigError("--layers and --device: give one")
        return load_layers(args.layers)
    if not args.device:
        raise ConfigError("--layers FILE or --device PRESET: the model's per-layer profile is needed")
    get_device(args.device)
    if not args.trace:
        raise ConfigError("--device needs --trace (its workload and batch choose the model)")
    return device_layers(args.trace, args.device, args.corpus)


def strategy_runs(args: argparse.Namespace, schemes: list[str]) -> list[tuple[str, str, dict]]:
    """(strategy, scheme, run_strategy keywords) of every run --strategy asks for, checked before any runs."""
    from zensim.train.fusion.schedule import STRATEGIES, Strategy, compression_cost
    from zensim.train.fusion.strategies import Compression
    from zensim.train.syncs import DENSE

    names = list(STRATEGIES) if args.strategy == "all" else [s.strip() for s in args.strategy.split(",") if s.strip()]
    for flag in ("bucketing", "sparse_buckets", "dense_above"):
        if getattr(args, flag) is not None:
            raise ConfigError(f"--{flag.replace('_', '-')}: not with --strategy (each strategy decides its buckets)")
    cost = compression_cost(args.compression_cost, "--compression-cost")
    comp = Compression(density=args.density, encode=cost)
    degrees = [None] if args.fusion_degree is None else _numbers(args.fusion_degree, "--fusion-degree")
    if any(d is not None and not 0 <= d <= 1 for d in degrees):
        raise ConfigError(f"--fusion-degree {args.fusion_degree}: each must be in [0, 1]")
    if args.fusion_degree is not None and args.bucket_mb is not None:
        raise ConfigError("--bucket-mb and --fusion-degree: give one")
    if args.first_bucket_mb is not None:
        raise ConfigError("--first-bucket-mb: not with --strategy (behind's first bucket has the cap of the others)")
    sparse_schemes = [s for s in schemes if s != DENSE] or [DENSE]
    runs = []
    for name in names:
        if name != "none":
            Strategy(name, comp, args.sparsifier, args.bucket_mb if name == "behind" else None)  # checks now
        for degree in degrees if name in ("none", "behind") else [None]:
            kw = dict(compression=comp, sparsifier=args.sparsifier, degree=degree,
                      bucket_mb=args.bucket_mb if name in ("none", "behind") else None)
            for scheme in sparse_schemes if name != "none" else [DENSE]:
                if scheme == DENSE and name != "none":
                    raise ConfigError(f"--strategy {name}: needs a sparse --scheme for the compressed buckets")
                runs.append((name, scheme, kw))
    return runs


def _numbers(text: str, flag: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(f"{flag} {text}: expected numbers separated by commas") from None


def cmd_iteration(args: argparse.Namespace) -> int:
    """Run every (cluster size, scheme) and print/write the results."""
    from tqdm import tqdm

    from zensim.memo import Memo
    from zensim.net.costs import Costs
    from zensim.report.export import to_csv, to_json
    from zensim.report.iteration import (bucket_table, iteration_rows, iteration_table, iteration_trace,
                                         throughput_figure)
    from zensim.report.outputs import plot_format, table_files
    from zensim.report.provenance import provenance
    from zensim.train.buckets import make_bucketing
    from zensim.train.iteration import check_scheme, iteration_records, simulate_iteration
    from zensim.train.syncs import DENSE

    machines = _machines(args.machines)
    reqs = [ClusterRequest.from_args(args, machines=m) for m in machines]
    if reqs[0].model not in MODELS:
        raise ConfigError(f"--model {reqs[0].model}: training iterations need a network model with a timeline "
                          f"({', '.join(MODELS)})")
    schemes = [s.strip() for s in args.scheme.split(",") if s.strip()]
    try:
        options = json.loads(args.options) if args.options else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--options: not JSON ({exc.msg})") from None
    if not isinstance(options, dict):
        raise ConfigError("--options: expected a JSON object")
    for name in schemes:
        check_scheme(name, options)
    if not args.trace and any(s != DENSE for s in schemes):
        raise ConfigError("--trace: needed for a sparse scheme (without a trace every tensor is dense)")
    for flag, value, low in (("--iterations", args.iterations, 1), ("--first-iteration", args.first_iteration, 0),
                             ("--timeline-gpus", args.timeline_gpus, 1)):
        if value is not None and value < low:
            raise ConfigError(f"{flag} {value}: must be at least {low}")
    outs, paths = results.plan(args, inputs=[args.trace, args.layers, args.profile])
    if not args.compute_scale > 0:
        raise ConfigError(f"--compute-scale {args.compute_scale}: must be positive")
    profile = layer_profile(args).scaled(args.compute_scale)
    runs = strategy_runs(args, schemes) if args.strategy else None
    bucketing = make_bucketing(args.bucketing or "ddp", args.bucket_mb if runs is None else None, args.first_bucket_mb)
    sparse = args.sparse_tensors.split(",") if args.sparse_tensors else None
    keep = "timeline" in paths
    records = []
    per_cluster = len(runs) if runs is not None else len(schemes) + (DENSE not in schemes)
    bar = tqdm(total=len(machines) * per_cluster, desc="iteration", unit="run", disable=None, leave=False,
               file=sys.stderr)
    dense_times: Memo[dict[str, float]] = Memo()  # the dense algorithms' times alone, for every run here
    for req in reqs:
        cluster, calib = req.build()
        costs = Costs.of(cluster, calib)
        common = dict(model=req.model, layout=req.layout, iterations=args.iterations,
                      dense_work=args.dense_work, shared_host=args.shared_host, dense_algorithm=args.dense_algorithm,
                      model_options=req.model_options, dense_times=dense_times)
        dense = simulate_iteration(profile, DENSE, costs, bucketing=bucketing, **common)
        if runs is not None:
            from zensim.train.fusion.schedule import run_strategy

            for name, scheme, kw in runs:
                records.append(run_strategy(name, profile, scheme, costs, dense=dense, trace=args.trace, sparse=sparse,
                                            first_iteration=args.first_iteration, options=options, **kw, **common))
                bar.update()
        else:
            records += iteration_records(profile, schemes, costs, dense=dense, done=bar.update, trace=args.trace,
                                         bucketing=bucketing, sparse_buckets=args.sparse_buckets or "own",
                                         dense_above=args.dense_above,
                                         sparse=sparse, first_iteration=args.first_iteration, options=options,
                                         **common)
            bar.update()
        if not keep:
            for rec in records:
                rec.run = None
    bar.close()
    made = provenance(getattr(args, "command_line", None))
    for rec in records:
        rec.provenance = made
    files = table_files(paths, lambda: to_csv(iteration_rows(records)))
    if "timeline" in paths:
        files[paths["timeline"]] = json.dumps(iteration_trace(records, args.timeline_gpus))
    if "plot" in paths:
        from zensim.report.plots import figure_bytes

        title = (f"{profile.workload or 'model'} on {profile.device}, batch {profile.batch_size}/GPU, "
                 f"{records[0].cluster.split(',', 1)[1].strip()}, {args.model}")
        if runs is not None:
            from zensim.train.fusion.plots import strategy_plot

            files[paths["plot"]] = strategy_plot(records, title, plot_format(paths["plot"]))
        else:
            files[paths["plot"]] = figure_bytes(throughput_figure(records, title), plot_format(paths["plot"]))
    outs.write(files)
    if args.json:
        print(to_json([r.to_dict() for r in records]))
        return 0
    print(iteration_table(records))
    if args.buckets:
        for rec in records:
            print()
            print(bucket_table(rec))
    return 0
