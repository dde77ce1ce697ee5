"""ExDyna's selection (Yoon & Oh): exclusive partitions of blocks, moved to balance the workers,
and a threshold scaled online to the user's density.

As in the authors' code (SEEDS.md section 5):

- the flat gradient is cut into `blocks` blocks (default 1024) of `block_size` elements, the
  largest multiple of 32 that fits numel / blocks; the remainder elements go to the last partition.
  A tensor too small for 1024 blocks of 32 gets blocks of 32 (numel // 32 of them); fewer blocks
  than workers is an error. Contiguous blocks form n partitions (the first blocks % n get one more);
- at iteration t worker `rank` selects inside partition (t + rank) mod n only, every element with
  |acc| >= threshold (one element, position t mod size, if none passes): no two workers select the
  same position, so the aggregate has no build-up;
- after each iteration, one sweep over the adjacent pairs of partitions (i, i + 1) moves
  `blk_move` blocks from a partition whose count is above alpha x mean to a neighbour below
  mean / alpha, keeping at least min_blk = blocks / (4 n) blocks in each (`dynamic=False` keeps the
  first layout: the static-partition variant);
- the threshold starts at 1 / (2 sqrt(k)), k = int(density x numel), and is scaled by
  1 + gamma if k' / k > beta, 1 + gamma / 4 if k' / k > 1 / beta, else 1 - gamma, where k' is the
  number of elements all workers selected (alpha 1.05, beta 1.1, gamma 0.005, blk_move 1).

Every worker holds the same layout and threshold: both are updated from the counts all workers
learn in the index all-gather (`observe`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zensim.errors import ConfigError
from zensim.sparsify import ops
from zensim.sparsify.base import KeyState, Sparsifier
from zensim.sparsify.ops import Array

BLOCKS = 1024
ALIGN = 32
ALPHA, BETA, GAMMA, BLK_MOVE = 1.05, 1.1, 0.005, 1


@dataclass
class Layout:
    """Blocks and partitions of one tensor: partition i is blocks [pos[i], pos[i] + count[i])."""

    numel: int
    block_size: int
    blocks: int
    count: np.ndarray  # blocks per partition
    pos: np.ndarray  # first block of each partition
    min_blk: float

    @classmethod
    def initial(cls, numel: int, workers: int, blocks: int) -> "Layout":
        """Algorithm 2: equal partitions of contiguous blocks (the first blocks % n one larger)."""
        block_size = numel // blocks - (numel // blocks) % ALIGN
        if block_size == 0:
            block_size, blocks = ALIGN, numel // ALIGN
        if blocks < workers:
            raise ConfigError(f"sparsifier exdyna: {numel} elements make {blocks} blocks of {block_size}, "
                              f"fewer than the {workers} workers (each partition needs a block)")
        quotient, remainder = divmod(blocks, workers)
        count = np.full(workers, quotient, np.int64)
        count[:remainder] += 1
        pos = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
        return cls(numel, block_size, blocks, count, pos, blocks / (4 * workers))

    def bounds(self, part: int) -> tuple[int, int]:
        """Element range [start, end) of partition `part` (the last one takes the remainder)."""
        start = int(self.pos[part]) * self.block_size
        end = int(self.pos[part] + self.count[part]) * self.block_size
        if part == len(self.count) - 1:
            end = self.numel
        return start, end

    def sweep(self, part_counts: np.ndarray, total: int) -> None:
        """Algorithm 3, lines 7-28: one pass over adjacent pairs, moving blocks towards balance."""
        n = len(self.count)
        mean = int(total / n)
        if mean == 0:
            return
        density = total / self.numel
        k_move = int(BLK_MOVE * self.block_size * density)
        ks = part_counts.astype(np.int64).copy()
        for i in range(n - 1):
            det, det2 = ks[i] / mean, ks[i + 1] / mean
            if det > ALPHA and det2 < 1 / ALPHA:
                if self.count[i] - BLK_MOVE < self.min_blk:
                    continue
                self.count[i] -= BLK_MOVE
                self.count[i + 1] += BLK_MOVE
                self.pos[i + 1] -= BLK_MOVE
                ks[i] -= k_move
                ks[i + 1] += k_move
            if det < 1 / ALPHA and det2 > ALPHA:
                if self.count[i + 1] - BLK_MOVE < self.min_blk:
                    continue
                self.count[i] += BLK_MOVE
                self.count[i + 1] -= BLK_MOVE
                self.pos[i + 1] += BLK_MOVE
                ks[i] += k_move
                ks[i + 1] -= k_move


def scale_factor(selected: int, k: int) -> float:
    """Algorithm 5: the threshold's factor from exam = k' / k."""
    exam = selected / k
    if exam > BETA:
        return 1 + GAMMA
    if exam > 1 / BETA:
        return 1 + GAMMA / 4
    return 1 - GAMMA


class ExDyna(Sparsifier):
    """Threshold selection inside this worker's exclusive partition; partitions rotate and move."""

    name = "exdyna"
    combine = "union"
    about = "ExDyna: threshold inside partition (t + rank) mod n, blocks moved, threshold scaled"
    dynamic = True

    def __init__(self, density: float, rank: int = 0, workers: int = 1, seed: int = 0,
                 blocks: int = BLOCKS) -> None:
        super().__init__(density, rank, workers, seed)
        if not isinstance(blocks, int) or blocks < 1:
            raise ConfigError(f"sparsifier {self.name}: blocks {blocks!r} must be a positive integer")
        self.blocks = blocks

    def options(self) -> dict[str, Any]:
        """The number of blocks."""
        return {"blocks": self.blocks}

    def layout(self, key: str) -> Layout:
        """The current blocks and partitions of `key` (after its last proposal's sweep)."""
        return self.states[key].extra["layout"]

    def threshold(self, key: str) -> float:
        """The threshold the last proposal of `key` used."""
        return self.states[key].extra["threshold"]

    def partition_of(self, t: int, rank: int | None = None) -> int:
        """The partition worker `rank` (default: this one) selects in at iteration t."""
        return (t % self.workers + (self.rank if rank is None else rank)) % self.workers

    def choose(self, key: str, acc: Array, state: KeyState) -> Array:
        """Update layout and threshold from the last counts, then threshold this worker's partition."""
        extra, numel = state.extra, len(acc)
        k = max(1, int(self.density * numel))
        if state.t == 0:
            extra["layout"] = Layout.initial(numel, self.workers, self.blocks)
            extra["threshold"] = 1.0 / (2.0 * math.sqrt(k))
        else:
            counts = extra.pop("counts", None)
            if counts is None:
                raise RuntimeError(f"exdyna: key {key!r} proposed twice without observe()")
            layout, total = extra["layout"], int(sum(counts))
            if self.dynamic:
                parts = np.empty(self.workers, np.int64)  # worker i selected in partition (t-1+i) mod n
                parts[[self.partition_of(state.t - 1, i) for i in range(self.workers)]] = counts
                layout.sweep(parts, total)
            extra["threshold"] *= scale_factor(total, k)
        start, end = extra["layout"].bounds(self.partition_of(state.t))
        chosen = ops.at_least(acc[start:end], extra["threshold"])
        if len(chosen) == 0:
            return ops.arange(start + state.t % (end - start), start + state.t % (end - start) + 1, acc)
        return chosen + start

    def observe(self, key: str, counts: Sequence[int]) -> None:
        """Every worker's count of the iteration: the next sweep and threshold step use them."""
        if len(counts) != self.workers:
            raise ValueError(f"exdyna: {len(counts)} counts for {self.workers} workers")
        self.states[key].extra["counts"] = [int(c) for c in counts]


class ExDynaStatic(ExDyna):
    """ExDyna with the first partition layout kept (no block moves): the static-partition variant."""

    name = "exdyna-static"
    about = "ExDyna without block moves (static partitions), threshold scaling kept"
    dynamic = False
