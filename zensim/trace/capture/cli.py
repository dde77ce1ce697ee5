"""`zensim capture`: train a built-in workload with virtual workers and write its gradient-index trace."""

from __future__ import annotations

import argparse

from zensim.trace.capture.names import SPARSIFIERS, WORKLOADS


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `capture` subcommand."""
    p = sub.add_parser(
        "capture",
        help="capture a trace from a built-in workload with virtual workers",
        description="Train a built-in workload with N virtual data-parallel workers (exactly synchronous "
        "data parallelism in one process) and record every worker's gradient indices. For your own "
        "training script use the DDP hook (docs/capture.md) and `zensim trace merge`.",
    )
    p.add_argument("--workload", required=True, choices=WORKLOADS)
    p.add_argument("--workers", type=int, required=True, help="number of data-parallel workers")
    p.add_argument("--iterations", type=int, required=True, help="recorded iterations")
    p.add_argument("--warmup", type=int, default=0, help="training steps before the first recorded one")
    p.add_argument("--sparsifier", choices=SPARSIFIERS, help="default: natural (gpt-topk: topk)")
    p.add_argument("--density", type=float, help="fraction kept by topk / dgc (gpt-topk default 0.01)")
    p.add_argument("--values", action="store_true", help="store float32 values too")
    p.add_argument("--batch-size", type=int, help="per-worker micro-batch (sequences or samples)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus", help="plain-text corpus for the language models (default: installed KJV)")
    p.add_argument("-o", "--output", required=True, help="trace file to write")
    p.set_defaults(func=cmd_capture)


def cmd_capture(args: argparse.Namespace) -> int:
    """Run the capture; errors in arguments or a missing corpus are one line."""
    from zensim.errors import ConfigError
    from zensim.trace.capture.run import capture
    from zensim.trace.capture.workloads import make_workload

    if args.batch_size is not None and args.batch_size < 1:
        raise ConfigError(f"--batch-size {args.batch_size}: must be at least 1")
    workload = make_workload(args.workload, args.batch_size, args.seed, args.corpus)
    capture(workload, args.output, args.workers, args.iterations, args.warmup, args.sparsifier, args.density,
            args.values)
    print(f"wrote {args.output}: {args.workload}, {args.workers} workers, {args.iterations} iterations")
    return 0
