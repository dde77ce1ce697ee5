"""Search times of the fusion and compression optimizers on synthetic profiles, and Espresso's Lemma 4.1 check.

Cupcake: Algorithm 5.1 as printed (its two prunings only), with the exact dominance rule, and the
O(N^3) DP, on chains of N tensors whose communication is `share` x their backward time (0.3:
compute-bound, where the branch and bound is slowest; 1; 3: communication-bound). Backward times
are exponential (mean 0.3 ms), sizes log-normal, compression alpha 0.25 ms (the thesis' DGC launch
cost), communication alpha 50 us. Every search returns the optimum, so their times are comparable;
a search that exceeds --node-limit nodes is reported as such.

Espresso (--espresso-lemma): on 60 random small models, the best CPU offloading of the compressed
tensors by brute force over every subset, against Algorithm 4.2 offloading the nearest-to-output or
the farthest-from-output tensors of each group first (Lemma 4.1).

    .venv/bin/python benchmarks/fusion_search.py [--tensors 50,100,160,314] [--share 0.3,1,3]
        [--node-limit 2000000] [--models] [--espresso-lemma] [--json]

--models: the same searches on BERT-base and GPT-2 by shape (V100 FLOP estimate, 16 x 8 GPUs at
25 Gbps, DGC's compression cost; the 'share' column names the model).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from dataclasses import replace

import numpy as np

from zensim.report.table import format_table
from zensim.train.fusion.chain import Affine, Chain
from zensim.train.fusion.cupcake import SearchLimit, brute_force, optimal_fusion, optimal_fusion_dp
from zensim.train.fusion.espresso import Model, System, espresso, timeline


def synthetic_chain(n: int, share: float, seed: int) -> Chain:
    """A chain of n tensors whose total communication is `share` x total backward."""
    rng = np.random.default_rng(seed)
    back = rng.exponential(3e-4, n)
    sizes = rng.lognormal(12, 1.5, n)
    return Chain(back, sizes, Affine(2.5e-4, 0.02 * back.sum() / sizes.sum()),
                 Affine(5e-5, share * back.sum() / sizes.sum()))


def cupcake_rows(tensors: list[int], shares: list[float], node_limit: int) -> list[dict]:
    """One row per (N, share): the time and nodes of each search, and the optimum's gain."""
    rows = []
    for n in tensors:
        for share in shares:
            chain = synthetic_chain(n, share, seed=n)
            dp = optimal_fusion_dp(chain)
            row = {"tensors": n, "share": share, "dp_s": round(dp.seconds, 3), "groups": len(dp.ends),
                   "vs_layerwise": round(dp.time / chain.time(chain.layerwise()), 4),
                   "vs_single": round(dp.time / chain.time(chain.single()), 4)}
            for label, kw in (("thesis", {"dominance": False}), ("thesis+dominance", {"dominance": True})):
                try:
                    found = optimal_fusion(chain, node_limit=node_limit, **kw)
                    assert abs(found.time - dp.time) <= 1e-12 * dp.time
                    row[f"{label}_s"], row[f"{label}_nodes"] = round(found.seconds, 3), found.nodes
                except SearchLimit:
                    row[f"{label}_s"], row[f"{label}_nodes"] = None, f">{node_limit}"
            if n <= 20:
                row["brute_force_s"] = round(brute_force(chain).seconds, 3)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def model_rows(node_limit: int) -> list[dict]:
    """Cupcake's searches on BERT-base and GPT-2 (V100 FLOP estimate) at 16 x 8, 25 Gbps, DGC's cost."""
    from zensim.train.fusion.shapes import DEVICES, MODELS, estimate
    from zensim.net.topology import ClusterSpec
