"""ZEN's end-to-end figures (Fig. 11: 25 Gbps, Fig. 12: 100 Gbps) against the iteration timeline.

The shipped LSTM and DeepFM traces (128 workers), a V100 layer profile of the same model at the
trace's batch (traces/layers/*.v100.layers.json, datasheet estimates), 16 x 8 GPUs in ZEN's layout,
DDP buckets, fifo, on ZEN's testbed machines (zensim.net.presets: p3.16xlarge, 8 V100, 25 Gbps TCP for
Fig. 11; p3dn.24xlarge, 8 V100, 100 Gbps EFA for Fig. 12): throughput of dense all-reduce, SparCML,
OmniReduce and ZEN, and ZEN's speedup over each, beside the paper's ratios at 16 machines. With
--machines 2,4,8,16 the same for each size (ZEN's x axis). --profile adds local-work (compression)
costs (e.g. scenarios/profiles/v100-work.json).

    .venv/bin/python benchmarks/zen_figures.py [--machines 16] [--presets p3.16xlarge,p3dn.24xlarge]
        [--nic-latency 0us] [--profile P.json] [--model fifo] [--json]
"""

from __future__ import annotations

import argparse
import json

from zensim.net.costs import Costs
from zensim.net.presets import machine_preset
from zensim.net.profile import load_profile
from zensim.report.table import format_table
from zensim.sim.cluster import build_cluster
from zensim.train.iteration import simulate_iteration
from zensim.train.layers import load_layers

SCHEMES = ("dense-allreduce", "sparcml", "omnireduce", "zen")
MODELS = {"LSTM": ("traces/lstm-lm-128w.zt", "traces/layers/lstm-lm-b20.v100.layers.json"),
          "DeepFM": ("traces/deepfm-128w.zt", "traces/layers/deepfm-b256.v100.layers.json")}
# ZEN's reported speedups of ZEN over each baseline at 16 machines (OSDI '25, section 5.2 text)
PAPER = {("LSTM", "25Gbps"): {"sparcml": 1.67, "omnireduce": 2.48, "dense-allreduce": 3.1},
         ("DeepFM", "25Gbps"): {"omnireduce": 1.44},
         ("LSTM", "100Gbps"): {"sparcml": 1.44},
         ("DeepFM", "100Gbps"): {"dense-allreduce": 1.33, "omnireduce": 1.25}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machines", default="16")
    p.add_argument("--presets", default="p3.16xlarge,p3dn.24xlarge", help="machine presets (ZEN's: 25 and 100 Gbps)")
    p.add_argument("--nic-latency", default=None, help="instead of the preset's (e.g. 0us: what latency costs)")
    p.add_argument("--profile", default=None)
    p.add_argument("--model", default="fifo")
    p.add_argument("--iterations", type=int, default=4)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    calib = load_profile(args.profile) if args.profile else None
    rows, out, clusters = [], [], {}
    for name, (trace, layers) in MODELS.items():
        prof = load_layers(layers)
        for preset in args.presets.split(","):
            nic = machine_preset(preset).nic
            for m in (int(x) for x in args.machines.split(",")):
                cluster, _ = build_cluster(m, preset=preset, nic_latency=args.nic_latency)
                clusters[preset] = cluster.describe()
                costs = Costs.of(cluster, calib)
                dense = None
                recs = {}
                for scheme in SCHEMES:
                    rec = simulate_iteration(prof, scheme, costs, trace=trace, model=args.model,
                                             iterations=args.iterations, dense=dense)
                    dense = dense or rec
                    recs[scheme] = rec
                zen = recs["zen"].samples_per_s
                paper = PAPER.get((name, nic), {}) if m == 16 else {}
                for scheme, rec in recs.items():
                    ratio = zen / rec.samples_per_s
                    rows.append([name, preset, nic, cluster.gpus, scheme, rec.iteration_s * 1e3, rec.compute_s * 1e3,
                                 rec.exposed_comm_s * 1e3, rec.samples_per_s, ratio, paper.get(scheme)])
                    out.append({"model": name, "preset": preset, "nic": nic, "gpus": cluster.gpus, "scheme": scheme,
                                "iteration_ms": rec.iteration_s * 1e3, "compute_ms": rec.compute_s * 1e3,
                                "exposed_ms": rec.exposed_comm_s * 1e3, "samples_per_s": rec.samples_per_s,
                                "zen_speedup": ratio, "paper_zen_speedup": paper.get(scheme),
                                "cluster": rec.cluster})
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"V100 estimates, DDP buckets, ZEN's layout, {args.model}, work costs: "
          f"{args.profile or 'defaults (GPU-class per-element placeholders)'}")
    print(format_table(rows, ["model", "preset", "NIC", "GPUs", "scheme", "iteration ms", "compute ms", "exposed ms",
                              "samples/s", "ZEN speedup over it", "paper (16 machines)"]))
    for preset, about in clusters.items():
        print(f"{preset}: {about}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
