"""`zensim trace {stats,synth,scale,merge}`: describe, generate, extrapolate and assemble trace files."""

from __future__ import annotations

import argparse
import json
from typing import Any

from zensim.atomic import check_new_output
from zensim.errors import ConfigError
from zensim.report.table import format_table
from zensim.request import at_least

VALUE_CHOICES = ("none", "float32", "float16")
FORCE_HELP = "replace -o if it exists"
COHESION_WARN = 0.02  # `trace scale` warns above this cohesion and 3 standard errors (docs/trace-scale.md)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `trace` command group and its subcommands."""
    trace = subparsers.add_parser("trace", help="trace files: statistics, synthetic traces, merging shards")
    sub = trace.add_subparsers(dest="trace_command", required=True, metavar="SUBCOMMAND")

    stats = sub.add_parser("stats", help="density, overlap, densification and skewness of a trace")
    stats.add_argument("path", help="trace file (.zt)")
    stats.add_argument("--json", action="store_true", help="print the statistics as JSON")
    stats.add_argument("--pairs", type=int, default=256, help="worker pairs sampled for the overlap (default 256)")
    stats.add_argument("--seed", type=int, default=0, help="seed of the pair sample (default 0)")
    stats.set_defaults(func=cmd_stats)

    synth = sub.add_parser("synth", help="write a synthetic trace with requested statistics")
    synth.add_argument("--workers", type=int, required=True)
    size = synth.add_mutually_exclusive_group(required=True)
    size.add_argument("--numel", type=int, help="elements of the single tensor 'synthetic'")
    size.add_argument("--tensors", help="several tensors: name=numel,name=numel,...")
    synth.add_argument("--density", type=float, required=True, help="fraction of non-zeros per worker")
    mix = synth.add_mutually_exclusive_group()
    mix.add_argument("--overlap", type=float, default=None, help="mean pairwise overlap (default: independent sets)")
    mix.add_argument("--densification", metavar="K:G", default=None,
                     help="instead of --overlap: the overlap at which the union of K workers is G times one "
                          "worker's indices (gamma^K = G; solved on the largest tensor)")
    synth.add_argument("--skew", type=float, default=1.0, help="skewness ratio s^8 (1 = uniform, default 1)")
    synth.add_argument("--skew-inner", default="",
                       help="skews of nested levels inside part 0, e.g. 14 or 4,3: s^64 = s x 14 (default: part 0 uniform)")
    synth.add_argument("--row", type=int, default=1,
                       help="draw whole rows of this many elements (an embedding table's gradient; default 1)")
    synth.add_argument("--iterations", type=int, default=1)
    synth.add_argument("--seed", type=int, default=0)
    synth.add_argument("--values", choices=VALUE_CHOICES, default="none", help="store values (default none)")
    synth.add_argument("--batch-size", type=int, default=None, help="per-worker batch size to record")
    synth.add_argument("-o", "--output", required=True, help="trace file to write (not an existing file)")
    synth.add_argument("--force", action="store_true", help=FORCE_HELP)
    synth.set_defaults(func=cmd_synth)

    scale = sub.add_parser("scale", help="a trace of more workers drawn from a model fitted on a trace "
                                         "(docs/trace-scale.md)")
    scale.add_argument("trace", help="source trace file (.zt)")
    scale.add_argument("--workers", type=int, required=True, help="workers of the new trace")
    scale.add_argument("--fit-workers", type=int, default=None,
                       help="fit on the source's first n workers (default all)")
    scale.add_argument("--iterations", type=int, default=None, help="iterations to draw (default the source's)")
    scale.add_argument("--seed", type=int, default=0)
    scale.add_argument("--json", action="store_true", help="print the new trace's provenance (the model) as JSON")
    scale.add_argument("-o", "--output", required=True, help="trace file to write (not an existing file)")
    scale.add_argument("--force", action="store_true", help=FORCE_HELP)
    scale.set_defaults(func=cmd_scale)

    merge = sub.add_parser("merge", help="merge per-rank capture shards into one trace")
    merge.add_argument("shards", nargs="+", help="shard files written by the capture hooks")
    merge.add_argument("-o", "--output", required=True, help="trace file to write (not an existing file)")
    merge.add_argument("--force", action="store_true", help=FORCE_HELP)
    merge.set_defaults(func=cmd_merge)


def cmd_stats(args: argparse.Namespace) -> int:
    """Print the statistics of a trace as tables or JSON."""
    from zensim.trace.format import Trace
    from zensim.trace.stats import trace_stats

    at_least("--pairs", args.pairs, 1)
    at_least("--seed", args.seed, 0)
    with Trace.open(args.path) as trace:
        stats = trace_stats(trace, pairs=args.pairs, seed=args.seed, progress=True)
    print(json.dumps(stats, indent=2) if args.json else render_stats(stats))
    return 0


