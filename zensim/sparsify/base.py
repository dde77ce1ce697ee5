"""The sparsifier protocol: one worker's selection, with state carried from one iteration to the next.

A sparsifier belongs to one worker (`rank` of `workers`) and keeps state per tensor `key` (a
parameter name, or one key for a flat gradient). Each iteration, for each key:

1. `propose(key, acc)`: the sorted int64 positions this worker proposes to send, chosen from its
   accumulated gradient `acc` (gradient + error-feedback residual, see `memory.ErrorFeedback`);
2. the proposals of all workers are combined as the class's `combine` says: `"own"`, each worker
   sends its own proposal (top-k, DGC, hard threshold); `"union"`, every worker sends its values at
   the union of all proposals (CLT-k: only the leader proposes; ExDyna: the workers' partitions
   are disjoint, so the union is their concatenation);
3. `observe(key, counts)`: every worker learns every worker's proposal size (ExDyna moves blocks
   between partitions and scales its threshold with them; the others ignore them).

`propose` and `observe` alternate per key; the iteration number `t` of a key is the number of
proposals made for it so far. Arrays may be numpy or torch (see `ops`): the answer is the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from zensim.errors import ConfigError
from zensim.sparsify import ops
from zensim.sparsify.ops import Array


def target_count(density: float, numel: int) -> int:
    """Elements a selection at `density` keeps of `numel`: ceil(density x numel), at least 1."""
    return min(numel, max(1, math.ceil(density * numel)))


@dataclass
class KeyState:
    """What a sparsifier remembers about one tensor: the iteration count and its own fields."""

    t: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class Sparsifier:
    """Base class: `name`, `combine`, options through `__init__`, selection in `choose`."""

    name: ClassVar[str] = ""
    combine: ClassVar[str] = "own"  # or "union"
    about: ClassVar[str] = ""

    def __init__(self, density: float, rank: int = 0, workers: int = 1, seed: int = 0) -> None:
        if not isinstance(density, (int, float)) or not 0.0 < density <= 1.0:
            raise ConfigError(f"sparsifier {self.name}: density {density!r} must be in (0, 1]")
        if not isinstance(workers, int) or workers < 1 or not isinstance(rank, int) or not 0 <= rank < workers:
            raise ConfigError(f"sparsifier {self.name}: rank {rank!r} must be in [0, workers {workers!r})")
        self.density = float(density)
        self.rank = rank
        self.workers = workers
        self.seed = seed
        self.states: dict[str, KeyState] = {}

    def options(self) -> dict[str, Any]:
        """The options this instance was built with beyond density/rank/workers/seed (for provenance)."""
        return {}

    def propose(self, key: str, acc: Array) -> Array:
        """Sorted unique int64 positions of the 1-D `acc` this worker proposes at this iteration."""
        state = self.states.setdefault(key, KeyState())
        chosen = self.choose(key, acc, state)
        state.t += 1
        return chosen

    def observe(self, key: str, counts: Sequence[int]) -> None:
        """Every worker's proposal size for `key` at the iteration just proposed (default: unused)."""

    def choose(self, key: str, acc: Array, state: KeyState) -> Array:
        """The selection itself (subclasses); `state.t` is the iteration number of this key."""
        raise NotImplementedError

    @staticmethod
    def magnitude(acc: Array, state: KeyState) -> Array:
        """|acc|; for numpy into a buffer kept with the key's state (no 40 MB allocation and page
        faults per call on a 10M-element tensor)."""
        if ops.is_torch(acc):
            return ops.magnitude(acc)
        scratch = state.extra.get("scratch")
        if scratch is None or len(scratch) != len(acc):
            scratch = state.extra["scratch"] = np.empty(len(acc), np.float32)
        return ops.magnitude(acc, scratch)
