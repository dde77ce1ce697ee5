"""Ok-Topk's local selection (Li & Hoefler; the authors' code, `compression.py` `ratio2threshold`,
`add2residual` and the steps in `allreducer.py`): every |acc| at or above a threshold that is exact
every `tau` iterations and re-used in between, so that most iterations compare instead of sorting.

- at t mod tau = 0 the threshold is the k-th largest |acc| (k = ceil(density x numel));
- in between it is the last one, raised x 1.03 (at most 5 times) while more than 3k/2 pass it;
- after selecting, the next iteration's threshold moves x 1.012 when more than 5k/4 passed, / 1.012
  when fewer than 3k/4 did.

The authors select strictly above the threshold (k - 1 elements at an exact iteration); here at or
above, as every threshold of zensim.sparsify. A threshold of 0 (fewer than k non-zeros) selects the
non-zeros. The count is whatever passes: between exact iterations it drifts with the residuals.
"""

from __future__ import annotations

from typing import Any

from zensim.errors import ConfigError
from zensim.sparse import xp as backend
from zensim.sparsify import ops
from zensim.sparsify.base import KeyState, Sparsifier, target_count
from zensim.sparsify.ops import Array

RAISE, RAISES, STEP = 1.03, 5, 1.012  # the authors' constants


def nudge(threshold: float, count: int, k: int, up: float, down: float) -> float:
    """The authors' step after a selection of `count` elements: x `up` above 5k/4, / `down` below 3k/4."""
    if count < 3 * k / 4:
        return threshold / down
    if count > 5 * k / 4:
        return threshold * up
    return threshold


class OkTopkLocal(Sparsifier):
    """|acc| >= a threshold recomputed exactly every `tau` iterations (see the module docstring)."""

    name = "oktopk"
    about = "Ok-Topk's local threshold: the exact k-th |acc| every tau iterations (32), re-used and nudged in between"

    def __init__(self, density: float, rank: int = 0, workers: int = 1, seed: int = 0, tau: int = 32) -> None:
        super().__init__(density, rank, workers, seed)
        if not isinstance(tau, int) or tau < 1:
            raise ConfigError(f"sparsifier oktopk: tau {tau!r} must be an integer >= 1")
        self.tau = tau

    def options(self) -> dict[str, Any]:
        """The recomputation interval."""
        return {"tau": self.tau}

    def choose(self, key: str, acc: Array, state: KeyState) -> Array:
        """Every position at or above this iteration's threshold; the next one's set from the count."""
        k = target_count(self.density, len(acc))
        chosen = None  # the selection at `threshold`, once computed
        if state.t % self.tau == 0:
            threshold = ops.kth_largest(ops.magnitude(acc), k)
        else:
            threshold = state.extra["threshold"]
            for _ in range(RAISES):
                if threshold <= 0:
                    break
                chosen = ops.at_least(acc, threshold)
                if len(chosen) <= 3 * k // 2:
                    break
                threshold *= RAISE
                chosen = None
        if chosen is None:
            chosen = ops.at_least(acc, threshold) if threshold > 0 else backend.flatnonzero(acc != 0)
        state.extra["threshold"] = nudge(threshold, len(chosen), k, STEP, STEP)
        return chosen
