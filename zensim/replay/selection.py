"""ExDyna inside the training loop: its selection statistics per iteration, with a static-layout shadow.

n virtual data-parallel workers train one model in one process, on the device at hand. At iteration t:

1. every worker w computes its gradient g_w on its own micro-batch (the workload's `batch(t, w, n)`),
   flattened over the trainable parameters, on the device;
2. the dynamic team (zensim.sparsify.exdyna, the authors' rules) takes the n gradients into its
   residuals: worker w thresholds partition (t + w) mod n of its accumulated gradient, the index
   lists' union U is all-reduced (every worker's values at U, which leave its residual), the
   partitions are re-cut by one sweep and the threshold scaled from the counts;
3. the static shadow (`exdyna-static`: the first layout kept, the same threshold rule) takes the
   *same* n gradients into residuals of its own; it does not train the model, it sees the
   trajectory the dynamic team produces;
4. the model steps with the dynamic team's sum at U divided by n (the workload's optimizer);
5. per team the recorder keeps every worker's count k_i (worker i's, in partition (t + i) mod n),
   the threshold it used, the partition boundaries it used (n + 1 element offsets), k' = sum k_i,
   the density ratio k'/k (k = int(d numel)), the padding cost f(t) = n max_i k_i / k', the bytes
   the busiest worker sends in ExDyna's exchange for those counts (`exchange_bytes`) and, when
   priced, the exchange's simulated time on the cluster (the scheme run on the chunks, its message
   log replayed by zensim.net); beside them the workers' mean loss.
"""

from __future__ import annotations

import csv
import functools
import gzip
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zensim.errors import ConfigError
from zensim.replay.selection_batch import BatchedLSTM
from zensim.sparse.partition import even_boundaries
from zensim.sparsify import Team
from zensim.sparsify.exdyna import BLOCKS, Layout
from zensim.torchcache import optimizer_of

KEY = "flat"
TEAMS = ("dynamic", "static")


def padding(counts: Sequence[int]) -> float:
    """f(t) = n max_i k_i / sum_i k_i (1 when nothing was selected)."""
    total = int(sum(counts))
    return len(counts) * max(counts) / total if total else 1.0


def partition_bounds(layout: Layout) -> list[int]:
    """The n + 1 element offsets of the layout's partitions: partition p is [b[p], b[p + 1])."""
    n = len(layout.count)
    return [layout.bounds(p)[0] for p in range(n)] + [layout.numel]


def exchange_bytes(counts: Sequence[int], value_bytes: int = 4) -> int:
    """Bytes the busiest rank sends in ExDyna's exchange (zensim.schemes.catalog.exdyna) when rank i
    proposes counts[i] positions of exclusive partitions (so |U| = sum k_i): the counts' Bruck
    all-gather (int32), the index lists padded to max k_i on a ring ((n - 1) max k_i int32 ids),
    and the ring all-reduce of the |U| values in n even segments (rank r sends every segment but
    its own in the reduce-scatter, every one but r + 1's in the all-gather)."""
    n = len(counts)
    if n <= 1:
        return 0
    stages = math.ceil(math.log2(n))
    count_ids = sum(min(1 << s, n - (1 << s)) for s in range(stages))
    union = int(sum(counts))
    segments = np.diff(even_boundaries(union, n))
    values = 2 * union - segments - np.roll(segments, -1)  # rank r: all but segment r, all but r + 1
    return int(4 * (count_ids + (n - 1) * max(counts)) + value_bytes * values.max())


@dataclass
class TeamStep:
    """One team's selection at one iteration."""

    counts: list[int]  # k_i of worker i, who selected in partition (t + i) mod n
    threshold: float
    bounds: list[int]  # n + 1 element offsets of the partitions used
    bytes: int  # sent by the busiest rank in the exchange
    sim_s: float | None  # simulated time of the exchange (None: not priced this iteration)

    @property
    def selected(self) -> int:
        """k' = sum_i k_i."""
        return int(sum(self.counts))

    @property
    def f(self) -> float:
        """The padding cost f(t)."""
        return padding(self.counts)


