"""DGC: Deep Gradient Compression's sampled threshold (Lin et al. 2018).

A random sample of max(1024, 1%) elements (with replacement; all of them if the tensor is smaller)
gives the threshold: the ceil(density x sample)-th largest sampled magnitude. Elements at or above
it are selected; if more than k pass, the exact top-k among them (DGC's hierarchical selection).
The count is at most k and often a little below. Each key has its own random stream, seeded by
the worker's seed and the key, so the order of calls (DDP's bucket order) changes nothing; the
sample positions come from numpy, so numpy and torch inputs select the same elements.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from zensim.sparse import xp as backend
from zensim.sparsify import ops
from zensim.sparsify.base import KeyState, Sparsifier, target_count
from zensim.sparsify.ops import Array

SAMPLE_RATIO = 0.01  # DGC samples 0.1%-1% of the elements
MIN_SAMPLE = 1024


class DGC(Sparsifier):
    """Sampled-threshold selection, cut to the top-k when too many pass."""

    name = "dgc"
    about = "DGC's sampled threshold, cut to the exact top-k when more than k pass (at most k)"

    def choose(self, key: str, acc: Array, state: KeyState) -> Array:
        """Threshold from a random sample's top quantile, then the top-k of what passes."""
        mag = self.magnitude(acc, state)
        numel = len(mag)
        k = target_count(self.density, numel)
        rng = state.extra.get("rng")
        if rng is None:
            rng = state.extra["rng"] = np.random.default_rng([self.seed, zlib.crc32(key.encode())])
        size = min(numel, max(MIN_SAMPLE, math.ceil(SAMPLE_RATIO * numel)))
        sample = mag[ops.as_index(rng.integers(0, numel, size), mag)]
        threshold = ops.kth_largest(sample, target_count(self.density, size))
        chosen = backend.flatnonzero(mag >= threshold)
        if len(chosen) > k:
            chosen = chosen[ops.topk_indices(mag[chosen], k)]
        return chosen