def render_stats(stats: dict[str, Any]) -> str:
    """Human-readable tables: summary per scope, then densification and skewness per scope."""
    info = stats["trace"]
    scopes = [("(all)", stats)] + list(stats["tensors"].items())
    head = [
        f"trace {info['path']}: {info['workers']} workers, {info['iterations']} iterations, "
        f"{info['numel']} elements in {len(stats['tensors'])} tensor(s), values {info['value_dtype'] or 'none'}",
        f"workload: {info['workload'] or '-'}; provenance: {json.dumps(info['provenance'], sort_keys=True)}",
        f"overlap over {stats['overlap']['pairs']} worker pairs per iteration; spread is over iterations and "
        "workers/pairs/groups",
    ]
    summary = format_table(
        [
            [name, s["numel"], s["density"]["mean"], s["density"]["min"], s["density"]["max"],
             s["overlap"]["mean"], s["overlap"]["p10"], s["overlap"]["median"], s["overlap"]["p90"]]
            for name, s in scopes
        ],
        ["tensor", "numel", "density", "min", "max", "overlap", "p10", "median", "p90"],
    )
    dens = format_table(
        [[name, r["k"], r["groups"], r["mean"], r["min"], r["max"]] for name, s in scopes for r in s["densification"]],
        ["tensor", "k workers", "groups", "densification", "min", "max"],
    )
    skew = format_table(
        [[name, r["k"], r["mean"], r["min"], r["max"]] for name, s in scopes for r in s["skewness"]],
        ["tensor", "k parts", "skewness", "min", "max"],
    )
    return "\n\n".join(["\n".join(head), summary, dens, skew])


def parse_tensors(text: str) -> list[tuple[str, int]]:
    """Parse 'name=numel,name=numel' into (name, numel) pairs."""
    out = []
    for item in text.split(","):
        name, _, numel = item.partition("=")
        if not name or not numel.isdigit() or int(numel) < 1:
            raise ConfigError(f"--tensors {text!r}: expected name=numel,name=numel,... with positive counts")
        out.append((name, int(numel)))
    return out


def cmd_synth(args: argparse.Namespace) -> int:
    """Generate a synthetic trace."""
    from dataclasses import replace

    from zensim.trace.synth import SynthParams, overlap_for_densification, synthesize

    check_new_output(args.output, "-o", args.force)
    if args.numel is not None:
        at_least("--numel", args.numel, 1)
    tensors = [("synthetic", args.numel)] if args.numel is not None else parse_tensors(args.tensors)
    params = SynthParams(args.density, args.overlap, args.skew, args.row, _floats(args.skew_inner, "--skew-inner"))
    if args.densification is not None:
        k, gamma = _densification(args.densification)
        overlap = overlap_for_densification(max(n for _, n in tensors), params, k, gamma)
        params = replace(params, overlap=overlap)
        print(f"--densification {k}:{gamma:g}: overlap {overlap:.4f}")
    value_dtype = None if args.values == "none" else args.values
    synthesize(args.output, args.workers, tensors, params, args.iterations, args.seed, value_dtype,
               args.batch_size, progress=True)
    print(f"wrote {args.output}")
    return 0


def _densification(text: str) -> tuple[int, float]:
    """K:G of --densification."""
    try:
        k, gamma = text.split(":")
        return int(k), float(gamma)
    except ValueError:
        raise ConfigError(f"--densification {text}: expected K:G, e.g. 8:1.86") from None


def _floats(text: str, flag: str) -> tuple[float, ...]:
    """Comma-separated numbers (empty: none)."""
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"{flag} {text}: expected numbers separated by commas") from None


def cmd_scale(args: argparse.Namespace) -> int:
    """Fit the model on the source trace and write the scaled trace; print the model per tensor."""
    from zensim.trace.scale import scale

    check_new_output(args.output, "-o", args.force)
    prov = scale(args.trace, args.output, args.workers, args.fit_workers, args.iterations, args.seed, progress=True)
    if args.json:
        print(json.dumps(prov, indent=2))
        return 0
    src = prov["source"]
    print(f"fitted on workers 0..{src['fit_workers'] - 1} of {src['path']} (sha256 {src['sha256'][:12]}), "
          f"{src['iterations']} iteration(s); drew {args.workers} workers, seed {args.seed}")
    print(format_table(
        [[name, m["row"], m["density"], m["persistence"], m["cohesion"], len(m["segments"]) - 1, m["samples"]]
         for name, m in prov["model"].items()],
        ["tensor", "row", "density", "persistence", "cohesion", "segments", "fitted chunks"]))
    for name, m in prov["model"].items():
        if m["cohesion"] is not None and m["cohesion"] > max(COHESION_WARN, 3 * m["cohesion_se"]):  # None: 1 iteration
            print(f"warning: tensor {name}: workers of one iteration share more than workers of different "
                  f"iterations (cohesion {m['cohesion']:.3f} +- {m['cohesion_se']:.3f}); the model draws them independently, so the "
                  "union of many workers is overestimated (docs/trace-scale.md)")
    print(f"wrote {args.output}")
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    """Merge capture shards (zensim.trace.merge, the capture layer) into one trace."""
    from zensim.trace.merge import merge_shards

    check_new_output(args.output, "-o", args.force)
    merge_shards(args.shards, args.output)
    print(f"wrote {args.output}")
    return 0