@dataclass
class Row:
    """One iteration: the loss, both teams' selections, this process's seconds for it."""

    iteration: int
    loss: float
    k: int
    dynamic: TeamStep
    static: TeamStep
    wall_s: float

    def flat(self) -> dict[str, Any]:
        """The CSV row: scalars per team, lists as space-separated integers."""
        out: dict[str, Any] = {"iteration": self.iteration, "loss": self.loss, "k": self.k}
        for name in TEAMS:
            step: TeamStep = getattr(self, name)
            out.update({f"{name} k'": step.selected, f"{name} k'/k": step.selected / self.k, f"{name} f": step.f,
                        f"{name} threshold": step.threshold, f"{name} bytes": step.bytes,
                        f"{name} sim s": "" if step.sim_s is None else step.sim_s,
                        f"{name} k_i": " ".join(map(str, step.counts)),
                        f"{name} bounds": " ".join(map(str, step.bounds))})
        out["wall s"] = self.wall_s
        return out


def read_rows(records: Sequence[dict[str, str]]) -> list[dict[str, Any]]:
    """CSV rows (csv.DictReader) back as numbers and integer lists."""
    out = []
    for record in records:
        row: dict[str, Any] = {}
        for name, value in record.items():
            if name.endswith(("k_i", "bounds")):
                row[name] = [int(v) for v in value.split()]
            elif name in ("iteration", "k") or name.endswith(("k'", "bytes")):
                row[name] = int(value)
            else:
                row[name] = float(value) if value != "" else None
        out.append(row)
    return out


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """A run's CSV (`Row.flat` rows; gzip-compressed if the name ends in .gz) read back (`read_rows`)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        return read_rows(list(csv.DictReader(f)))


class Pricer:
    """ExDyna's exchange of one iteration run in memory on the teams' chunks, its log replayed on the
    cluster's network model: the synchronization's simulated seconds."""

    def __init__(self, workers: int, numel: int, costs: Any, model: str = "fifo") -> None:
        from zensim.schemes.registry import build_scheme

        self.program = build_scheme("exdyna", workers, numel)
        self.costs, self.model = costs, model

    def __call__(self, chunks: Sequence[Any]) -> float:
        """The makespan of the exchange of `chunks` (one UnionChunk per worker)."""
        from zensim.net.replay import replay
        from zensim.run.driver import run_ranks

        return replay(run_ranks(self.program, list(chunks), check=False).log, self.costs, self.model).makespan


class SelectionLoop:
    """The training loop of the module docstring over a workload (its model, batches, loss, optimizer)."""

    def __init__(self, work: Any, workers: int, density: float, device: str | torch.device = "cpu",
                 pricer: Callable[[Sequence[Any]], float] | None = None, price_every: int = 1,
                 batched: bool = False) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise ConfigError(f"--ranks {workers}: must be a positive integer")
        if not 0 < density <= 1:
            raise ConfigError(f"--density {density}: must be in (0, 1]")
        if price_every < 0:
            raise ConfigError(f"--price-every {price_every}: must be 0 (never) or positive")
        self.work, self.n, self.density = work, workers, density
        self.device = torch.device(device)
        self.net = work.model.to(self.device)
        self.params = [p for p in self.net.parameters() if p.requires_grad]
        self.numel = sum(p.numel() for p in self.params)
        self.k = max(1, int(density * self.numel))
        Layout.initial(self.numel, workers, BLOCKS)  # too few blocks for the workers: a ConfigError now
        self.optimizer = optimizer_of(work)
        self.teams = {"dynamic": Team("exdyna", workers, density), "static": Team("exdyna-static", workers, density)}
        self.pricer, self.price_every = pricer, price_every
        self.batched = BatchedLSTM(self.net, workers) if batched else None  # all workers in one pass
        self.seconds = {"gradients": 0.0, "selection": 0.0, "pricing": 0.0, "update": 0.0}

    def batch(self, t: int, w: int) -> Any:
        """Worker w's micro-batch of iteration t, on the device."""
        batch = self.work.batch(t, w, self.n)
        return tuple(x.to(self.device) for x in batch) if isinstance(batch, (tuple, list)) else batch.to(self.device)

    def gradients(self, t: int) -> tuple[list[torch.Tensor], float]:
        """Every worker's flat gradient at the current parameters on its own batch, and the mean loss
        (one worker after another, or all in one pass when batched)."""
        self.net.train()
        if self.batched is not None:
            stacked, losses = self.batched.gradients([self.batch(t, w) for w in range(self.n)])
            return list(stacked), float(losses.mean())
        grads, losses = [], []
        for w in range(self.n):
            self.net.zero_grad(set_to_none=True)
            loss = self.work.loss(self.net, self.batch(t, w))
            loss.backward()
            losses.append(loss.detach())
            grads.append(torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                                    for p in self.params]).float())
        return grads, float(torch.stack(losses).mean())

    def select(self, name: str, t: int, grads: Sequence[torch.Tensor]) -> tuple[TeamStep, Any]:
        """Team `name`'s selection of iteration t on `grads`: its record and its chunks."""
        team = self.teams[name]
        round_ = team.step(KEY, grads)
        lead = team.sparsifiers[0]
        sim_s = None
        if self.pricer is not None and self.price_every and t % self.price_every == 0:
            start = time.perf_counter()
            sim_s = self.pricer(round_.sent)
            self.seconds["pricing"] += time.perf_counter() - start
        return TeamStep(list(round_.proposed), float(lead.threshold(KEY)), partition_bounds(lead.layout(KEY)),
                        exchange_bytes(round_.proposed), sim_s), round_.sent

    def apply(self, chunks: Sequence[Any]) -> None:
        """The optimizer's step with the sum of the workers' values at the union, divided by n."""
        union = torch.as_tensor(np.asarray(chunks[0].indices, np.int64), device=self.device)
        total = functools.reduce(np.add, (np.asarray(c.values, np.float32) for c in chunks))
        dense = torch.zeros(self.numel, dtype=torch.float32, device=self.device)
        dense[union] = torch.as_tensor(total / np.float32(self.n), device=self.device)
        at = 0
        for p in self.params:
            p.grad = dense[at:at + p.numel()].view_as(p).to(p.dtype)
            at += p.numel()
        self.optimizer.step()

    def step(self, t: int) -> Row:
        """Iteration t (module docstring)."""
        start = time.perf_counter()
        grads, loss = self.gradients(t)
        mid = time.perf_counter()
        self.seconds["gradients"] += mid - start
        steps, chunks, priced = {}, {}, self.seconds["pricing"]
        for name in TEAMS:
            steps[name], chunks[name] = self.select(name, t, grads)
        del grads
        done = time.perf_counter()
        self.apply(chunks["dynamic"])
        end = time.perf_counter()
        self.seconds["update"] += end - done
        self.seconds["selection"] += done - mid - (self.seconds["pricing"] - priced)
        return Row(t, loss, self.k, steps["dynamic"], steps["static"], end - start)

    def residual(self, name: str, rank: int) -> torch.Tensor:
        """Worker `rank`'s residual in team `name`."""
        return self.teams[name].residual(rank, KEY)


