"""The scheme in the training loop: virtual workers whose gradients are synchronized through a method
(sparsifier + scheme, zensim.replay.method) in memory, so that the model follows the trajectory that
method produces; the loss per iteration next to the simulated time of each synchronization gives loss
against simulated wall-clock for a cluster one does not have (the papers' time-to-accuracy plots).

Each method trains its own copy of the workload's model from the same initial parameters on the same
micro-batches: at every iteration worker w computes its gradient on its micro-batch (forward and
backward), the n flat gradients go through `Method.step`, and the applied sum divided by n becomes
the gradient the optimizer steps with (momentum after the synchronization, as in the papers' code).
The wall-clock of an iteration is `compute_s` (the forward and backward time of one worker on the
target GPUs, which the user gives: this machine's CPU time says nothing about it; default 0, so the
clock is communication only) plus the simulated synchronization time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from zensim.net.costs import Costs
from zensim.net.replay import replay
from zensim.replay.method import Method
from zensim.torchcache import optimizer_of


@dataclass
class TrainingRecord:
    """One method at one iteration of training."""

    method: str
    iteration: int
    loss: float
    sync_s: float
    clock_s: float
    actual_density: float
    test_loss: float | None
    test_accuracy: float | None
    lossless: bool | None = None  # the method's scheme's capabilities: it ends with the dense sum (None: not recorded)

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return asdict(self)


def flat_gradient(model: torch.nn.Module) -> np.ndarray:
    """Every trainable parameter's gradient, flattened and concatenated (float32 numpy)."""
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten()
                      for p in model.parameters() if p.requires_grad]).detach().float().cpu().numpy()


def set_gradient(model: torch.nn.Module, flat: np.ndarray) -> None:
    """Write a flat gradient back into the parameters' .grad."""
    at = 0
    for p in model.parameters():
        if p.requires_grad:
            p.grad = torch.from_numpy(flat[at:at + p.numel()].copy()).view_as(p).to(p.device, p.dtype)
            at += p.numel()


def train(make_workload: Callable[[], object], methods: Sequence[Method], iterations: int, costs: Costs,
          model: str = "fifo", compute_s: float = 0.0, eval_every: int = 10,
          progress: bool = False) -> list[TrainingRecord]:
    """Train a fresh workload per method for `iterations` steps through the method (module docstring).
    torch runs on one thread meanwhile: the built-in models are small, and more threads on a shared
    machine spin more than they compute (a digits-cnn backward pass: 7 ms on one thread, 170 ms on two
    under load). The methods' threads stop on return (a method's start again at its next step)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train(make_workload, methods, iterations, costs, model, compute_s, eval_every, progress)
    finally:
        torch.set_num_threads(threads)
        for method in methods:
            method.close()


def _train(make_workload: Callable[[], object], methods: Sequence[Method], iterations: int, costs: Costs,
           model: str, compute_s: float, eval_every: int, progress: bool) -> list[TrainingRecord]:
    """train's body."""
    records: list[TrainingRecord] = []
    for method in methods:
        work = make_workload()
        net, optimizer, n = work.model, optimizer_of(work), method.n
        clock = 0.0
        bar = tqdm(range(iterations), desc=f"train {method.label}", unit="it", disable=None if progress else True, leave=False)
        for step in bar:
            net.train()
            grads, losses = [], []
            for w in range(n):
                net.zero_grad(set_to_none=True)
                loss = work.loss(net, work.batch(step, w, n))
                loss.backward()
                losses.append(loss.item())
                grads.append(flat_gradient(net))
            result = method.step(grads)
            dense = np.zeros(method.numel, np.float32)
            dense[result.applied.indices] = result.applied.values / np.float32(n)
            set_gradient(net, dense)
            optimizer.step()
            sync = replay(result.run.log, costs, model).makespan
            clock += compute_s + sync
            evaluation = work.evaluate(net) if hasattr(work, "evaluate") and (step + 1) % eval_every == 0 else {}
            records.append(TrainingRecord(method.label, step, float(np.mean(losses)), sync, clock,
                                          result.applied.nnz / method.numel, evaluation.get("test_loss"),
                                          evaluation.get("test_accuracy"), method.program.caps.lossless))
    return records


def summarize_training(records: Sequence[TrainingRecord]) -> list[dict]:
    """Per method: final loss (mean of the last 10 iterations), last test figures, total simulated time."""
    out = []
    for label in dict.fromkeys(r.method for r in records):
        mine = [r for r in records if r.method == label]
        tested = [r for r in mine if r.test_loss is not None]
        out.append({"method": label, "iterations": len(mine), "final_loss": float(np.mean([r.loss for r in mine[-10:]])),
                    "test_loss": tested[-1].test_loss if tested else None,
                    "test_accuracy": tested[-1].test_accuracy if tested else None,
                    "sync_s_mean": float(np.mean([r.sync_s for r in mine])), "clock_s": mine[-1].clock_s,
                    "density_mean": float(np.mean([r.actual_density for r in mine])), "lossless": mine[0].lossless})
    return out


def loss_figure(records: Sequence[TrainingRecord], title: str = "") -> Any:
    """Training loss against simulated wall-clock (left) and against the iteration (right), per method,
    each its own (colour, marker); methods with a lossy scheme after the others, dotted and labelled;
    the legend below the panels."""
    import matplotlib.pyplot as plt

    from zensim.report.plots import LOSSY_STYLE, lossy_note, series_styles

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    lossy = {r.method for r in records if r.lossless is False}
    methods = sorted(dict.fromkeys(r.method for r in records), key=lambda m: m in lossy)
    every = max(1, len({r.iteration for r in records}) // 15)  # markers on about 15 iterations
    for label, (colour, marker) in zip(methods, series_styles(len(methods))):
        mine = [r for r in records if r.method == label]
        style = dict(color=colour, marker=marker, markevery=every, ms=4, lw=1.2, ls=LOSSY_STYLE if label in lossy else "-",
                     label=label + (" (lossy)" if label in lossy else ""))
        left.plot([r.clock_s for r in mine], [r.loss for r in mine], **style)
        right.plot([r.iteration for r in mine], [r.loss for r in mine], **style)
    left.set_xlabel("simulated wall-clock (s)")
    right.set_xlabel("iteration")
    for ax in (left, right):
        ax.set_ylabel("training loss")
        ax.grid(alpha=0.3)
    left.set_xscale("symlog", linthresh=1e-4)
    handles, names = left.get_legend_handles_labels()
    fig.legend(handles, names, fontsize=8, ncol=min(5, len(names)), loc="upper center", bbox_to_anchor=(0.5, 0.0))
    lossy_note(fig, lossy, -0.06 * (-(-len(names) // 5) + 1))  # below the legend's rows
    if title:
        fig.suptitle(title, fontsize=9)
    return fig
