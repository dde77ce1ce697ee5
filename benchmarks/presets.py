"""Every machine preset simulated: a dense all-reduce in ZEN's layout (ring over NVLink then NIC)
against the closed form of its topology (zensim.net.presets.ring_allreduce_seconds), both models;
then the presets with one NIC per machine on multi-tier fat-trees (a tier slower than the NIC, where
fifo has no closed form with a shared NIC, and tiers that do not bind).

    .venv/bin/python benchmarks/presets.py [--machines 16]

Synthetic trace of 128 workers (the dense all-reduce does not depend on the data), zero work costs
(the closed form has none); prints simulated and closed-form times and their relative error.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from zensim.net.costs import Costs
from zensim.net.presets import PRESETS, ring_allreduce_seconds
from zensim.net.topology import parse_tiers
from zensim.net.profile import WorkCost
from zensim.sim.cluster import build_cluster
from zensim.sim.run import simulate
from zensim.trace import TensorSpec, TraceWriter


def main() -> None:
    """Simulate each preset and print it against its closed form."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machines", type=int, default=16)
    args = ap.parse_args()
    numel = 8 * args.machines * 1000  # divisible by g x n: the closed form is exact
    rng = np.random.default_rng(2)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.zt"
        workers = 8 * args.machines
        with TraceWriter(path, [TensorSpec("w", numel)], workers=workers, iterations=1) as w:
            for k in range(workers):
                w.write(0, k, 0, np.unique(rng.choice(numel, 300, replace=False)))
        cases = [(name, model, None) for name in PRESETS for model in ("fifo", "maxmin")]
        cases += [(name, model, tiers) for name in PRESETS if PRESETS[name].nics == "machine"
                  for model, tiers in (("maxmin", "2:2,2:4"), ("fifo", "4:1,2:2"), ("maxmin", "4:1,2:2"))]
        for name, model, tiers in cases:
            c, _ = build_cluster(args.machines, preset=name, fabric="fattree" if tiers else "switch", tiers=tiers)
            t = simulate(path, ["dense-allreduce"], Costs(c, WorkCost.zero()), model)[0].time_s
            f = ring_allreduce_seconds(numel, args.machines, c.gpus_per_machine, c.nvlink_bandwidth, c.nvlink_latency,
                                       c.nic_bandwidth, c.nic_latency, c.nics == "gpu", model,
                                       tiers=parse_tiers(tiers) if tiers else ())
            print(f"{name:14s} {model:6s} simulated {t * 1e6:9.3f} us  closed form {f * 1e6:9.3f} us  "
                  f"rel err {abs(t - f) / f:.1e}  ({c.describe()})", flush=True)


if __name__ == "__main__":
    main()