def run(loop: SelectionLoop, iterations: int, deadline: float | None = None,
        on_row: Callable[[Row], None] | None = None, clock: Callable[[], float] = time.monotonic) -> list[Row]:
    """Up to `iterations` iterations; with a `deadline` (a `clock()` time), none is started that would
    likely end after it (the longest of the last 10 iterations, x 1.25, as the estimate: the first
    ones compile and warm up). `on_row` sees each row."""
    rows: list[Row] = []
    for t in range(iterations):
        if deadline is not None and rows and clock() + 1.25 * max(r.wall_s for r in rows[-10:]) > deadline:
            break
        row = loop.step(t)
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def summarize(rows: Sequence[dict[str, Any]], density_band: tuple[float, float] = (0.8, 1.25),
              run_length: int = 10) -> dict[str, Any]:
    """The two claims' figures from CSV rows (`read_rows`): the first iteration that starts `run_length`
    iterations in a row with k'/k inside the band ("reached", None if none), the share of iterations in
    the band from it on, median k'/k, and per team the mean and median f(t), k'/k, bytes and simulated
    time over the iterations from it on (all of them if never reached), and the mean f(t) over the last
    quarter of the iterations (f(t) changes as training goes)."""
    lo, hi = density_band
    inside = [lo <= r["dynamic k'/k"] <= hi for r in rows]
    start = next((i for i in range(len(rows) - run_length + 1) if all(inside[i:i + run_length])), None)
    settled = None if start is None else int(rows[start]["iteration"])
    later = list(rows[start:]) if start is not None else list(rows)
    out: dict[str, Any] = {"iterations": len(rows), "band": [lo, hi], "reached_from": settled,
                           "share_in_band_after": float(np.mean([lo <= r["dynamic k'/k"] <= hi for r in later])),
                           "median_ratio_after": float(np.median([r["dynamic k'/k"] for r in later]))}
    for name in TEAMS:
        f = np.array([r[f"{name} f"] for r in later])
        out[f"{name}_f_mean"], out[f"{name}_f_median"] = float(f.mean()), float(np.median(f))
        out[f"{name}_f_mean_last_quarter"] = float(np.mean([r[f"{name} f"] for r in rows[-max(1, len(rows) // 4):]]))
        out[f"{name}_ratio_median"] = float(np.median([r[f"{name} k'/k"] for r in later]))
        out[f"{name}_bytes_mean"] = float(np.mean([r[f"{name} bytes"] for r in later]))
        sims = [r[f"{name} sim s"] for r in later if r[f"{name} sim s"] is not None]
        out[f"{name}_sim_s_mean"] = float(np.mean(sims)) if sims else None
    return out


def partition_loads(rows: Sequence[dict[str, Any]], team: str = "dynamic") -> dict[str, Any]:
    """Over CSV rows (`read_rows`): each partition's mean count relative to the mean partition's (worker
    w scanned partition (t + w) mod n), each worker's mean count relative to the mean worker's, how often
    each partition held the largest count, and the blocks per partition of the last row's layout (the
    block size read off the first row's boundaries: Layout.initial gives partition 0 whole blocks)."""
    n = len(rows[0][f"{team} k_i"])
    by_partition, by_worker = np.zeros((len(rows), n)), np.zeros((len(rows), n))
    for j, r in enumerate(rows):
        by_worker[j] = r[f"{team} k_i"]
        by_partition[j, [(r["iteration"] + w) % n for w in range(n)]] = r[f"{team} k_i"]
    first = rows[0][f"{team} bounds"]
    block = first[1] // Layout.initial(first[-1], n, BLOCKS).count[0]
    bounds = np.array(rows[-1][f"{team} bounds"])
    return {"partition_load": (by_partition.mean(0) / by_partition.mean()).tolist(),
            "worker_load": (by_worker.mean(0) / by_worker.mean()).tolist(),
            "largest": np.bincount(by_partition.argmax(1), minlength=n).tolist(),
            "blocks": (np.diff(bounds[:-1]) // block).tolist() + [int((bounds[-1] - bounds[-2]) // block)],
            "block_size": int(block), "min_blocks": BLOCKS / (4 * n)}


def plot(rows: Sequence[dict[str, Any]], title: str, path: str, density: float) -> None:
    """Three panels against the iteration: actual density d k'/k (dynamic, static, the user's d),
    f(t) dynamic and static, and the loss."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    its = [r["iteration"] for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    for name, style in zip(TEAMS, ("-", "--")):
        axes[0].plot(its, [density * r[f"{name} k'/k"] for r in rows], style, lw=0.8, label=f"actual density, {name}")
        axes[1].plot(its, [r[f"{name} f"] for r in rows], style, lw=0.8, label=f"f(t), {name} layout")
    axes[0].axhline(density, color="gray", lw=0.8, label="user-set density d")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("density k'/numel")
    axes[1].axhline(1, color="gray", lw=0.8)
    axes[1].set_ylabel("f(t) = n max k_i / sum k_i")
    axes[2].plot(its, [r["loss"] for r in rows], lw=0.8)
    axes[2].set_ylabel("training loss (mean of workers)")
    axes[2].set_xlabel("iteration")
    for ax in axes[:2]:
        ax.legend(fontsize=8)
    axes[0].set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
