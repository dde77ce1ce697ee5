"""The options and the command of `zensim exdyna-loop` (zensim.cli.exdynaloop) and of
benchmarks/exdyna_loop.py: ExDyna selecting inside the training of a language model (n virtual workers
on the device at hand), per iteration its density, f(t), every worker's k_i, the threshold, the
partition boundaries and the loss, beside a static-layout shadow seeing the same gradients
(zensim.replay.selection). Free of torch, tqdm and the CLI's other commands until the command runs:
the benchmark runs where only torch, numpy, scipy and numba are installed (a GPU machine)."""

from __future__ import annotations

import argparse
import csv
import json
import os
import time

from zensim.atomic import check_output, write_atomic
from zensim.errors import ConfigError
from zensim.extras import require_parquet
from zensim.net.models import MODELS
from zensim.request import at_least

HELP = "ExDyna's selection statistics inside LSTM language-model training, dynamic vs static"
DESCRIPTION = (
    "Train a word-level LSTM language model (embedding, LSTM layers, adaptive or full softmax) with N virtual "
    "data-parallel workers on one device, each on its own batch with its own residuals; ExDyna selects inside "
    "the loop and its sum trains the model, while a static-layout ExDyna sees the same gradients. "
    "Writes per iteration k'/k, f(t), every worker's k_i, the threshold, the partition boundaries, the loss, "
    "the exchange's bytes and simulated time (CSV, one row an iteration, written as it goes; JSON with "
    "provenance, timings and the claims' summary at the end). The paper's size (24.4M parameters): --embed 1100 "
    "--hidden 650 --layers 2 (docs/replay.md).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's options."""
    p.add_argument("--ranks", "--workers", dest="workers", type=int, default=16,
                   help="virtual workers (default 16, the paper's)")
    p.add_argument("--density", type=float, default=0.001, help="user-set density d (default 0.001, the paper's)")
    p.add_argument("--iterations", type=int, default=2000, help="at most this many iterations (default 2000)")
    p.add_argument("--seconds", type=float, default=None,
                   help="wall-clock budget from the start of the command: no iteration is started that would "
                   "likely end after it; the outputs are then written (default: none)")
    p.add_argument("--embed", type=int, default=128, help="embedding width (default 128)")
    p.add_argument("--hidden", type=int, default=128, help="LSTM hidden width (default 128)")
    p.add_argument("--layers", type=int, default=2, help="LSTM layers (default 2)")
    p.add_argument("--softmax", default="adaptive",
                   help="adaptive (default) or full: a linear layer over the whole vocabulary")
    p.add_argument("--batch-size", "--batch", dest="batch", type=int, default=32,
                   help="sequences per worker and iteration (default 32, the paper's)")
    p.add_argument("--seq-len", type=int, default=35, help="tokens per sequence (default 35)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus", help="plain-text corpus (default: $ZENSIM_CORPUS, else the installed KJV)")
    p.add_argument("--device", default="auto", help="auto (cuda when present), cpu, cuda or cuda:N (default auto)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--batched", action="store_true",
                   help="all workers' forward and backward in one batched pass (zensim.replay.selection_batch; "
                        "holds every worker's activations at once; docs/replay.md)")
    p.add_argument("--nic", default="25Gbps", help="NIC bandwidth per worker for the simulated time (default 25Gbps)")
    p.add_argument("--nic-latency", default=None, help="per-message latency, e.g. 5us (default 0)")
    p.add_argument("--model", default="fifo", help="bandwidth sharing model (default fifo)")
    p.add_argument("--price-every", type=int, default=1,
                   help="simulate the exchange's time every N iterations, 0 never (default 1; bytes every iteration)")
    p.add_argument("--csv", required=True, help="per-iteration CSV (written as the run goes)")
    p.add_argument("--json", default=None,
                   help="provenance, configuration, timings and the claims' summary (the rows are in --csv)")
    p.add_argument("--parquet", default=None, metavar="FILE",
                   help="also write the --csv table as Parquet at the end (same columns and values; needs pip install "
                        "'zensim[parquet]')")
    p.add_argument("--plot", default=None, help="PNG of density, f(t) and loss against the iteration (matplotlib)")
    p.set_defaults(func=command)


def pick_device(name: str) -> str:
    """'auto' -> 'cuda' when torch sees a GPU, else 'cpu'; a named CUDA device must exist."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cpu":
        return name
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(f"--device {name}: torch sees no CUDA device here")
        try:
            torch.device(name)
        except RuntimeError as err:
            raise ConfigError(f"--device {name}: {err}") from None
        return name
    raise ConfigError(f"--device {name}: choose auto, cpu, cuda or cuda:N")


def peak_memory(device: str) -> int:
    """The run's peak memory: on CUDA the most the device held in tensors, else this process's resident set."""
    import torch

    if device.startswith("cuda"):
        return int(torch.cuda.max_memory_allocated(device))
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def command(args: argparse.Namespace) -> int:
    """Build the workload and the loop, run it within the budget, write CSV, JSON and plot."""
    began = time.monotonic()
    for name, value in (("--ranks", args.workers), ("--iterations", args.iterations), ("--threads", args.threads)):
        at_least(name, value, 1)
    if not 0 < args.density <= 1:
        raise ConfigError(f"--density {args.density}: must be in (0, 1]")
    if args.seconds is not None and not args.seconds > 0:
        raise ConfigError(f"--seconds {args.seconds}: must be positive")
    if args.model not in MODELS:
        raise ConfigError(f"--model {args.model}: unknown (choose from {', '.join(MODELS)})")
    for option, path in (("--csv", args.csv), ("--json", args.json), ("--parquet", args.parquet), ("--plot", args.plot)):
        if path is not None:
            check_output(path, option)
    if args.parquet:
        require_parquet("--parquet")
    import torch

    from zensim.net.costs import Costs
    from zensim.replay.selection import Pricer, Row, SelectionLoop, load_rows, run, summarize
    from zensim.report.export import to_parquet
    from zensim.report.provenance import provenance
    from zensim.sim.cluster import build_cluster
    from zensim.trace.capture.corpus import load_corpus
    from zensim.trace.capture.workloads.lstm import LSTMLM

    device = pick_device(args.device)
    torch.set_num_threads(args.threads)
    cluster, profile = build_cluster(args.workers, 1, nic=args.nic, nic_latency=args.nic_latency)
    text = load_corpus(args.corpus)
    work = LSTMLM(text.tokens, text.vocab_size, batch_size=args.batch, seed=args.seed, embed=args.embed,
                  hidden=args.hidden, seq_len=args.seq_len, corpus=text.name, layers=args.layers,
                  softmax=args.softmax)
    pricer = Pricer(args.workers, sum(p.numel() for p in work.model.parameters()), Costs.of(cluster, profile),
                    args.model) if args.price_every > 0 else None
    loop = SelectionLoop(work, args.workers, args.density, device, pricer, args.price_every, args.batched)
    made = {"provenance": provenance(args.command_line),
            "workload": {"name": "lstm-lm", **work.meta(), "tokens": int(len(text.tokens)), "batch": args.batch,
                         "trainable": loop.numel, "seed": args.seed, "optimizer": f"Adam lr {work.lr}"},
            "run": {"workers": args.workers, "density": args.density, "k": loop.k, "iterations": args.iterations,
                    "seconds": args.seconds, "device": device,
                    "device_name": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu",
                    "torch": torch.__version__, "threads": args.threads, "price_every": args.price_every,
                    "batched": args.batched},
            "cluster": {"describe": cluster.describe(), "nic": args.nic, "nic_latency": args.nic_latency,
                        "model": args.model}}
    print(f"exdyna-loop: {loop.numel:,} parameters ({args.embed} embed, {args.hidden} hidden, {args.layers} layers, "
          f"vocab {text.vocab_size}), {args.workers} workers, d = {args.density}, k = {loop.k}, on {device}",
          flush=True)
    with open(args.csv, "w", newline="") as out:
        writer = None

        def write(row: Row) -> None:
            nonlocal writer
            flat = row.flat()
            if writer is None:
                writer = csv.DictWriter(out, list(flat))
                writer.writeheader()
            writer.writerow(flat)
            if row.iteration % 50 == 0:
                out.flush()
                d, s = row.dynamic, row.static
                print(f"  t {row.iteration}: loss {row.loss:.3f}  k'/k {d.selected / row.k:.3f} / "
                      f"{s.selected / row.k:.3f}  f {d.f:.2f} / {s.f:.2f}  {row.wall_s:.3f} s", flush=True)

        deadline = None if args.seconds is None else began + args.seconds
        rows = run(loop, args.iterations, deadline, write)
    records = load_rows(args.csv)
    summary = summarize(records)
    elapsed = time.monotonic() - began
    stopped = "iterations" if len(rows) == args.iterations else "seconds"
    print(f"{len(rows)} iterations in {elapsed:.1f} s (stopped by --{stopped}); per iteration: "
          + ", ".join(f"{k} {v / max(1, len(rows)):.4f} s" for k, v in loop.seconds.items()))
    print(json.dumps(summary, indent=1))
    if args.json:
        doc = {**made, "stopped_by": stopped, "elapsed_s": elapsed, "peak_memory_bytes": peak_memory(device),
               "seconds_per_iteration":
               {k: v / max(1, len(rows)) for k, v in loop.seconds.items()}, "summary": summary,
               "csv": os.path.basename(args.csv)}
        write_atomic(args.json, json.dumps(doc))
    if args.parquet:
        with open(args.csv) as f:
            write_atomic(args.parquet, to_parquet(f.read()))
    if args.plot:
        from zensim.replay.selection import plot

        plot(records, f"lstm-lm {loop.numel / 1e6:.1f}M parameters, {args.workers} workers, d = {args.density}, "
             f"{device}", args.plot, args.density)
    return 0
