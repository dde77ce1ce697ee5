"""Hard threshold (Sahu et al. 2021): every element whose accumulated magnitude reaches a fixed
threshold. The default threshold is the one of ExDyna's authors' code, 1 / (2 sqrt(k)) with
k = int(density x numel); `threshold=` sets it. The count is whatever passes: it builds up."""

from __future__ import annotations

import math
from typing import Any

from zensim.errors import ConfigError
from zensim.sparsify import ops
from zensim.sparsify.base import KeyState, Sparsifier
from zensim.sparsify.ops import Array


def default_threshold(density: float, numel: int) -> float:
    """1 / (2 sqrt(k)), k = max(1, int(density x numel)): the authors' starting threshold."""
    return 1.0 / (2.0 * math.sqrt(max(1, int(density * numel))))


class HardThreshold(Sparsifier):
    """|acc| >= a fixed threshold."""

    name = "threshold"
    about = "hard threshold: |acc| >= 1/(2 sqrt(k)) (or threshold=), a count that builds up"

    def __init__(self, density: float, rank: int = 0, workers: int = 1, seed: int = 0,
                 threshold: float | None = None) -> None:
        super().__init__(density, rank, workers, seed)
        if threshold is not None and not (isinstance(threshold, (int, float)) and threshold > 0):
            raise ConfigError(f"sparsifier threshold: threshold {threshold!r} must be a positive number")
        self.threshold = threshold

    def options(self) -> dict[str, Any]:
        """The threshold, when set."""
        return {} if self.threshold is None else {"threshold": self.threshold}

    def choose(self, key: str, acc: Array, state: KeyState) -> Array:
        """Every position at or above the threshold."""
        threshold = self.threshold or default_threshold(self.density, len(acc))
        return ops.at_least(acc, threshold)
