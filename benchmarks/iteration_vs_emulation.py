"""The timeline against a real DDP training run on emulated ranks: measured vs predicted iteration time.

Back to back, on this machine: (1) the layer profile of the workload measured here in one process
(`zensim layers record`, one thread, as each rank runs); (2) the real run: `benchmarks/ddp_train.py --hook default`
(DistributedDataParallel, gloo, bucket_cap_mb = --bucket-mb) on --ranks emulated ranks at --bandwidth (`zensim emulate --script`,
namespaces: hold /tmp/zsim-netns.lock); (3) the timeline's prediction for the same cluster with the
emulator's calibration profile (links, host efficiency, 2 shared cores, cpu_slowdown scaling the
compute measured alone), every rank a process of the one host (`--shared-host`), gloo's sums free
(`--dense-work free`), fifo and maxmin. Prints the median measured iteration (after --warmup) and
the predictions with their error; --json prints the settings, the profile, the measured run (the emulator's
--json document) and the predictions instead (docs/iteration.md's table is rendered from a committed one).

    flock /tmp/zsim-netns.lock .venv/bin/python benchmarks/iteration_vs_emulation.py \\
        [--workload lstm-lm] [--batch-size 20] [--bucket-mb 25] [--ranks 4] [--bandwidth 200mbit] \\
        [--calibration docs/validation-data/profile-n4.json] [--save-layers FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from zensim.net.costs import Costs
from zensim.net.profile import load_profile
from zensim.report.table import format_table
from zensim.sim.cluster import build_cluster
from zensim.train.buckets import DDPBuckets
from zensim.train.iteration import simulate_iteration
from zensim.train.layers import load_layers

ZENSIM = str(Path(sys.executable).with_name("zensim"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", default="lstm-lm")
    p.add_argument("--batch-size", type=int, default=20)
    p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb (default 25: one bucket for lstm-lm)")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--bandwidth", default="200mbit")
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--calibration", default="docs/validation-data/profile-n4.json")
    p.add_argument("--save-layers", default=None, metavar="FILE", help="also keep the layer profile measured here")
    p.add_argument("--json", action="store_true", help="print the run as JSON")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        layers = Path(tmp) / "layers.json"
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        subprocess.run([ZENSIM, "layers", "record", "--workload", args.workload, "--batch-size", str(args.batch_size),
                        "--iterations", "12", "--warmup", "3", "-o", str(layers)], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        script = ["--workload", args.workload, "--batch-size", str(args.batch_size), "--steps", str(args.steps),
                  "--hook", "default", "--bucket-mb", str(args.bucket_mb)]
        out = subprocess.run([ZENSIM, "emulate", "--ranks", str(args.ranks), "--bandwidth", args.bandwidth,
                              "--script", "benchmarks/ddp_train.py", "--warmup", str(args.warmup), "--json", "--",
                              *script], check=True, capture_output=True, text=True)
        measured = json.loads(out.stdout)
        profile = load_layers(layers)
        if args.save_layers:
            profile.save(args.save_layers)
    calib = load_profile(args.calibration)
    cluster, _ = build_cluster(args.ranks, 1, nic=args.bandwidth, profile=args.calibration)
    costs = Costs.of(cluster, calib)
    rows, predictions = [], []
    for model in ("fifo", "maxmin"):
        rec = simulate_iteration(profile.scaled(calib.cpu_slowdown), "dense-allreduce", costs, model=model,
                                 bucketing=DDPBuckets(args.bucket_mb), iterations=6, dense_work="free",
                                 shared_host=True, dense_algorithm="ring")  # gloo's all-reduce: its ring
        err = rec.iteration_s / measured["median_s"] - 1
        rows.append([model, len(rec.buckets), measured["median_s"] * 1e3, measured["min_s"] * 1e3,
                     measured["max_s"] * 1e3, rec.iteration_s * 1e3, f"{err:+.1%}"])
        predictions.append({"model": model, "buckets": len(rec.buckets), "iteration_s": rec.iteration_s, "error": err})
    if args.json:
        print(json.dumps({"settings": {k: v for k, v in vars(args).items() if k not in ("json", "save_layers")},
                          "buckets": DDPBuckets(args.bucket_mb).describe(),
                          "profile_ms": {"forward": profile.forward_s * 1e3, "backward": profile.backward_s * 1e3,
                                         "optimizer": profile.optimizer_s * 1e3},
                          "cpu_slowdown": calib.cpu_slowdown, "measured": measured, "predictions": predictions},
                         indent=1))
        return 0
    print(f"{args.workload} batch {args.batch_size}, DDP buckets {DDPBuckets(args.bucket_mb).describe()}, "
          f"{args.ranks} emulated ranks at {args.bandwidth}; profile here: forward {profile.forward_s * 1e3:.1f} ms, "
          f"backward {profile.backward_s * 1e3:.1f} ms, optimizer {profile.optimizer_s * 1e3:.1f} ms (x cpu_slowdown "
          f"{calib.cpu_slowdown:.3f}); measured {measured['iterations'] - measured['warmup']} iterations after "
          f"{measured['warmup']} warm-up")
    print(format_table(rows, ["model", "buckets", "measured median ms", "min", "max", "predicted ms", "error"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
