"""Why ExDyna's two claims do or do not hold on a dense trace: its threshold against the one that
would have selected exactly k, and its padding cost f(t) against the best any block layout could
reach on the same iteration.

Per iteration t, ExDyna (dynamic layout) and its static-partition variant run side by side on the
trace's gradients (each with its own residuals, as `zensim simulate --iterations` runs them), and
for the dynamic one the script reads what each worker scanned: partition (t + rank) mod n of its
accumulated gradient. From that one vector of n disjoint stretches it prints

- `threshold`: ExDyna's threshold delta_t (the authors' rule: 1/(2 sqrt k) at t = 0, then x 1.005,
  x 1.00125 or x 0.995 a step);
- `oracle`: delta*_t, the k-th largest scanned magnitude, the threshold at which the union would
  have held exactly k elements; `ratio` delta_t / delta*_t and `drift` delta*_t / delta*_(t-1);
- `grad oracle`: the same k-th largest taken over the fresh gradients alone (what each worker
  scanned without its residual) and `grad drift` its ratio to the previous iteration's: the part of
  delta*'s drift that training itself causes; the rest is the residuals' build-up (error feedback
  starting from zero residuals at the first replayed iteration);
- `k'/k` (the user's density reached when 1) and the steps of 0.5% that separate delta_t from
  delta*_t: ln(delta*_t / delta_t) / ln(1.005);
- `f dyn`, `f static` (f(t) = n max_i k_i / sum_i k_i of each variant);
- `f best`: n M / k', M the least largest partition count of any layout of the same blocks into n
  contiguous partitions for the counts of this iteration (a linear partition; a bound only for
  layouts that leave every position with the worker that scanned it, see `f workers`); `top block`: n x the largest count of one block / k', a
  bound by itself; `f lag`: f(t) of the layout that was best for the previous iteration's counts,
  what a balancer that reacts perfectly one iteration late would get; `f poisson`: E[f] when every
  partition expects k'/n with Poisson scatter (the floor of a perfect balance in expectation: about
  1 + 1.8 / sqrt(k'/n) at n = 16; the paper's k'/n at d = 0.001 is in the thousands); `hit blocks`:
  the effective number of blocks the hits sit in, (sum_b c_b)^2 / sum_b c_b^2 over the block counts
  c_b (1,024 when spread evenly; when it is a few per partition, no layout of whole blocks that
  does not know where the next hits fall can be balanced). (A worker whose partition has no
  element above the threshold sends one anyway, the authors' fallback: k' includes those.)
- `f workers`: n max_w K_w / sum_w K_w, K_w the number of elements of worker w's *whole*
  accumulated gradient at or above the threshold: f(t) if every partition held the same share of
  the hits of whichever worker scans it, so that only the workers' own sizes differ (a worker
  whose images gave large gradients brings more hits to any partition it scans). `f best` and
  `f lag` re-cut the positions but keep, at each one, the worker that scanned it: they do not see
  this; `norm spread`: max_w ||g_w|| / mean_w ||g_w|| over the workers' fresh gradients.

With `--permute SEED` every gradient's elements are put in one fixed random order first (the same
for every worker and iteration): contiguous blocks and partitions then hold positions scattered
over the whole model, as a hashed layout would. A diagnostic: ExDyna's partitions are contiguous
(coalesced memory access on GPUs), so this is not the authors' method; it says how much of f(t)
comes from where the hits sit in the flat vector. With `--equalize` every worker's gradient is
scaled to the mean norm of the n at that iteration (also a diagnostic: the training signal is
changed) to see how much of f(t) the workers' unequal sizes make.

Usage: .venv/bin/python benchmarks/exdyna_claims.py TRACE [--iterations A:B] [--density D] [--window N] [--csv FILE]
       [--plot PNG] [--permute SEED] [--equalize]
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys

import numpy as np

from zensim.replay.iterations import parse_range
from zensim.report.table import format_table
from zensim.sparsify import Team
from zensim.sparsify.exdyna import GAMMA
from zensim.trace.format import Trace
from zensim.trace.gradients import TraceGradients

KEY = "flat"


def pack(counts: np.ndarray, bound: int) -> list[int]:
    """Greedy cut of `counts` into contiguous groups of sum <= bound: the first index of each group."""
    starts, load = [0], 0
    for i, c in enumerate(counts):
        if load + c > bound and load > 0:
            starts.append(i)
            load = 0
        load += c
    return starts


def best_cuts(counts: np.ndarray, parts: int) -> tuple[int, list[int]]:
    """The least possible largest sum when `counts` is cut into `parts` contiguous groups, and such
    a cut (first index of each group; binary search on the bound, greedy packing)."""
    lo, hi = int(counts.max(initial=0)), int(counts.sum())
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if len(pack(counts, mid)) <= parts else (mid + 1, hi)
    return lo, pack(counts, lo)


def largest_group(counts: np.ndarray, starts: list[int]) -> int:
    """The largest sum of `counts` over the groups beginning at `starts`."""
    return int(np.add.reduceat(counts, starts).max()) if len(counts) else 0


def scanned(team: Team, accs: list[np.ndarray], t: int) -> np.ndarray:
    """|accs[r]| at the positions worker r scanned at iteration t (partition (t + r) mod n)."""
    lead = team.sparsifiers[0]
    layout = lead.layout(KEY)
    out = np.empty(len(accs[0]), np.float32)
    for rank, acc in enumerate(accs):
        start, end = layout.bounds(lead.partition_of(t, rank))
        out[start:end] = np.abs(acc[start:end])
    return out


def block_counts(mags: np.ndarray, threshold: float, block_size: int, blocks: int) -> np.ndarray:
    """Elements >= threshold per block (the remainder elements counted in the last block)."""
    hits = (mags >= np.float32(threshold)).astype(np.int64)
    counts = np.add.reduceat(hits[: block_size * blocks], np.arange(0, block_size * blocks, block_size))
    counts[-1] += int(hits[block_size * blocks:].sum())
    return counts


def poisson_floor(mean: float, n: int, draws: int = 2000) -> float:
    """E[n max_i X_i / sum_i X_i] for n independent Poisson(mean) counts: the f(t) of a layout
    whose partitions all expect the same count, from the counts' own randomness alone."""
    counts = np.random.default_rng(0).poisson(mean, (draws, n))
    totals = counts.sum(axis=1)
    ok = totals > 0
    return float(np.mean(n * counts.max(axis=1)[ok] / totals[ok]))