from zensim.train.fusion.strategies import Compression, Workload, plan
    rows = []
    for name, tokens in (("bert-base", 32 * 128), ("gpt2", 8 * 1024)):
        e = estimate(MODELS[name](), tokens, DEVICES["v100"])
        cluster = ClusterSpec(16, 8, 25e9 / 8, nic_latency=5e-6, nvlink_latency=2e-6)
        chain = plan("layerwise", Workload(name, e.sizes, e.backward, e.forward, 1), cluster, Compression()).chain
        dp = optimal_fusion_dp(chain)
        row = {"tensors": chain.n, "share": name, "dp_s": round(dp.seconds, 3), "groups": len(dp.ends),
               "vs_layerwise": round(dp.time / chain.time(chain.layerwise()), 4),
               "vs_single": round(dp.time / chain.time(chain.single()), 4)}
        for label, kw in (("thesis", {"dominance": False}), ("thesis+dominance", {"dominance": True})):
            try:
                found = optimal_fusion(chain, node_limit=node_limit, **kw)
                row[f"{label}_s"], row[f"{label}_nodes"] = round(found.seconds, 3), found.nodes
            except SearchLimit:
                row[f"{label}_s"], row[f"{label}_nodes"] = None, f">{node_limit}"
        rows.append(row)
    return rows


def lemma_rows(models: int = 60) -> dict:
    """How often each offloading order misses the brute-force best subset."""
    rng = np.random.default_rng(1)
    misses = {"nearest first": 0, "farthest first": 0}
    for _ in range(models):
        n = int(rng.integers(3, 9))
        sizes = rng.choice([1e6, 4e6, 16e6], n)
        m = Model(sizes, rng.exponential(2e-3, n), forward=0.01)
        s = System(4, 2, 25e9 / 8, 50e9, 0.02, Affine(1e-3, 1 / 50e9), Affine(5e-4, 1 / 50e9),
                   Affine(rng.exponential(2e-3), 1 / 5e9), Affine(1e-3, 1 / 5e9), nic_latency=2e-5)
        base = [replace(o, device="gpu") if o.compress else o for o in espresso(m, s).strategy]
        gpu = [i for i, o in enumerate(base) if o.compress]

        def F(sub: set[int]) -> float:
            return timeline(m, s, [replace(o, device="cpu") if i in sub else o for i, o in enumerate(base)]).time

        best = min(F(set(c)) for r in range(len(gpu) + 1) for c in itertools.combinations(gpu, r))
        groups: dict = {}
        for i in gpu:
            groups.setdefault((sizes[i], base[i]), []).append(i)
        for label, reverse in (("nearest first", False), ("farthest first", True)):
            lists = [sorted(g, reverse=reverse) for g in groups.values()]
            got = min(F({i for members, u in zip(lists, us) for i in members[:u]})
                      for us in itertools.product(*(range(len(g) + 1) for g in lists)))
            misses[label] += got > best * (1 + 1e-9)
    return {"models": models, "misses": misses}


def main() -> None:
    """Parse arguments, run the searches, print a table (or JSON)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tensors", default="50,100,160,314")
    ap.add_argument("--share", default="0.3,1,3")
    ap.add_argument("--node-limit", type=int, default=2_000_000)
    ap.add_argument("--espresso-lemma", action="store_true")
    ap.add_argument("--models", action="store_true", help="BERT-base and GPT-2 shapes instead of synthetic chains")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = {"machine": f"{os.cpu_count()} cores"}
    if args.espresso_lemma:
        out["lemma_4_1"] = lemma_rows()
    elif args.models:
        out["cupcake"] = model_rows(args.node_limit)
    else:
        out["cupcake"] = cupcake_rows([int(x) for x in args.tensors.split(",")],
                                      [float(x) for x in args.share.split(",")], args.node_limit)
    if args.json:
        print(json.dumps(out, indent=1))
    elif "cupcake" in out:
        headers = ["tensors", "share", "groups", "vs_layerwise", "vs_single", "dp_s", "thesis_s", "thesis_nodes",
                   "thesis+dominance_s", "thesis+dominance_nodes", "brute_force_s"]
        print(format_table([[row.get(h) for h in headers] for row in out["cupcake"]], headers))
        print(f"({out['machine']}, shared)")
    else:
        print(out)


if __name__ == "__main__":
    main()
