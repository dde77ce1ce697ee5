"""Benchmark ZEN hierarchical hashing (Algorithm 1) at the paper's scale.

Default: 10.7M indices of a |G| = 214M tensor (d = 5%, DeepFM's embedding size), n = 16
partitions, k = 3, r1 = 2 |G| d_G in total, r2 = r1 / 10. Prints the wall time of `split` (h0 and
h1 hashing, grouping by partition, the k parallel rounds with read-back, serial memory), the
same without the memory model (h0 + grouping only), and the collision, serial and overflow
rates. Target: <= 1.0 s on 2 cores. The figures are noisy on a shared machine: take the best of
`--repeats` runs.

`--lookups` adds the hash-domain lookups a wire format does for each part (`ExplicitDomain.positions`
of part j's ids in 𝕀_j, all n parts), on numpy and on torch (CPU, one thread): through the
partition's position table (and the table's one-time build) against the binary search it replaced
(docs/sparse.md, Domains). `zensim_hook("zen")` on the scaled DDP model (250k x 64, 2 ranks) is
about `--numel 16000000 --density 0.23 --n 2`.

    .venv/bin/python benchmarks/hashing.py [--numel 214000000] [--density 0.05] [--n 16] [--lookups] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from zensim.report.table import format_table
from zensim.sparse import HierarchicalHash, SparseChunk
from zensim.sparse import xp as backend


def timed(fn, repeats: int) -> float:
    """Best wall time of `repeats` calls of `fn`."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def lookups(part: HierarchicalHash, chunk: SparseChunk, repeats: int) -> dict[str, float]:
    """Seconds to look up every part's ids in its hash domain (all n parts), through the position
    table and by binary search, on numpy and torch (CPU, one thread); the table's build once."""
    import torch

    torch.set_num_threads(1)
    parts = [(p.indices, d) for p, d in zip(part.split(chunk), part.domains())]
    start = time.perf_counter()
    parts[0][1].table.like(parts[0][0])
    out = {"seconds_table_build": time.perf_counter() - start}
    for library, conv in (("numpy", lambda x: x), ("torch", torch.from_numpy)):
        on = [(conv(ids), d, conv(d.elements)) for ids, d in parts]
        out[f"seconds_lookup_table_{library}"] = timed(lambda: [d.positions(ids) for ids, d, _ in on], repeats)
        out[f"seconds_lookup_search_{library}"] = timed(lambda: [backend.locate(el, ids) for ids, _, el in on], repeats)
    return out


def main() -> None:
    """Parse arguments, hash, print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--numel", type=int, default=214_000_000)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--load", type=float, default=2.0, help="r1 = load x nnz slots")
    ap.add_argument("--scope", default="total", choices=["total", "per_partition"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lookups", action="store_true", help="also time the hash-domain lookups")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    nnz = int(args.numel * args.density)
    chunk = SparseChunk(np.sort(rng.choice(args.numel, nnz, replace=False)).astype(np.int64))
    part = HierarchicalHash(args.numel, args.n, seed=args.seed, k=args.k, load=args.load, scope=args.scope)
    bare = HierarchicalHash(args.numel, args.n, seed=args.seed, model_memory=False)
    t_full = timed(lambda: part.split(chunk), args.repeats)
    t_bare = timed(lambda: bare.split(chunk), args.repeats)
    r1, r2 = part.memory(nnz)
    stats = part.stats
    result = {
        "numel": args.numel, "nnz": nnz, "n": args.n, "k": args.k, "r1_per_partition": r1,
        "r2_per_partition": r2, "seconds": t_full, "seconds_h0_grouping_only": t_bare,
        "collision_rate": stats.rate("collided"), "serial_rate": stats.rate("serial"),
        "overflow_rate": stats.rate("overflow"), "lost": stats.lost,
        **(lookups(bare, chunk, args.repeats) if args.lookups else {}),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    rows = [[k, float(v) if isinstance(v, float) else v] for k, v in result.items()]
    print(format_table(rows, ["figure", "value"]))
    print(f"target <= 1.0 s: {'met' if t_full <= 1.0 else 'NOT met'} (best of {args.repeats}, shared 2-core machine)")


if __name__ == "__main__":
    main()
