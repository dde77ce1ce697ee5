"""`zensim capture`: a gradient-index trace of a built-in workload (virtual workers) or of your DDP script
(the recording hook in every torchrun rank, or N virtual ranks in this process). The request and its
work: zensim.trace.capture.request."""

from __future__ import annotations

import argparse

from zensim.request import add_arguments
from zensim.trace.capture.request import CaptureRequest


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `capture` subcommand."""
    p = sub.add_parser(
        "capture",
        help="capture a trace: a built-in workload or your DDP script (virtual workers, hook or virtual ranks)",
        description="Train a built-in workload with N virtual data-parallel workers (exactly synchronous "
        "data parallelism in one process) and record every worker's gradient indices; or (--hook) run "
        "your own DDP training script, under torchrun, with the recording hook: each rank writes the "
        "shard -o (containing {rank}); combine them with `zensim trace merge`; or (--script, --ranks N) "
        "run your DDP script once in this process as N virtual ranks, each reading the micro-batches its "
        "DistributedSampler gives it, and write their trace -o. See docs/capture.md.",
    )
    add_arguments(p, CaptureRequest)
    p.set_defaults(func=cmd_capture)


def cmd_capture(args: argparse.Namespace) -> int:
    """Run the capture; errors in arguments or a missing corpus are one line."""
    print(CaptureRequest.from_args(args).run())
    return 0
