"""Tensor missing rate of sparsification-behind fusion (SAFusion §2.4, Fig. 3), on dense gradients.

Sparsification-behind fusion fuses gradients into buckets (DDP-style, in gradient-ready order) and
selects the top-k elements of each *bucket*; a tensor none of whose elements is selected is
*missing* that iteration. The tensor missing rate is missing tensors / all tensors.

The fusion degree d in [0, 1] sets the bucket capacity to d x the model's size: 0 puts every
tensor in a bucket of its own (layer-wise selection: nothing can go missing), 1 puts the whole
model in one bucket (one global top-k). A bucket closes as soon as it reaches the capacity, the rule
of torch DDP's buckets with bucket_cap = d x model size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from zensim.train.fusion.chain import close_at


def fusion_buckets(numels: Sequence[int], degree: float) -> tuple[int, ...]:
    """Bucket ends (tensors in gradient-ready order) at fusion degree `degree` in [0, 1]."""
    if not 0.0 <= degree <= 1.0:
        raise ValueError(f"fusion degree must be in [0, 1], got {degree}")
    sizes = np.asarray(numels, dtype=np.float64)
    return close_at(sizes, degree * sizes.sum())


def bucket_topk(tensors: Sequence[np.ndarray], ends: Sequence[int], density: float) -> list[np.ndarray]:
    """Per tensor, a mask of the elements kept when each bucket keeps its top ceil(density x size) by magnitude."""
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must be in (0, 1], got {density}")
    masks: list[np.ndarray] = []
    lo = 0
    for hi in ends:
        flat = np.concatenate([np.abs(np.ravel(t)) for t in tensors[lo:hi]])
        k = max(1, math.ceil(density * flat.size))
        keep = np.zeros(flat.size, dtype=bool)
        keep[np.argpartition(flat, flat.size - k)[flat.size - k:]] = True
        offsets = np.cumsum([0] + [np.size(t) for t in tensors[lo:hi]])
        masks.extend(keep[offsets[i]:offsets[i + 1]] for i in range(hi - lo))
        lo = hi
    return masks


def missing_rate(grads: Sequence[np.ndarray], degree: float, density: float) -> float:
    """Fraction of tensors with no selected element at fusion degree `degree` (one worker, one iteration)."""
    ends = fusion_buckets([np.size(g) for g in grads], degree)
    return float(np.mean([not m.any() for m in bucket_topk(grads, ends, density)]))


class ErrorFeedbackMissing:
    """Missing rate over iterations when each bucket's unselected values stay in a residual (top-k + EF).

    With error feedback a tensor missed now grows its residual and is selected later, so the
    per-iteration rate is the honest one to compare with a selection that keeps no residual.
    """

    def __init__(self, numels: Sequence[int], degree: float, density: float) -> None:
        self.ends = fusion_buckets(numels, degree)
        self.density = density
        self.residual = [np.zeros(int(n), dtype=np.float64) for n in numels]

    def step(self, grads: Sequence[np.ndarray]) -> np.ndarray:
        """Select on gradient + residual, keep the rest as residual; elements selected per tensor.

        The iteration's missing rate is `np.mean(counts == 0)`.
        """
        acc = [r + np.ravel(g) for r, g in zip(self.residual, grads)]
        masks = bucket_topk(acc, self.ends, self.density)
        self.residual = [np.where(m, 0.0, a) for m, a in zip(masks, acc)]
        return np.array([int(m.sum()) for m in masks])
