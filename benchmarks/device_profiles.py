"""Measure on the device at hand what the iteration timeline needs of it: layer profiles and local-work kernels.

Run on a GPU machine (or the CPU, `--device cpu`); writes into --out:

- `<workload>-b<batch>.layers.json`: the measured layer profile of each built-in workload (CUDA events
  on a GPU: `zensim.train.record.record_workload`);
- `annotated.trace.json` + `annotated.recorder.layers.json`: one workload profiled under torch.profiler
  with `zensim.train.kineto.annotate` while the CUDA-event recorder runs too (import the trace with
  `zensim layers import` and compare the two);
- `work.json`: seconds of torch kernels standing for each kind of a scheme's local work, at sizes
  2^10 .. 2^--max-log2 elements (medians of --reps after a warm-up), and the time of a launch-bound
  kernel (`launch_s`): hash = a multiplicative hash of int64 ids and a stable sort by partition (what
  ZEN's hashing does: group ids by hashed partition), merge = concatenate sorted COO chunks, unique,
  index_add the values, encode = gather values at ids, decode = index_add into a dense tensor,
  copy = a device copy of float32.

    python benchmarks/device_profiles.py --device cuda --out OUT [--corpus kjv.txt] [--max-log2 26]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from zensim.train.clocks import clock_for, describe_device
from zensim.train.hooks import LayerRecorder
from zensim.train.kineto import annotate
from zensim.train.record import record_workload, to_device
from zensim.trace.capture.workloads import make_workload

WORKLOADS = (("lstm-lm", 20), ("lstm-lm", 128), ("deepfm", 256), ("deepfm", 1024), ("gpt-topk", 8))
MIX = 0x9E3779B97F4A7C15 - (1 << 64)  # Fibonacci hashing constant as a signed int64


def timed(fn, device: torch.device, reps: int) -> float:
    """Median seconds of fn() over `reps` runs after two warm-up runs (CUDA events on a GPU)."""
    for _ in range(2):
        fn()
    clock = clock_for(device)
    samples = []
    for _ in range(reps):
        a = clock.mark()
        fn()
        b = clock.mark()
        clock.settle()
        samples.append(clock.seconds(a, b))
    return statistics.median(samples)


def work_kernels(device: torch.device, max_log2: int, reps: int, parts: int = 16) -> dict:
    """Seconds per work kind and size."""
    out: dict = {"device": describe_device(device), "parts": parts, "sizes": [], "seconds": {}}
    kinds = ("hash", "merge", "encode", "decode", "copy")
    for k in kinds:
        out["seconds"][k] = []
    gen = torch.Generator(device="cpu").manual_seed(0)
    for log2 in range(10, max_log2 + 1):
        n = 1 << log2
        ids = torch.randint(0, 20 * n, (n,), generator=gen).unique().to(device)  # sorted, ~n distinct
        vals = torch.rand(len(ids), generator=gen).to(device)
        dense = torch.zeros(20 * n, device=device)
        half = [ids[0::2], ids[1::2]]
        halfv = [vals[0::2], vals[1::2]]
        src, dst = torch.rand(n, device=device), torch.empty(n, device=device)

        def hash_() -> None:
            part = (ids * MIX).remainder(parts)
            ids[torch.argsort(part, stable=True)]

        def merge() -> None:
            u, inv = torch.unique(torch.cat(half), sorted=True, return_inverse=True)
            torch.zeros(len(u), device=device).index_add_(0, inv, torch.cat(halfv))

        fns = {"hash": hash_, "merge": merge, "encode": lambda: dense[ids],
               "decode": lambda: dense.index_add_(0, ids, vals), "copy": lambda: dst.copy_(src)}
        out["sizes"].append(len(ids))
        for k in kinds:
            out["seconds"][k].append(timed(fns[k], device, reps))
        print(f"work 2^{log2}: " + ", ".join(f"{k} {out['seconds'][k][-1] * 1e6:.1f} us" for k in kinds), flush=True)
    one = torch.zeros(1, device=device)
    out["launch_s"] = timed(lambda: [one.add_(1) for _ in range(1000)], device, reps) / 1000
    return out


def workload(name: str, batch: int, corpus: str | None):
    """A built-in workload (the corpus only for the language models)."""
    return make_workload(name, batch, 0, None if name == "deepfm" else corpus)


def annotated(workload_name: str, batch: int, device: torch.device, out: Path, corpus: str | None) -> None:
    """Profile a workload under torch.profiler with annotations while the CUDA-event recorder runs."""
    from torch.profiler import ProfilerActivity, profile

    work = workload(workload_name, batch, corpus)
    model = work.model.to(device)
    opt = work.optimizer()
    recorder = LayerRecorder(model, opt, clock_for(device))
    marks = annotate(model, opt)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for step in range(8):
            batch_ = to_device(work.batch(step, 0, 1), device)
            opt.zero_grad(set_to_none=True)
            work.loss(model, batch_).backward()
            opt.step()
    marks.detach()
    recorder.detach()
    prof.export_chrome_trace(str(out / "annotated.trace.json"))
    recorder.profile(3, kind="measured", device=describe_device(device), workload=work.name, batch_size=batch,
                     source="CUDA-event recorder in the annotated run").save(out / "annotated.recorder.layers.json")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", required=True)
    parser.add_argument("--corpus", default=None, help="plain-text corpus for lstm-lm/gpt-topk (else the KJV)")
    parser.add_argument("--max-log2", type=int, default=26)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    device = torch.device(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(describe_device(device), flush=True)
    for name, batch in WORKLOADS:
        start = time.perf_counter()
        prof = record_workload(workload(name, batch, args.corpus), device, args.iterations, 5)
        prof.save(out / f"{name}-b{batch}.layers.json")
        print(f"{name} batch {batch}: forward {prof.forward_s * 1e3:.3f} ms, backward {prof.backward_s * 1e3:.3f} ms, "
              f"optimizer {prof.optimizer_s * 1e3:.3f} ms ({time.perf_counter() - start:.1f} s)", flush=True)
    annotated("deepfm", 1024, device, out, args.corpus)
    print("annotated trace written", flush=True)
    (out / "work.json").write_text(json.dumps(work_kernels(device, args.max_log2, args.reps), indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
