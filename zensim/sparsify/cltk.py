"""CLT-k, cyclic local top-k (Chen et al., ScaleCom 2020): at iteration t the leader, worker
t mod n, selects its top-k; every worker sends its values at the leader's positions. The aggregate
has exactly k elements (no build-up); the other workers' large values wait in their residuals."""

from __future__ import annotations

from zensim.sparsify import ops
from zensim.sparsify.base import KeyState, Sparsifier, target_count
from zensim.sparsify.ops import Array


class CLTK(Sparsifier):
    """Only the cyclic leader proposes; the union of proposals is the leader's top-k."""

    name = "cltk"
    combine = "union"
    about = "cyclic local top-k: leader t mod n picks k positions, every worker sends those"

    def leader(self, t: int) -> int:
        """The worker whose top-k is used at iteration t."""
        return t % self.workers

    def choose(self, key: str, acc: Array, state: KeyState) -> Array:
        """The top-k if this worker leads iteration t, else nothing."""
        if self.rank != self.leader(state.t):
            return ops.empty_index(acc)
        return ops.topk_abs(acc, target_count(self.density, len(acc)))
