"""n workers' sparsifiers and residuals, synchronized without a network: the reference semantics.

`Team(name, n, density).step(key, grads)` runs one iteration for one tensor: every worker
accumulates (error feedback), proposes, the proposals are combined as the sparsifier says
(`own` or `union`), each worker's sent values are read from its accumulated gradient and removed
from its residual, and everyone observes everyone's count. The sum of the sent chunks is what a
lossless synchronization of those chunks applies. The replay and the training loop use this to
get per-worker chunks; a scheme that selects on its own (SparDL) uses `ErrorFeedback` directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zensim.sparse.chunk import SparseChunk, union_indices
from zensim.sparse import xp as backend
from zensim.sparsify import ops
from zensim.sparsify.memory import ErrorFeedback
from zensim.sparsify.ops import Array
from zensim.sparsify.registry import make_sparsifier


@dataclass
class Round:
    """One iteration of one tensor: what each worker proposed and what each sent (numpy chunks)."""

    proposed: list[int]  # every worker's proposal size
    sent: list[SparseChunk]  # every worker's sent positions and values (float32)

    @property
    def positions(self) -> np.ndarray:
        """The union of the sent positions (the aggregate's support)."""
        return union_indices(self.sent)


class Team:
    """Workers 0..n-1, each with its sparsifier (rank-seeded) and error-feedback residuals."""

    def __init__(self, name: str, workers: int, density: float, seed: int = 0, **options: Any) -> None:
        self.sparsifiers = [make_sparsifier(name, density, r, workers, seed + r, **options) for r in range(workers)]
        self.memories = [ErrorFeedback() for _ in range(workers)]
        self.combine = self.sparsifiers[0].combine

    @property
    def workers(self) -> int:
        """Number of workers n."""
        return len(self.sparsifiers)

    def step(self, key: str, grads: Sequence[Array]) -> Round:
        """One iteration of tensor `key` given every worker's gradient (numpy or torch, 1-D)."""
        if len(grads) != self.workers:
            raise ValueError(f"{len(grads)} gradients for {self.workers} workers")
        accs = [m.accumulate(key, g) for m, g in zip(self.memories, grads)]
        proposals = [s.propose(key, acc) for s, acc in zip(self.sparsifiers, accs)]
        counts = [len(p) for p in proposals]
        own = [backend.host(p).astype(np.int64) for p in proposals]
        if self.combine == "union":
            union = ops.as_index(union_indices([SparseChunk(p) for p in own]), accs[0])
            proposals = [union] * self.workers
        sent: list[SparseChunk] = []
        for memory, acc, chosen, mine in zip(self.memories, accs, proposals, own):
            positions, values = backend.host(chosen).astype(np.int64), backend.host(acc[chosen]).astype(np.float32)
            sent.append(UnionChunk(positions, values, mine) if self.combine == "union" else SparseChunk(positions, values))
            memory.consume(key, chosen)
        for s in self.sparsifiers:
            s.observe(key, counts)
        return Round(counts, sent)

    def residual(self, rank: int, key: str) -> Array:
        """Worker `rank`'s current residual of `key`."""
        return self.memories[rank].residuals[key]


class UnionChunk(SparseChunk):
    """A worker's values at the union of all proposals (`indices`, `values`) and, in `own`, the
    sorted positions it proposed itself: the input of a scheme that exchanges index lists first
    (ExDyna's padded all-gather) and then reduces the values at the union."""

    def __init__(self, indices: np.ndarray, values: np.ndarray, own: np.ndarray) -> None:
        super().__init__(indices, values)
        object.__setattr__(self, "own", np.asarray(own, np.int64))
