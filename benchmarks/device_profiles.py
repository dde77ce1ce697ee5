"""Measure on the device at hand what the iteration timeline needs of it: layer profiles and local-work kernels.

Run on a GPU machine (or the CPU, `--device cpu`); writes into --out:

- `<workload>-b<batch>.layers.json`: the measured layer profile of each built-in workload (CUDA events
  on a GPU: `zensim.train.record.record_workload`); with --large only that, for GPU-bound sizes of the
  three models (LARGE);
- `annotated.trace.json` + `annotated.recorder.layers.json`: one workload profiled under torch.profiler
  with `zensim.train.kineto.annotate` while the CUDA-event recorder runs too (import the trace with
  `zensim layers import` and compare the two);
- `work.json`: seconds of torch kernels standing for each kind of a scheme's local work, at sizes
  2^10 .. 2^--max-log2 elements (zensim.train.cost.measure_work; `zensim work fit` makes a profile).

    python benchmarks/device_profiles.py --device cuda --out OUT [--corpus kjv.txt] [--max-log2 26] [--large]

and, here, the estimate against those measurements (ratio estimate / measured, with the preset's
launch cost and with none):

    python benchmarks/device_profiles.py --compare traces/layers --preset h100 [--corpus kjv.txt] \
        [--json docs/iteration-data/roofline-h100.json]

(`--json` also writes the rows: docs/iteration.md's roofline table is rendered from the committed file by
benchmarks/doc_tables.py; about 2 min of CPU here.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from zensim.train.clocks import clock_for, describe_device
from zensim.train.hooks import LayerRecorder
from zensim.train.kineto import annotate
from zensim.train.cost import measure_work
from zensim.train.record import record_workload, to_device
from zensim.trace.capture.workloads import make_workload

WORKLOADS = (("lstm-lm", 20), ("lstm-lm", 128), ("deepfm", 256), ("deepfm", 1024), ("gpt-topk", 8))
# GPU-bound sizes of the same models (the built-in ones are launch-bound on a GPU): to compare an
# estimate with a measurement where the datasheet peaks matter
LARGE = {
    "lstm-lm-large": dict(batch_size=128, embed=512, hidden=1024),
    "deepfm-large": dict(batch_size=4096, embed=64, hidden=1024),
    "gpt-topk-large": dict(batch_size=16, dim=1024, heads=16, layers=8, seq_len=128),
}


def workload(name: str, batch: int | None, corpus: str | None):
    """A built-in workload (the corpus only for the language models), or a LARGE variant by name."""
    if name not in LARGE:
        return make_workload(name, batch, 0, None if name == "deepfm" else corpus)
    from zensim.trace.capture.corpus import load_corpus
    from zensim.trace.capture.workloads.deepfm import DeepFM
    from zensim.trace.capture.workloads.gpt import GPTTopK
    from zensim.trace.capture.workloads.lstm import LSTMLM

    sizes = LARGE[name]
    if name.startswith("deepfm"):
        return DeepFM(**sizes)
    text = load_corpus(corpus)
    cls = LSTMLM if name.startswith("lstm") else GPTTopK
    return cls(text.tokens, text.vocab_size, corpus=text.name, **sizes)


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


def compare(directory: Path, preset: str, corpus: str | None, json_path: str | None = None) -> None:
    """Estimate every measured `<workload>-b<batch>.<preset>.layers.json` of `directory` and print the ratios
    (and write them to `json_path` as a list of objects, one per row, if given)."""
    from dataclasses import replace

    from zensim.report.table import format_table
    from zensim.train.devices import get_device
    from zensim.train.layers import load_layers
    from zensim.train.roofline import estimate_workload

    device = get_device(preset)
    rows = []
    for path in sorted(directory.glob(f"*.{preset}.layers.json")):
        measured = load_layers(path)
        if measured.kind != "measured":
            continue
        name = path.name.split(".")[0].rsplit("-b", 1)[0]
        est = [estimate_workload(workload(name, measured.batch_size, corpus), replace(device, launch_s=launch))
               for launch in (device.launch_s, 0.0)]
        rows.append([name, measured.batch_size, measured.compute_s * 1e3, est[0].compute_s * 1e3,
                     est[0].compute_s / measured.compute_s, est[1].compute_s / measured.compute_s,
                     est[0].extra["operators_per_step"], est[0].extra["flops_per_step"] / 1e9])
    headers = ["workload", "batch", "measured ms", "estimate ms", "est/meas", "est/meas no launch", "operators", "GFLOP"]
    print(format_table(rows, headers))
    if json_path:
        from zensim.atomic import write_atomic

        write_atomic(json_path, json.dumps({"preset": preset, "directory": str(directory), "corpus": corpus,
                                            "rows": [dict(zip(headers, r)) for r in rows]}, indent=1, default=float) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out")
    parser.add_argument("--compare", help="directory of measured profiles to estimate and compare")
    parser.add_argument("--preset", default="h100", help="with --compare: the device preset of the estimates")
    parser.add_argument("--corpus", default=None, help="plain-text corpus for lstm-lm/gpt-topk (else the KJV)")
    parser.add_argument("--max-log2", type=int, default=26)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--large", action="store_true", help="only the GPU-bound LARGE variants")
    parser.add_argument("--json", default=None, help="with --compare: also write the rows as JSON to this file")
    args = parser.parse_args()
    if args.compare:
        compare(Path(args.compare), args.preset, args.corpus, args.json)
        return 0
    if not args.out:
        parser.error("--out is required (or --compare)")
    device = torch.device(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(describe_device(device), flush=True)
    for name, batch in ([(n, None) for n in LARGE] if args.large else WORKLOADS):
        start = time.perf_counter()
        work = workload(name, batch, args.corpus)
        prof = record_workload(work, device, args.iterations, 5)
        batch = work.batch_size
        prof.save(out / f"{name}-b{batch}.layers.json")
        print(f"{name} batch {batch}: forward {prof.forward_s * 1e3:.3f} ms, backward {prof.backward_s * 1e3:.3f} ms, "
              f"optimizer {prof.optimizer_s * 1e3:.3f} ms ({time.perf_counter() - start:.1f} s)", flush=True)
    if args.large:
        return 0
    annotated("deepfm", 1024, device, out, args.corpus)
    print("annotated trace written", flush=True)
    work = measure_work(device, args.max_log2, args.reps, progress=print)
    (out / "work.json").write_text(json.dumps(work, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
