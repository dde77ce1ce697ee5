"""Virtual workers: n synchronous data-parallel workers reproduced exactly in one process.

At every iteration the n workers share the current parameters; worker w runs forward and backward
on its own micro-batch, its sparsifier (with its own residuals) chooses what it sends, and the
update applied is the average of the n sent gradients, computed as DDP with our hook computes it
(each contribution divided by n, then summed), followed by one optimizer step. With `dense`,
what is recorded is each worker's whole gradient of every recorded parameter before selection
(a dense-gradient trace); training is the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from zensim.trace.capture.record import Recorded, to_chunk, to_dense
from zensim.trace.capture.sparsify import Sparsifier

LossFn = Callable[[torch.nn.Module, Any], torch.Tensor]


class VirtualWorkers:
    """Synchronous data parallelism over `len(sparsifiers)` workers sharing one model."""

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        loss_fn: LossFn,
        sparsifiers: Sequence[Sparsifier],
        recorded: Sequence[str],
        dense: bool = False,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.sparsifiers = list(sparsifiers)
        self.recorded = set(recorded)
        self.dense = dense
        self.params = [(name, p) for name, p in model.named_parameters() if p.requires_grad]

    @property
    def workers(self) -> int:
        """Number of virtual workers."""
        return len(self.sparsifiers)

    def step(self, batches: Sequence[Any]) -> list[dict[str, Recorded]]:
        """One synchronous iteration; returns what each worker sent of each recorded parameter
        (with `dense`, each worker's whole gradient of it, before any selection)."""
        n = self.workers
        if len(batches) != n:
            raise ValueError(f"{len(batches)} micro-batches for {n} workers")
        self.model.train()
        total = [torch.zeros_like(p) for _, p in self.params]
        chunks: list[dict[str, Recorded]] = []
        for sparsifier, batch in zip(self.sparsifiers, batches):
            self.model.zero_grad(set_to_none=True)
            self.loss_fn(self.model, batch).backward()
            mine: dict[str, Recorded] = {}
            for (name, p), acc in zip(self.params, total):
                grad = p.grad.flatten() if p.grad is not None else torch.zeros(p.numel(), dtype=p.dtype, device=p.device)
                if self.dense and name in self.recorded:
                    mine[name] = to_dense(grad)
                if name in self.recorded or sparsifier.changes_gradient:
                    sel = sparsifier.select(name, grad)
                    grad = sel.sent
                    if name in self.recorded and not self.dense:
                        mine[name] = to_chunk(sel)
                acc.add_(grad.view_as(p) / n)
            chunks.append(mine)
        for (_, p), acc in zip(self.params, total):
            p.grad = acc
        self.optimizer.step()
        return chunks
