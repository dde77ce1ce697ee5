"""What DeepFM's embedding gradient looks like with Criteo's 26 fields: density, densification, skewness.

Criteo's Kaggle display-advertising data has 26 categorical fields of published cardinalities (the
table every DLRM/DeepFM implementation sizes its embeddings by: 1460, 583, 10131227, ...); each
sample looks up one row per field. Here each field is capped at --cap rows (the hashing trick of
DLRM's --max-ind-range: ids beyond the cap folded onto it), the fields' rows are stacked in Criteo's
order, ids within a field are drawn Zipf(--exponent) with the frequent ids first (a vocabulary
sorted by count), and --workers workers draw --batch samples each. Printed: rows, the per-worker
density d of the looked-up rows, the densification gamma^k = |union of k workers| / (d rows) at
k = 8, 16, 128, the union's density at 128 workers, and the skewness s^8 (largest share of a
worker's rows in one of 8 even parts, times 8) beside ZEN's DeepFM (section 2.1, 5.3, Table 1:
d = 2.80%, 5.2% after a machine's 8 GPUs, so gamma^8 = 1.86; s^8 > 4.8, "more than 60% of the
non-zero gradients in the first partition"). No training: a looked-up row is a non-zero row of the
gradient.

    .venv/bin/python benchmarks/criteo_fields.py [--cap 100000] [--exponents 1.05,1.2,1.5] [--batches 256,1024]
"""

from __future__ import annotations

import argparse

import numpy as np

from zensim.report.table import format_table

# Criteo Kaggle (display advertising challenge) categorical cardinalities, C1..C26, as published with DLRM
CRITEO_KAGGLE = (1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27, 14992,
                 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572)


def worker_rows(sizes: np.ndarray, exponent: float, batch: int, workers: int, seed: int) -> list[np.ndarray]:
    """Each worker's distinct looked-up rows of the stacked table (one Zipf id per field per sample)."""
    offsets = np.concatenate([[0], np.cumsum(sizes)])[:-1]
    cdfs = [np.cumsum(1.0 / np.arange(1, s + 1) ** exponent) for s in sizes]
    cdfs = [c / c[-1] for c in cdfs]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(workers):
        ids = [np.minimum(np.searchsorted(c, rng.random(batch), side="right"), s - 1) + o
               for c, s, o in zip(cdfs, sizes, offsets)]
        out.append(np.unique(np.concatenate(ids)))
    return out


def statistics(rows: list[np.ndarray], total: int) -> dict:
    """Density, gamma^k for k = 8, 16, 128 (mean over groups of consecutive workers), s^8."""
    d = float(np.mean([len(r) for r in rows])) / total
    gamma = {k: float(np.mean([len(np.unique(np.concatenate(rows[i:i + k]))) for i in range(0, len(rows), k)]))
             / (d * total) for k in (8, 16, 128) if k <= len(rows)}
    parts = np.linspace(0, total, 9).astype(np.int64)
    s8 = float(np.mean([np.histogram(r, parts)[0].max() / len(r) * 8 for r in rows]))
    return {"density": d, "gamma": gamma, "s8": s8}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cap", type=int, default=100_000, help="rows per field at most (DLRM's --max-ind-range)")
    p.add_argument("--exponents", default="1.05,1.2,1.5")
    p.add_argument("--batches", default="256,1024", help="samples per worker (ZEN: 1024)")
    p.add_argument("--workers", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    sizes = np.minimum(np.array(CRITEO_KAGGLE, np.int64), args.cap)
    total = int(sizes.sum())
    table = []
    for batch in (int(x) for x in args.batches.split(",")):
        for a in (float(x) for x in args.exponents.split(",")):
            st = statistics(worker_rows(sizes, a, batch, args.workers, args.seed), total)
            g = st["gamma"]
            table.append([batch, a, total, st["density"], g.get(8), g.get(16), g.get(128),
                          st["density"] * g.get(128, float("nan")), st["s8"]])
    print(f"Criteo's 26 fields capped at {args.cap} rows, {args.workers} workers; ZEN's DeepFM: d 0.028, "
          "gamma^8 1.86, s^8 > 4.8")
    print(format_table(table, ["batch", "Zipf exponent", "rows", "d", "gamma^8", "gamma^16", "gamma^128",
                               "union d (128)", "s^8"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
