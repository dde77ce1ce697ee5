"""The rank program: `python -m emulate.rank ...`, one process per rank (namespaces or torchrun).

Joins the torch.distributed group (gloo on CPU, NCCL on CUDA), runs a task and writes this rank's
results as JSON. Tasks: `run` (stage programs of the named schemes on this rank's worker data from
a trace, plus torch's dense and sparse all_reduce as peers) and `netcal` (network calibration
samples). Rank, world size and rendezvous come from the command line or, under torchrun, from the
RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT environment.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from zensim.atomic import write_atomic
from zensim.errors import ConfigError, ZensimError
from zensim.run.torchdist import Channels


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command line of the rank program (see docs/emulation.md)."""
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(prog="python -m emulate.rank", description=__doc__)
    p.add_argument("--rank", type=int, default=None, help="this rank (default: $RANK)")
    p.add_argument("--world", type=int, default=None, help="number of ranks (default: $WORLD_SIZE)")
    p.add_argument("--master-addr", default=None, help="rendezvous address (default: $MASTER_ADDR)")
    p.add_argument("--master-port", type=int, default=None, help="rendezvous port (default: $MASTER_PORT)")
    p.add_argument("--backend", choices=("gloo", "nccl"), default="nccl" if cuda else "gloo")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if cuda else "cpu")
    p.add_argument("--kernels", choices=("auto", "numpy", "torch"), default="auto",
                   help="where a scheme's local work runs: torch on --device, or numpy on the host; auto: torch "
                   "on CUDA, numpy on the CPU (faster there: benchmarks/device.py, steps)")
    p.add_argument("--ifname", default=None, help="interface gloo binds (sets GLOO_SOCKET_IFNAME)")
    p.add_argument("--task", choices=("run", "netcal"), default="run")
    p.add_argument("--trace", default=None, help="trace file (task run)")
    p.add_argument("--iteration", type=int, default=0, help="trace iteration to synchronize")
    p.add_argument("--schemes", default="", help="comma-separated scheme names (task run)")
    p.add_argument("--options", default="{}", help="scheme options as JSON")
    p.add_argument("--peers", default="dense,sparse", help="torch peers: dense, sparse, both or none")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--warmup", type=int, choices=(0, 1), default=1, help="one untimed run per scheme/peer first")
    p.add_argument("--no-check", action="store_true", help="skip the check against the dense sum")
    p.add_argument("--out", default="emulate-rank{rank}.json", help="output JSON ({rank} is replaced)")
    p.add_argument("--progress", default=None, help="file where rank 0 writes 'done total'")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a collective may wait")
    return p.parse_args(argv)


def _env_int(name: str, flag: str) -> int:
    """An integer from torchrun's environment, or a ConfigError naming the flag that replaces it."""
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        raise ConfigError(f"{flag}: not given and ${name} is not an integer (run under torchrun or pass {flag})") from None


def init_group(args: argparse.Namespace) -> tuple[int, int, torch.device]:
    """Join the process group; returns (rank, world size, device)."""
    rank = args.rank if args.rank is not None else _env_int("RANK", "--rank")
    world = args.world if args.world is not None else _env_int("WORLD_SIZE", "--world")
    if not 0 <= rank < world:
        raise ConfigError(f"--rank: {rank} out of range for a world of {world}")
    if args.master_addr:
        os.environ["MASTER_ADDR"] = args.master_addr
    if args.master_port:
        os.environ["MASTER_PORT"] = str(args.master_port)
    if args.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = args.ifname
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank % max(torch.cuda.device_count(), 1))))
        device = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group(args.backend, rank=rank, world_size=world, timeout=timedelta(seconds=args.timeout))
    return rank, world, device


class Progress:
    """Rank 0 keeps 'done total' in a small file the launcher turns into a progress bar."""

    def __init__(self, path: str | None, rank: int, total: int) -> None:
        self.path = Path(path) if path and rank == 0 else None
        self.total, self.done = total, 0
        self._write()

    def step(self) -> None:
        """One more unit done."""
        self.done += 1
        self._write()

    def _write(self) -> None:
        if self.path is not None:
            write_atomic(self.path, f"{self.done} {self.total}\n")


def main(argv: list[str] | None = None) -> int:
    """Entry point of one rank: a user error is one line on stderr and exit status 2."""
    args = parse_args(argv)
    try:
        return _run(args)
    except ZensimError as exc:
        print(f"zensim: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    """Join the group, run the task, write this rank's JSON."""
    rank, world, device = init_group(args)
    try:
        channels = Channels.open()
        if args.task == "netcal":
            from emulate import netcal

            progress = Progress(args.progress, rank, 1)
            out = {"samples": netcal.measure(rank, world, device, channels)}
            progress.step()
        else:
            from emulate import driver

            out = driver.run_task(args, rank, world, device, Progress, channels)
        out.update(rank=rank, world=world, backend=args.backend, device=str(device), task=args.task)
        write_atomic(args.out.format(rank=rank), json.dumps(out))
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