def analyse(source: TraceGradients, first: int, last: int, density: float,
            permute: int | None = None, equalize: bool = False) -> list[dict]:
    """One row per iteration (see the module docstring); `permute`: the seed of a fixed random order
    of the elements, applied to every gradient first (None: the trace's order); `equalize`: scale
    every worker's gradient to the workers' mean norm."""
    n, numel = source.workers, source.numel
    order = None if permute is None else np.random.default_rng(permute).permutation(numel)
    k = max(1, int(density * numel))
    dynamic, static = Team("exdyna", n, density), Team("exdyna-static", n, density)
    rows, previous, previous_grad, previous_cuts = [], None, None, None
    for t in range(first, last):
        grads = [source.gradient(t, w) for w in range(n)]
        if order is not None:
            grads = [g[order] for g in grads]
        if equalize:
            sizes = np.array([np.linalg.norm(g.astype(np.float64)) for g in grads])
            grads = [g * np.float32(sizes.mean() / max(size, 1e-30)) for g, size in zip(grads, sizes)]
        accs = [(dynamic.residual(r, KEY) if t > first else 0) + g for r, g in enumerate(grads)]
        ks = np.array(dynamic.step(KEY, grads).proposed)
        ks_static = np.array(static.step(KEY, grads).proposed)
        threshold = dynamic.sparsifiers[0].threshold(KEY)
        whole = np.array([np.count_nonzero(np.abs(acc) >= np.float32(threshold)) for acc in accs])
        norms = np.array([np.linalg.norm(g.astype(np.float64)) for g in grads])
        lead = dynamic.sparsifiers[0]
        layout, threshold = lead.layout(KEY), lead.threshold(KEY)
        mags = scanned(dynamic, accs, t - first)
        oracle = float(np.partition(mags, numel - k)[numel - k])
        fresh = scanned(dynamic, grads, t - first)
        grad_oracle = float(np.partition(fresh, numel - k)[numel - k])
        counts = block_counts(mags, threshold, layout.block_size, layout.blocks)
        best, cuts = best_cuts(counts, n)
        lagged = n * max(1, largest_group(counts, previous_cuts)) / ks.sum() if previous_cuts else float("nan")
        previous_cuts = cuts
        rows.append({
            "iteration": t, "threshold": threshold, "oracle": oracle, "ratio": threshold / oracle,
            "drift": oracle / previous if previous else float("nan"), "grad oracle": grad_oracle,
            "grad drift": grad_oracle / previous_grad if previous_grad else float("nan"), "k'/k": ks.sum() / k,
            "steps": math.log(oracle / threshold) / math.log(1 + GAMMA),
            "f dyn": n * ks.max() / ks.sum(), "f static": n * ks_static.max() / ks_static.sum(),
            "f best": n * max(1, best) / ks.sum(), "f lag": lagged, "f poisson": poisson_floor(ks.sum() / n, n),
            "f workers": n * whole.max() / max(1, whole.sum()), "norm spread": norms.max() / norms.mean(),
            "top block": n * counts.max() / ks.sum(),
            "hit blocks": float(counts.sum()) ** 2 / max(1, int(np.dot(counts, counts))),
            "blocks moved": int(np.abs(layout.count - layout.initial(numel, n, layout.blocks).count).sum() // 2),
        })
        previous, previous_grad = oracle, grad_oracle
    return rows


def csv_text(rows: list[dict]) -> str:
    """The per-iteration rows as the CSV that --csv writes."""
    import io

    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def window_mean(rows: list[dict], column: str) -> float:
    """The mean of `column` over `rows`; for a drift (a ratio per iteration) the geometric mean, the
    net factor per iteration over the window."""
    values = np.array([r[column] for r in rows], float)
    if "drift" in column:
        return float(np.exp(np.nanmean(np.log(values)))) if np.isfinite(values).any() else float("nan")
    return float(np.nanmean(values))


def plot(rows: list[dict], title: str, path: str, density: float) -> None:
    """Three panels against the iteration: delta_t and delta*_t; actual density d' = d k'/k against
    the user-set d; f(t) dynamic, static and the references."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    its = [r["iteration"] for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    axes[0].plot(its, [r["threshold"] for r in rows], label="ExDyna's threshold (authors' rule)")
    axes[0].plot(its, [r["oracle"] for r in rows], label="threshold giving exactly k (oracle)")
    axes[0].set_ylabel("threshold")
    axes[1].plot(its, [density * r["k'/k"] for r in rows], label="actual density d' (ExDyna)")
    axes[1].axhline(density, color="gray", lw=0.8, label="user-set density d")
    axes[1].set_ylabel("density")
    for name in ("f dyn", "f static", "f workers", "f lag", "f best", "f poisson"):
        axes[2].plot(its, [r[name] for r in rows], label={"f dyn": "f(t) ExDyna (dynamic layout)",
                     "f static": "f(t) static partitions",
                     "f workers": "f(t) if partitions differed only by their scanning worker's size",
                     "f lag": "f(t) of the previous iteration's best layout",
                     "f best": "f(t) best contiguous layout, same scanning worker per position",
                     "f poisson": "E f(t), equal expected loads, Poisson counts"}[name])
    axes[2].axhline(1, color="gray", lw=0.8)
    axes[2].set_ylabel("f(t)")
    axes[2].set_xlabel("iteration")
    for ax in axes:
        ax.legend(fontsize=8)
    axes[0].set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    """Print the per-iteration table and a summary (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--iterations", default=":")
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--window", type=int, default=10, help="iterations per window of the summary (default 10)")
    parser.add_argument("--permute", type=int, default=None, metavar="SEED",
                        help="put the elements in a fixed random order first (a diagnostic, see above)")
    parser.add_argument("--equalize", action="store_true",
                        help="scale every worker's gradient to the workers' mean norm (a diagnostic, see above)")
    parser.add_argument("--plot", default=None, help="PNG: thresholds, k'/k and f(t) against the iteration")
    args = parser.parse_args()
    source = TraceGradients(Trace.open(args.trace))
    first, last = parse_range(args.iterations, source.iterations)
    rows = analyse(source, first, last, args.density, args.permute, args.equalize)
    names = list(rows[0])
    print(f"{args.trace}: {source.workers} workers, {source.numel:,} elements, d = {args.density}, "
          f"k = {max(1, int(args.density * source.numel))}, iterations {first}:{last}"
          + ("" if args.permute is None else f", elements in a fixed random order (seed {args.permute})")
          + (", gradients scaled to the workers' mean norm" if args.equalize else ""))
    print(format_table([[r[c] for c in names] for r in rows], names))
    columns = ("k'/k", "ratio", "drift", "grad drift", "f dyn", "f static", "f best", "f lag", "f poisson", "f workers",
               "norm spread", "top block", "hit blocks")
    windows = [rows[i:i + args.window] for i in range(0, len(rows), args.window)]
    print(f"means over windows of {args.window} iterations (drifts: geometric means):")
    print(format_table([[f"{w[0]['iteration']}-{w[-1]['iteration']}"] + [window_mean(w, c) for c in columns]
                        for w in windows], ["iterations", *columns]))
    if args.plot:
        plot(rows, f"{os.path.basename(args.trace)}, {source.workers} workers, d = {args.density}", args.plot, args.density)
    if args.csv:
        with open(args.csv, "w", newline="") as out:
            out.write(csv_text(rows))


if __name__ == "__main__":
    sys.exit(main())
