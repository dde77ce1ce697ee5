"""The held-out check of `zensim trace scale` (issue 24 item 2, docs/trace-scale.md).

For each shipped 128-worker trace: fit the model on its first 16 and on its first 32 workers, draw
128 workers (as many iterations as the trace), and compare with the real 128 workers: density,
overlap, gamma^k (k = 16, 32, 64, 128), s^k (k = 8, 32, 128), then at 128 x 1 and 16 x 8 ZEN's push
and pull imbalance and every scheme's bytes and simulated time (means over the iterations; fifo
sharing, default work costs, zensim.sim.build_cluster's default links). Targets (`*`): gamma^128,
bytes and time within 5%. Prints a table per trace, or JSON with --json (what produced it included).

    .venv/bin/python benchmarks/trace_scale.py [--traces traces/lstm-lm-128w.zt,traces/deepfm-128w.zt]
        [--fits 16,32] [--schemes distinct,zen,...] [--shapes 128x1,16x8] [--model fifo] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from zensim.report.provenance import file_sha256, provenance
from zensim.report.table import format_table
from zensim.sim.heldout import TOLERANCE, compare, measure
from zensim.trace.format import Trace
from zensim.trace.scale import scale

SCHEMES = "distinct,dense-allreduce,agsparse-ring,sparcml,sparse-ps,omnireduce,zen-coo,zen,hier-central"


def held_out(path: str, fits: list[int], schemes: str, shapes: list[tuple[int, int]], model: str, seed: int,
             workdir: Path) -> dict:
    """Scale `path` from each fit, measure all, and compare; with the seconds each part took."""
    with Trace.open(path) as trace:
        workers = trace.workers
    out: dict = {"trace": path, "sha256": file_sha256(path), "workers": workers, "fits": {}}
    t0 = time.perf_counter()
    real = measure(path, schemes, shapes, model)
    out["measure_real_s"] = time.perf_counter() - t0
    scaled = {}
    for n in fits:
        target = workdir / f"{Path(path).stem}-fit{n}.zt"
        t0 = time.perf_counter()
        prov = scale(path, target, workers, fit_workers=n, seed=seed)
        scale_s = time.perf_counter() - t0
        scaled[f"fit{n}"] = measure(target, schemes, shapes, model)
        out["fits"][f"fit{n}"] = {"fit_workers": n, "scale_s": scale_s, "sha256": file_sha256(target),
                                  "rows": {k: v["row"] for k, v in prov["model"].items()},
                                  "persistence": {k: v["persistence"] for k, v in prov["model"].items()}}
    out["rows"] = compare(real, scaled, workers)
    return out


def render(result: dict) -> str:
    """The table of one trace: metric, real, and per fit its value and error in %."""
    labels = list(result["fits"])
    rows = []
    for r in result["rows"]:
        cells = [("* " if r["target"] else "  ") + r["metric"], r["real"]]
        for label in labels:
            err = r[f"{label} err"]
            cells += [r[label], None if err is None else round(100 * err, 2)]
        cells.append({True: "ok", False: "MISS", None: ""}[r["within"]])
        rows.append(cells)
    heads = ["metric", "real"] + [h for label in labels for h in (label, f"{label} err %")] + [f"<= {TOLERANCE:.0%}"]
    misses = [r["metric"] for r in result["rows"] if r["within"] is False]
    fits = ", ".join(f"{k}: scaled in {v['scale_s']:.1f} s, rows {v['rows']}" for k, v in result["fits"].items())
    return "\n".join([f"{result['trace']} (sha256 {result['sha256'][:12]}, {result['workers']} workers); {fits}",
                      format_table(rows, heads, precision=5),
                      f"targets missed: {', '.join(misses) if misses else 'none'}"])


def main() -> int:
    """Run the check on every trace and print tables or JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--traces", default="traces/lstm-lm-128w.zt,traces/deepfm-128w.zt")
    p.add_argument("--fits", default="16,32", help="fit on the first n workers, for each n")
    p.add_argument("--schemes", default=SCHEMES)
    p.add_argument("--shapes", default="128x1,16x8", help="machines x GPUs per machine")
    p.add_argument("--model", default="fifo", help="bandwidth sharing model (default fifo)")
    p.add_argument("--seed", type=int, default=0, help="seed of the scaled traces")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    fits = [int(x) for x in args.fits.split(",")]
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="zsim-trace-scale-") as tmp:
        for path in args.traces.split(","):
            results.append(held_out(path, fits, args.schemes, shapes, args.model, args.seed, Path(tmp)))
            if not args.json:
                print(render(results[-1]), flush=True)
    if args.json:
        print(json.dumps({"produced_by": provenance(" ".join(sys.argv)), "model": args.model, "seed": args.seed,
                          "schemes": args.schemes, "shapes": args.shapes, "tolerance": TOLERANCE,
                          "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
