"""Top-k: each worker sends the k = ceil(density x numel) largest magnitudes of its accumulated
gradient (exactly k; ties to the lowest positions)."""

from __future__ import annotations

from zensim.sparsify import ops
from zensim.sparsify.base import KeyState, Sparsifier, target_count
from zensim.sparsify.ops import Array


class TopK(Sparsifier):
    """Exact per-worker top-k (Aji & Heafield; with error feedback, Alistarh et al.)."""

    name = "topk"
    about = "each worker's exact top-k magnitudes (k = density x numel per worker)"

    def choose(self, key: str, acc: Array, state: KeyState) -> Array:
        """The k largest |acc|."""
        return ops.topk_abs(acc, target_count(self.density, len(acc)))
