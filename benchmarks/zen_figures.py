"""ZEN's end-to-end figures (Fig. 11: 25 Gbps, Fig. 12: 100 Gbps) against the iteration timeline.

The shipped LSTM and DeepFM traces (128 workers), a V100 layer profile of the same model at the
trace's batch (traces/layers/*.v100.layers.json, datasheet estimates), 16 x 8 GPUs in ZEN's layout,
DDP buckets, fifo, on ZEN's testbed machines (zensim.net.presets: p3.16xlarge, 8 V100, 25 Gbps TCP for
Fig. 11; p3dn.24xlarge, 8 V100, 100 Gbps EFA for Fig. 12): throughput of dense all-reduce, SparCML,
OmniReduce and ZEN, and ZEN's speedup over each, beside the paper's ratios at 16 machines. With
--machines 2,4,8,16 the same for each size (ZEN's x axis). --profile adds local-work (compression)
costs (e.g. scenarios/profiles/v100-work.json). Dense buckets take the fastest dense all-reduce for their
size (ring or recursive doubling, zensim.train.tuner) unless --dense-algorithm forces one.

--zen-size: the two models at ZEN's sizes instead (Table 1: LSTM embedding 406M at 1.13%, MLP 20M,
batch 128; DeepFM embedding 214M at 2.80%, MLP 68M, batch 1024): V100 profiles from the layer shapes
of scenarios/zen-size/*.shapes.json (zensim.train.shapes, kernels at --efficiency of the datasheet
peaks) and synthetic traces of whole embedding rows at those densities (zensim.trace.synth, overlap
and skewness of our captured traces of the same models, ZEN's for the LSTM), written once to
--trace-dir (outside git; about 0.6 GB (LSTM) and 0.8 GB (DeepFM) per trace iteration at 128
workers: 8 x max(16, machines), ZEN's testbed at least, fewer machines using the first workers).
--scale multiplies the embedding rows (a smaller run, say so when quoting it).

    .venv/bin/python benchmarks/zen_figures.py [--machines 16] [--presets p3.16xlarge,p3dn.24xlarge]
        [--nic-latency 0us] [--profile P.json] [--model fifo] [--dense-algorithm auto|ring|doubling] [--json]
        [--models LSTM,DeepFM] [--zen-size [--scale 1] [--trace-dir DIR] [--efficiency 0.66]
        [--deepfm-machine-density 0.052]]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from zensim.net.costs import Costs
from zensim.net.presets import machine_preset
from zensim.net.profile import DEFAULT_PROFILE, load_profile
from zensim.report.table import format_table
from zensim.sim.cluster import build_cluster
from zensim.trace.format import Trace
from zensim.trace.synth import SynthParams, overlap_for_densification, synthesize
from zensim.train.devices import get_device
from zensim.train.iteration import simulate_iteration
from zensim.train.layers import load_layers
from zensim.train.shapes import shapes_profile
from zensim.train.syncs import SyncLogs
from zensim.train.tuner import DENSE_CHOICES

ROOT = Path(__file__).resolve().parent.parent
SCHEMES = ("dense-allreduce", "sparcml", "omnireduce", "zen")
MODELS = {"LSTM": ("traces/lstm-lm-128w.zt", "traces/layers/lstm-lm-b20.v100.layers.json"),
          "DeepFM": ("traces/deepfm-128w.zt", "traces/layers/deepfm-b256.v100.layers.json")}
# ZEN's sizes: shapes file, synthetic embedding. Density: ZEN Table 1. Overlap: our captured traces of
# the same models (`zensim trace stats`: LSTM 0.38, DeepFM 0.40). Skew: the LSTM's near ZEN's (section
# 2.1: over 60% of the non-zeros in the first of 8 parts, s^128 > 70): s^8 = 5, inner 7 and 2 (s^64 = 35,
# s^128 = 40, s^512 = 70: nested 8-way parts cannot give s^128 = 70 with s^8 = 5 at 1.13%); DeepFM's our
# captured trace's: s^8 = 4.56, s^64 = 13.9 (inner 3.05)
ZEN_SIZE = {"LSTM": ("scenarios/zen-size/lstm.shapes.json", SynthParams(0.0113, 0.38, 5.0, inner=(7.0, 2.0))),
            "DeepFM": ("scenarios/zen-size/deepfm.shapes.json", SynthParams(0.028, 0.40, 4.56, inner=(3.05,)))}
# ZEN's reported speedups of ZEN over each baseline at 16 machines (OSDI '25, section 5.2 text)
PAPER = {("LSTM", "25Gbps"): {"sparcml": 1.67, "omnireduce": 2.48, "dense-allreduce": 3.1},
         ("DeepFM", "25Gbps"): {"omnireduce": 1.44},
         ("LSTM", "100Gbps"): {"sparcml": 1.44},
         ("DeepFM", "100Gbps"): {"dense-allreduce": 1.33, "omnireduce": 1.25}}


def main() -> int:
    """Print (or --json) ZEN's speedup over each baseline per model, preset and machine count."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machines", default="16")
    p.add_argument("--presets", default="p3.16xlarge,p3dn.24xlarge", help="machine presets (ZEN's: 25 and 100 Gbps)")
    p.add_argument("--nic-latency", default=None, help="instead of the preset's (e.g. 0us: what latency costs)")
    p.add_argument("--profile", default=None)
    p.add_argument("--model", default="fifo")
    p.add_argument("--dense-algorithm", default="auto", choices=DENSE_CHOICES,
                   help="dense buckets' all-reduce: auto (default, the fastest per size), ring (the figures "
                        "before the choice)")
    p.add_argument("--iterations", type=int, default=4)
    p.add_argument("--zen-size", action="store_true", help="the models at ZEN's sizes (module docstring)")
    p.add_argument("--scale", type=float, default=1.0, help="with --zen-size: embedding rows x this (default 1)")
    p.add_argument("--trace-dir", default=str(Path(tempfile.gettempdir()) / "zensim-zen-size"),
                   help="with --zen-size: where the synthetic traces are written once (default: TMPDIR/zensim-zen-size)")
    p.add_argument("--efficiency", type=float, default=0.66,
                   help="with --zen-size: fraction of the V100's peaks its kernels reach (default 0.66, "
                        "measured on an H100 for the 114M-parameter GPT, docs/iteration.md)")
    p.add_argument("--deepfm-machine-density", type=float, default=None,
                   help="with --zen-size: DeepFM's density after the intra-machine aggregation of 8 GPUs (ZEN "
                        "section 5.3: 0.052); its trace then takes the overlap giving that densification "
                        "(gamma^8 = this / 0.028) instead of our captured overlap 0.40")
    p.add_argument("--models", default=",".join(MODELS), help="which of LSTM, DeepFM (default both)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    calib = load_profile(args.profile) if args.profile else None
    machines = [int(x) for x in args.machines.split(",")]
    presets = args.presets.split(",")
    chosen = args.models.split(",")
    unknown = sorted(set(chosen) - set(MODELS))
    if unknown:
        p.error(f"--models: unknown {unknown[0]!r} (choose from {', '.join(MODELS)})")
    models = zen_size_models(args, 8 * max(16, *machines), chosen) if args.zen_size else \
        {name: (Trace.open(trace), load_layers(layers)) for name, (trace, layers) in MODELS.items() if name in chosen}
    results = simulate(models, machines, presets, calib=calib, nic_latency=args.nic_latency, model=args.model,
                       iterations=args.iterations, dense_algorithm=args.dense_algorithm)
    rows, out, clusters = [], [], {}
    for name, (trace, prof) in models.items():
        for preset in presets:
            nic = machine_preset(preset).nic
            for m in machines:
                recs = {scheme: results[name, preset, m, scheme] for scheme in SCHEMES}
                clusters[preset] = recs["zen"].cluster
                zen = recs["zen"].samples_per_s
                paper = PAPER.get((name, nic), {}) if m == 16 else {}
                for scheme, rec in recs.items():
                    ratio = zen / rec.samples_per_s
                    rows.append([name, preset, nic, rec.gpus, scheme, rec.iteration_s * 1e3, rec.compute_s * 1e3,
                                 rec.exposed_comm_s * 1e3, rec.samples_per_s, ratio, paper.get(scheme)])
                    out.append({"model": name, "preset": preset, "nic": nic, "gpus": rec.gpus, "scheme": scheme,
                                "iteration_ms": rec.iteration_s * 1e3, "compute_ms": rec.compute_s * 1e3,
                                "exposed_ms": rec.exposed_comm_s * 1e3, "samples_per_s": rec.samples_per_s,
                                "zen_speedup": ratio, "paper_zen_speedup": paper.get(scheme),
                                "cluster": rec.cluster})
    for trace, _ in models.values():
        trace.close()
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    what = (f"ZEN-sized models (scenarios/zen-size, embedding rows x {args.scale:g}, kernels at "
            f"{args.efficiency:g} of the peaks)" if args.zen_size else "the shipped traces")
    print(f"{what}: V100 estimates, DDP buckets, dense all-reduce {args.dense_algorithm}, ZEN's layout, {args.model}, "
          f"work costs: "
          f"{args.profile or 'the default work model (zensim/net/profiles/' + DEFAULT_PROFILE.name + ')'}")
    print(format_table(rows, ["model", "preset", "NIC", "GPUs", "scheme", "iteration ms", "compute ms", "exposed ms",
                              "samples/s", "ZEN speedup over it", "paper (16 machines)"]))
    for preset, about in clusters.items():
        print(f"{preset}: {about}")
    return 0


@functools.cache
def page_tables() -> tuple[list[str], list[str]]:
    """docs/iteration.md's two tables (benchmarks/doc_tables.py), the shipped traces on ZEN's two testbed
    presets at the defaults (fifo, 4 iterations, dense algorithm by size): at 16 machines ZEN's speedup
    over each baseline, the paper's, samples/s, iteration ms (ZEN's compute) and the speedups with the ring
    forced for every dense bucket; then the speedups at 2, 4, 8 and 16 machines."""
    from md_tables import markdown_table

    presets, machines = ["p3.16xlarge", "p3dn.24xlarge"], [2, 4, 8, 16]
    models = {name: (Trace.open(ROOT / trace), load_layers(ROOT / layers)) for name, (trace, layers) in MODELS.items()}
    auto = simulate(models, machines, presets)
    ring = simulate(models, [16], presets, dense_algorithm="ring")
    for trace, _ in models.values():
        trace.close()

    def over(results, name, preset, m) -> list[str]:
        zen = results[name, preset, m, "zen"].samples_per_s
        return [f"{zen / results[name, preset, m, s].samples_per_s:.3f}" for s in SCHEMES[:-1]]

    first, by_size = [], []
    for name in MODELS:
        for preset in presets:
            nic = machine_preset(preset).nic
            recs = [auto[name, preset, 16, s] for s in SCHEMES]
            paper = PAPER.get((name, nic), {})
            unit, suffix = (1e3, "k") if recs[-1].samples_per_s < 1e6 else (1e6, "M")
            first.append([name, f"{preset}, {nic.replace('Gbps', ' Gbps')}", *over(auto, name, preset, 16),
                          " / ".join(f"{paper[s]:g}" if s in paper else "-" for s in SCHEMES[:-1]),
                          " / ".join(f"{r.samples_per_s / unit:.3g}" for r in recs) + f" {suffix}",
                          " / ".join(f"{r.iteration_s * 1e3:.4g}" for r in recs) + f" ({recs[-1].compute_s * 1e3:.3g})",
                          " / ".join(over(ring, name, preset, 16))])
            by_size.append([f"{name}, {preset}",
                            *(" / ".join(over(auto, name, preset, m)[i] for m in machines) for i in range(3))])
    return (markdown_table(["model", "machine", "over dense", "over SparCML", "over OmniReduce",
                            "ZEN's paper (dense / SparCML / OmniReduce)",
                            "samples/s: dense / SparCML / OmniReduce / ZEN",
                            "iteration ms: dense / SparCML / OmniReduce / ZEN (compute)",
                            "ring forced: over dense / SparCML / OmniReduce"], first),
            markdown_table(["model, machine", "over dense", "over SparCML", "over OmniReduce"], by_size))


def simulate(models: dict[str, tuple[Trace, object]], machines: list[int], presets: list[str], *, calib=None,
             nic_latency: str | None = None, model: str = "fifo", iterations: int = 4,
             dense_algorithm: str = "auto") -> dict[tuple[str, str, int, str], object]:
    """Each model's iteration record per (model, preset, machines, scheme of SCHEMES), in ZEN's layout."""
    results = {}
    for name, (trace, prof) in models.items():
        for m in machines:
            for scheme in SCHEMES:
                logs = None
                for preset in presets:
                    cluster, _ = build_cluster(m, preset=preset, nic_latency=nic_latency)
                    logs = logs or SyncLogs(cluster, "zen", scheme, trace)  # the same messages at any bandwidth
                    dense = results.get((name, preset, m, SCHEMES[0]))
                    results[name, preset, m, scheme] = simulate_iteration(
                        prof, scheme, Costs.of(cluster, calib), trace=trace, model=model,
                        iterations=iterations, dense=dense, logs=logs, dense_algorithm=dense_algorithm)
                    print(f"{name} {preset} {m} machines {scheme}: "
                          f"{results[name, preset, m, scheme].iteration_s * 1e3:.4g} ms", file=sys.stderr, flush=True)
    return results


def zen_size_models(args: argparse.Namespace, workers: int, chosen: list[str]) -> dict[str, tuple[Trace, object]]:
    """Per model at ZEN's size: its synthetic trace (written to --trace-dir unless there) and V100 profile."""
    device = get_device("v100").derated(args.efficiency)
    out = {}
    for name, (shapes_file, params) in ZEN_SIZE.items():
        if name not in chosen:
            continue
        spec = json.loads(Path(shapes_file).read_text())
        emb = next(layer for layer in spec["layers"] if layer["kind"] == "embedding")
        emb["rows"] = max(1, round(emb["rows"] * args.scale))
        prof = shapes_profile(spec, device, f"{shapes_file} (embedding rows x {args.scale:g})")
        numel, row = emb["rows"] * emb["dim"], emb["dim"]
        if name == "DeepFM" and args.deepfm_machine_density is not None:
            gamma = args.deepfm_machine_density / params.density
            overlap = round(overlap_for_densification(numel, replace(params, row=row), 8, gamma), 4)
            print(f"DeepFM: gamma^8 {gamma:.3f} (density {args.deepfm_machine_density:g} after a machine's 8 GPUs): "
                  f"overlap {overlap}", file=sys.stderr, flush=True)
            params = replace(params, overlap=overlap)
        path = Path(args.trace_dir) / (f"{spec['workload']}-{workers}w-{numel}-d{params.density}-o{params.overlap}"
                                       f"-s{params.skew}-{'-'.join(map(str, params.inner))}.zt")
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            print(f"writing {path} ({workers} workers, {numel} elements)", file=sys.stderr, flush=True)
            synthesize(path, workers, [(f"{emb['name']}.weight", numel)],
                       SynthParams(params.density, params.overlap, params.skew, row, params.inner),
                       batch_size=spec["batch_size"], progress=True)
        out[name] = (Trace.open(path), prof)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
