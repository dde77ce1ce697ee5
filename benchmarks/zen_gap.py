"""Where a sparse bucket's time goes, per machine count: why ZEN's gap over a baseline grows or not.

For one sparse tensor of a trace (default: the shipped DeepFM's embedding) and each scheme, on ZEN's
testbed machines (8 GPUs each), the synchronization the timeline runs for that bucket (in ZEN's
layout: the NVLink reduce-scatter, the scheme across machines, the NVLink all-gather; flat: the
scheme alone), replayed alone with fifo and split into its terms:

- `sync ms`: the whole synchronization alone (the timeline's bucket time when nothing else runs);
- `latency ms`: what the per-message NIC latency adds (the same replayed with 0 us latency);
- `work ms`: what local work adds (the same replayed with free work);
- per stage of the scheme's part across machines (for the parallelism schemes stage 0 is the push,
  stage 1 the pull): the busiest NIC's bytes (the larger of what a machine sends and receives in the
  stage), their mean over NICs, the imbalance max / mean (ZEN: hash partitions; OmniReduce: the
  aggregators' contiguous partitions), and the messages on the busiest NIC;
- `union`: the density of the union of all GPUs' index sets (what a pull of the aggregate carries:
  d times the densification ratio), and `blocks`: the fraction of 256-element blocks of the tensor
  (OmniReduce's unit, on the tensor's block grid) holding a non-zero of that union.

    .venv/bin/python benchmarks/zen_gap.py [--trace traces/deepfm-128w.zt] [--tensor embedding.weight]
        [--preset p3.16xlarge] [--machines 2,4,8,16] [--schemes omnireduce,zen] [--layout zen] [--json]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from zensim.net.costs import Costs
from zensim.net.profile import WorkCost
from zensim.net.replay import replay
from zensim.report.table import format_table
from zensim.sim.cluster import build_cluster
from zensim.trace.format import Trace
from zensim.train.syncs import Part, SyncLogs

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 256  # OmniReduce's block (ZEN section 2.4: "each block has 256 gradients")


def union_stats(trace: Trace, name: str, workers: int) -> tuple[float, float]:
    """(density of the union of the first `workers` workers' indices of `name` at iteration 0, fraction
    of the tensor's 256-element blocks holding one of them)."""
    numel = trace.tensors[trace.tensor_index(name)].numel
    mark = np.zeros(-(-numel // BLOCK) * BLOCK, np.bool_)
    for w in range(workers):
        mark[trace.indices(0, w, name)] = True
    return float(mark[:numel].mean()), float(mark.reshape(-1, BLOCK).any(1).mean())


def stage_loads(log, gpus: int, machines: int) -> list[dict]:
    """Per stage of an across-machines log: the busiest NIC's bytes (max of sent and received), the
    mean over NICs, and the messages the busiest NIC sends or receives."""
    src, dst = log.src // gpus, log.dst // gpus
    inter = src != dst
    out = []
    for stage in range(log.num_stages):
        sel = inter & (log.stage == stage)
        up = np.bincount(src[sel], log.nbytes[sel], machines)
        down = np.bincount(dst[sel], log.nbytes[sel], machines)
        load = np.maximum(up, down)
        busiest = int(load.argmax())
        msgs = int(np.count_nonzero(sel & ((src == busiest) | (dst == busiest))))
        out.append({"stage": stage, "busiest_kb": load.max() / 1e3, "mean_kb": load.mean() / 1e3,
                    "imbalance": float(load.max() / load.mean()) if load.mean() else 1.0, "busiest_msgs": msgs})
    return out


def decompose(trace: Trace, name: str, scheme: str, machines: int, preset: str, layout: str) -> dict:
    """The terms of the bucket of tensor `name` under `scheme` on `machines` machines of `preset`."""
    cluster, _ = build_cluster(machines, preset=preset)
    no_latency, _ = build_cluster(machines, preset=preset, nic_latency="0us")
    numel = trace.tensors[trace.tensor_index(name)].numel
    steps = SyncLogs(cluster, layout, scheme, trace).steps(Part(True, (name,), numel), 0)

    def alone(c, free_work: bool = False) -> float:
        costs = Costs.of(c)
        costs = replace(costs, work=WorkCost.zero()) if free_work else costs
        return sum(replay(s.log, costs).makespan for s in steps)

    full = alone(cluster)
    across = next(s.log for s in steps if s.compression)
    return {"machines": machines, "scheme": scheme, "sync_ms": full * 1e3,
            "latency_ms": (full - alone(no_latency)) * 1e3, "work_ms": (full - alone(cluster, True)) * 1e3,
            "stages": stage_loads(across, cluster.gpus_per_machine, machines)}


def terms(trace_path: str | Path, tensor: str, preset: str, machines: list[int], schemes: list[str],
          layout: str) -> list[dict]:
    """decompose() per machine count and scheme, with the union's density and block fraction."""
    with Trace.open(trace_path) as trace:
        gpus = build_cluster(1, preset=preset)[0].gpus_per_machine
        out = []
        for m in machines:
            union, blocks = union_stats(trace, tensor, m * gpus)
            out += [{**decompose(trace, tensor, scheme, m, preset, layout), "union": union, "blocks": blocks}
                    for scheme in schemes]
    return out


def page_table() -> list[str]:
    """docs/iteration.md's table of the terms (benchmarks/doc_tables.py): the defaults, p3.16xlarge; a row
    per machine count and scheme, push and pull as the busiest NIC's KB (max / mean), the union's figures
    once per machine count."""
    from md_tables import markdown_table

    names = {"omnireduce": "OmniReduce", "zen": "ZEN"}
    rows = []
    for rec in terms(ROOT / "traces" / "deepfm-128w.zt", "embedding.weight", "p3.16xlarge", [2, 4, 8, 16],
                     list(names), "zen"):
        first = rec["scheme"] == next(iter(names))
        push, pull = (f"{st['busiest_kb']:,.0f} ({st['imbalance']:.2f})" for st in rec["stages"])
        rows.append([rec["machines"], names[rec["scheme"]], f"{rec['sync_ms']:.3f}", f"{rec['latency_ms']:.3f}",
                     f"{rec['work_ms']:.3f}", push, pull, f"{rec['union']:.3f}" if first else "",
                     f"{rec['blocks']:.3f}" if first else ""])
    return markdown_table(["machines", "scheme", "sync ms", "latency ms", "work ms", "push: busiest NIC KB (max/mean)",
                           "pull: busiest NIC KB (max/mean)", "union", "blocks"], rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trace", default="traces/deepfm-128w.zt")
    p.add_argument("--tensor", default="embedding.weight")
    p.add_argument("--preset", default="p3.16xlarge", help="machine preset (ZEN's: p3.16xlarge 25 Gbps, "
                   "p3dn.24xlarge 100 Gbps)")
    p.add_argument("--machines", default="2,4,8,16")
    p.add_argument("--schemes", default="omnireduce,zen")
    p.add_argument("--layout", default="zen", choices=("zen", "flat"))
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    out = terms(args.trace, args.tensor, args.preset, [int(x) for x in args.machines.split(",")],
                args.schemes.split(","), args.layout)
    rows = [[rec["machines"], rec["scheme"], rec["sync_ms"], rec["latency_ms"], rec["work_ms"], st["stage"],
             st["busiest_kb"], st["mean_kb"], st["imbalance"], st["busiest_msgs"], rec["union"], rec["blocks"]]
            for rec in out for st in rec["stages"]]
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{args.trace} {args.tensor}, {args.preset}, layout {args.layout}, fifo, default work costs, iteration 0")
    print(format_table(rows, ["machines", "scheme", "sync ms", "latency ms", "work ms", "stage", "busiest NIC KB",
                              "mean KB", "max/mean", "msgs busiest", "union", "blocks"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
