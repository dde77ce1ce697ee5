"""`zensim capture`: a gradient-index trace of a built-in workload (virtual workers) or of your DDP script
(the recording hook in every torchrun rank, or N virtual ranks in this process)."""

from __future__ import annotations

import argparse
import os

from zensim.atomic import check_new_output
from zensim.errors import ConfigError
from zensim.trace.capture.names import SPARSIFIERS, WORKLOADS

TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


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
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--workload", choices=list(WORKLOADS), help="built-in workload (virtual workers)")
    source.add_argument("--hook", metavar="SCRIPT", help="your DDP training script (arguments after --)")
    source.add_argument("--script", metavar="SCRIPT", help="your DDP training script, run once here as "
                        "--ranks N virtual ranks (arguments after --)")
    p.add_argument("--ranks", type=int, help="with --workload: virtual workers; with --script: virtual ranks N")
    p.add_argument("--iterations", type=int, required=True, help="recorded iterations")
    p.add_argument("--warmup", type=int, default=0, help="training steps before the first recorded one")
    p.add_argument("--sparsifier", choices=SPARSIFIERS, help="default: natural (gpt-topk: topk)")
    p.add_argument("--density", type=float, help="fraction kept by topk / dgc (gpt-topk default 0.01)")
    p.add_argument("--values", action="store_true", help="store the sent values too")
    p.add_argument("--dense", action="store_true",
                   help="record every worker's whole gradient before any selection (a dense-gradient trace, "
                   "for replaying sparsifiers and schemes; see docs/trace-format.md for sizes)")
    p.add_argument("--value-dtype", choices=("float32", "float16"), default="float32",
                   help="how values are stored (with --values or --dense; default float32)")
    p.add_argument("--batch-size", type=int, help="per-worker micro-batch (sequences or samples); with --hook "
                   "only recorded in the provenance (default: the script's DataLoader batch size)")
    p.add_argument("--params", help="with --hook or --script: parameters to record, comma-separated globs such as "
                   "'embedding.*' (default: every trainable parameter)")
    p.add_argument("--skip-params", help="with --hook or --script: parameters not to record, comma-separated globs such as '*.bias'")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus", help="plain-text corpus for the language models (default: installed KJV)")
    p.add_argument("-o", "--output", required=True, help="trace file to write (--hook: shard path with {rank})")
    p.add_argument("--force", action="store_true", help="replace -o (--hook: this rank's shard) if it exists")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="with --hook or --script: -- then the script's arguments")
    p.set_defaults(func=cmd_capture)


def cmd_capture(args: argparse.Namespace) -> int:
    """Run the capture; errors in arguments or a missing corpus are one line."""
    from zensim.trace.capture.run import capture
    from zensim.trace.capture.workloads import make_workload

    script_args = args.script_args[1:] if args.script_args[:1] == ["--"] else args.script_args
    if args.seed < 0:
        raise ConfigError(f"--seed {args.seed}: must be non-negative")
    if args.batch_size is not None and args.batch_size < 1:
        raise ConfigError(f"--batch-size {args.batch_size}: must be at least 1")
    # before the capture, which may train long; --hook: this rank's shard (torchrun's RANK, else rank 0's)
    check_new_output(args.output.replace("{rank}", os.environ.get("RANK", "0")) if args.hook else args.output,
                     "-o", args.force)
    if args.hook:
        return capture_hooked(args, script_args)
    if args.script:
        return capture_virtual_ranks(args, script_args)
    if script_args:
        raise ConfigError(f"{script_args[0]}: unexpected argument (script arguments go with --hook or --script)")
    for name in ("params", "skip_params"):
        if getattr(args, name) is not None:
            raise ConfigError(f"--{name.replace('_', '-')}: only with --hook or --script (a workload records its own parameters)")
    if args.ranks is None:
        raise ConfigError("--ranks: required with --workload")
    workload = make_workload(args.workload, args.batch_size, args.seed, args.corpus)
    capture(workload, args.output, args.ranks, args.iterations, args.warmup, args.sparsifier, args.density,
            args.values, dense=args.dense, value_dtype=args.value_dtype)
    print(f"wrote {args.output}: {args.workload}, {args.ranks} workers, {args.iterations} iterations")
    return 0


def _globs(text: str | None, what: str) -> list[str] | None:
    """A comma list of parameter-name globs (None if not given)."""
    if text is None:
        return None
    globs = [g.strip() for g in text.split(",") if g.strip()]
    if not globs:
        raise ConfigError(f"{what}: expected comma-separated parameter names or globs, got {text!r}")
    return globs


def capture_hooked(args: argparse.Namespace, script_args: list[str]) -> int:
    """Run the user's script with the recording hook on its DDP model."""
    from zensim.trace.capture.hookrun import run_hooked
    from zensim.trace.capture.run import check_steps
    from zensim.trace.capture.sparsify import make_sparsifier

    for name in ("ranks", "corpus"):
        if getattr(args, name) is not None:
            raise ConfigError(f"--{name.replace('_', '-')}: not used with --hook (the script decides)")
    kind = args.sparsifier or "natural"
    check_steps(args.iterations, args.warmup)  # before the script runs: it may take long to reach its DDP model
    make_sparsifier(kind, args.density, args.seed)
    try:
        recorder = run_hooked(args.hook, script_args, args.output, args.iterations, batch_size=args.batch_size,
                              warmup=args.warmup, sparsifier=kind, density=args.density, values=args.values,
                              seed=args.seed, dense=args.dense, value_dtype=args.value_dtype, workload=args.hook,
                              params=_globs(args.params, "--params"),
                              skip_params=_globs(args.skip_params, "--skip-params") or ())
    except ValueError as exc:
        # torch's env:// rendezvous (init_process_group without torchrun's RANK, WORLD_SIZE, MASTER_ADDR, ...)
        if "env:// rendezvous" not in str(exc):
            raise
        missing = next((v for v in TORCHRUN_ENV if v not in os.environ), None)
        raise ConfigError(f"--hook {args.hook}: the script initializes torch.distributed from torchrun's "
                          f"environment, and {missing or 'part of it'} is not set: start it under torchrun "
                          f"(torchrun --nproc-per-node N $(which zensim) capture --hook {args.hook} ...; docs/capture.md)") from None
    print(f"rank {recorder.rank}: wrote {recorder.path}")
    return 0


def capture_virtual_ranks(args: argparse.Namespace, script_args: list[str]) -> int:
    """Run the user's script once as --ranks N virtual ranks and write their trace."""
    from zensim.trace.capture.ranks import capture_script

    if args.sparsifier not in (None, "natural"):
        raise ConfigError(f"--sparsifier {args.sparsifier}: --script records natural sparsity only (top-k and DGC "
                          "would need every rank's residual; docs/capture.md)")
    if args.ranks is None:
        raise ConfigError("--ranks: required with --script (the virtual ranks N)")
    for name in ("corpus", "density"):
        if getattr(args, name) is not None:
            raise ConfigError(f"--{name}: not used with --script (the script decides; natural sparsity)")
    if args.dense:
        raise ConfigError("--dense: not with --script")
    capture_script(args.script, script_args, args.output, args.ranks, args.iterations, args.warmup,
                   params=_globs(args.params, "--params"), skip_params=_globs(args.skip_params, "--skip-params") or (),
                   values=args.values, value_dtype=args.value_dtype, batch_size=args.batch_size)
    print(f"wrote {args.output}: {args.script}, {args.ranks} virtual ranks, {args.iterations} iterations")
    return 0
