"""Block top-k, SparDL's first selection: the tensor cut into `blocks` contiguous blocks (the
partition of the reduce-scatter: the first numel % blocks blocks one element longer), and the
ceil(k / blocks) largest magnitudes kept in every block (k = ceil(density x numel)). Every
block then sends the same count, which is what keeps SparDL's messages at k / P per block."""

from __future__ import annotations

import math
from typing import Any

from zensim.errors import ConfigError
from zensim.sparse.partition import even_boundaries
from zensim.sparsify import ops
from zensim.sparsify.base import KeyState, Sparsifier, target_count
from zensim.sparsify.ops import Array


def per_block(density: float, numel: int, blocks: int) -> int:
    """Elements kept in each block: ceil(k / blocks), k = ceil(density x numel)."""
    return math.ceil(target_count(density, numel) / blocks)


class BlockTopK(Sparsifier):
    """The top ceil(k / blocks) of each contiguous block."""

    name = "blocktopk"
    about = "top ceil(k/B) in each of B contiguous blocks (SparDL's selection, B = team size)"

    def __init__(self, density: float, rank: int = 0, workers: int = 1, seed: int = 0,
                 blocks: int | None = None) -> None:
        super().__init__(density, rank, workers, seed)
        if blocks is not None and (not isinstance(blocks, int) or blocks < 1):
            raise ConfigError(f"sparsifier {self.name}: blocks {blocks!r} must be a positive integer")
        self.blocks = blocks

    def options(self) -> dict[str, Any]:
        """The number of blocks (default: one per worker)."""
        return {"blocks": self.blocks or self.workers}

    def choose(self, key: str, acc: Array, state: KeyState) -> Array:
        """Every block's top ceil(k / blocks)."""
        blocks = min(self.blocks or self.workers, len(acc))
        bounds = even_boundaries(len(acc), blocks)
        count = per_block(self.density, len(acc), blocks)
        parts = [ops.topk_abs(acc[lo:hi], count) + int(lo) for lo, hi in zip(bounds[:-1], bounds[1:])]
        return ops.concat(parts, acc)  # disjoint blocks in ascending order: sorted already
