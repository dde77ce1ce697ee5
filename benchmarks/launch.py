"""The fixed cost of one kernel on a torch device: what a piece of local work costs before its elements.

Three figures for one small kernel (a copy of 1024 float32 values, `clone`), each the median of
`--reps` runs, printed as JSON:

- `launch_sync_us`: one launch through Python and a device synchronization (wall clock), what
  zensim's step bench pays per call on its smallest kind (`copy`), and what the simulator's default
  work model charges per piece of work (zensim/net/profiles/);
- `launch_us`: launches back to back without waiting (wall clock of `--batch` launches and one
  synchronization, divided by `--batch`): the host's issue rate, what a stream of kernels costs;
- `kernel_us`: the kernel alone on the device (CUDA events around `--batch` kernels; CUDA only);
- `sync_us`: a synchronization with nothing queued.

    PYTHONPATH=. python benchmarks/launch.py [--device cuda] [--reps 200] [--batch 1000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence


def median_us(fn: Callable[[], float], reps: int) -> float:
    """Median over `reps` calls of `fn()` (seconds), in microseconds, after two warm-up calls."""
    fn(), fn()
    return statistics.median(fn() for _ in range(reps)) * 1e6


def measure(device: str = "cuda", reps: int = 200, batch: int = 1000) -> dict:
    """The figures of the module docstring on `device`."""
    import torch

    dev = torch.device(device)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    x = torch.rand(1024, device=dev)
    sync()

    def launch_sync() -> float:
        t = time.perf_counter()
        x.clone()
        sync()
        return time.perf_counter() - t

    def launches() -> float:
        sync()
        t = time.perf_counter()
        for _ in range(batch):
            x.clone()
        sync()
        return (time.perf_counter() - t) / batch

    def idle_sync() -> float:
        t = time.perf_counter()
        sync()
        return time.perf_counter() - t

    out = {"device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else device, "torch": torch.__version__,
           "reps": reps, "batch": batch, "launch_sync_us": median_us(launch_sync, reps),
           "launch_us": median_us(launches, max(1, reps // 20)), "sync_us": median_us(idle_sync, reps)}
    if dev.type == "cuda":
        def kernels() -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(batch):
                x.clone()
            end.record()
            sync()
            return start.elapsed_time(end) / 1e3 / batch
        out["kernel_us"] = median_us(kernels, max(1, reps // 20))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Print the figures as JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--batch", type=int, default=1000)
    args = p.parse_args(argv)
    print(json.dumps(measure(args.device, args.reps, args.batch), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
