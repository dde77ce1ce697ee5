"""Tensor missing rate of sparsification-behind fusion (SAFusion §2.4, Fig. 3), on dense gradients.

Sparsification-behind fusion fuses gradients into buckets (DDP-style, in gradient-ready order) and
selects the top-k elements of each *bucket*; a tensor none of whose elements is selected is
*missing* that iteration. The tensor missing rate is missing tensors / all tensors.

The fusion degree d in [0, 1] runs from every tensor in a bucket of its own (0: layer-wise
selection, nothing can go missing) to the whole model in one bucket (1: one global top-k). The
paper does not say how it fills the buckets in between; two readings, both offered:

- `by="bytes"`: bucket capacity d x the model's size, a bucket closes as soon as it reaches it (torch
  DDP's rule with bucket_cap = d x model size);
- `by="tensors"`: M = L - round(d (L - 1)) buckets of ceil(L / M) tensors each (SAFusion's own
  N_i = ceil(L / M) rule), so the degree counts tensors, not bytes.

With one dominant tensor (an embedding) the two differ a lot: by bytes, the bucket count collapses
at small d.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from zensim.train.fusion.chain import close_at
from zensim.train.fusion.safusion import aligned


def fusion_buckets(numels: Sequence[int], degree: float, by: str = "bytes") -> tuple[int, ...]:
    """Bucket ends (tensors in gradient-ready order) at fusion degree `degree` in [0, 1]."""
    if not 0.0 <= degree <= 1.0:
        raise ValueError(f"fusion degree must be in [0, 1], got {degree}")
    sizes = np.asarray(numels, dtype=np.float64)
    if by == "bytes":
        return close_at(sizes, degree * sizes.sum())
    if by == "tensors":
        L = len(sizes)
        return aligned(L, L - round(degree * (L - 1)))
    raise ValueError(f"fusion degree by {by!r}: expected 'bytes' or 'tensors'")


def bucket_topk(tensors: Sequence[np.ndarray], ends: Sequence[int], density: float,
                choose: Callable[[int, np.ndarray], np.ndarray] | None = None) -> list[np.ndarray]:
    """Per tensor, a mask of the elements kept when each bucket keeps its top ceil(density x size) by magnitude.

    `choose(bucket, values)`, if given, selects instead (positions in the bucket's flat values): a
    sparsifier of `zensim.sparsify` such as DGC's sampled threshold.
    """
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must be in (0, 1], got {density}")
    masks: list[np.ndarray] = []
    lo = 0
    for b, hi in enumerate(ends):
        flat = np.concatenate([np.ravel(t) for t in tensors[lo:hi]])
        keep = np.zeros(flat.size, dtype=bool)
        if choose is None:
            k = max(1, math.ceil(density * flat.size))
            keep[np.argpartition(np.abs(flat), flat.size - k)[flat.size - k:]] = True
        else:
            keep[choose(b, flat)] = True
        offsets = np.cumsum([0] + [np.size(t) for t in tensors[lo:hi]])
        masks.extend(keep[offsets[i]:offsets[i + 1]] for i in range(hi - lo))
        lo = hi
    return masks


def missing_rate(grads: Sequence[np.ndarray], degree: float, density: float, by: str = "bytes",
                 choose: Callable[[int, np.ndarray], np.ndarray] | None = None) -> float:
    """Fraction of tensors with no selected element at fusion degree `degree` (one worker, one iteration)."""
    ends = fusion_buckets([np.size(g) for g in grads], degree, by)
    return float(np.mean([not m.any() for m in bucket_topk(grads, ends, density, choose)]))


class ErrorFeedbackMissing:
    """Missing rate over iterations when each bucket's unselected values stay in a residual (top-k + EF).

    With error feedback a tensor missed now grows its residual and is selected later, so the
    per-iteration rate is the honest one to compare with a selection that keeps no residual.
    """

    def __init__(self, numels: Sequence[int], degree: float, density: float, by: str = "bytes") -> None:
        self.ends = fusion_buckets(numels, degree, by)
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


def trace_curve(trace, degrees: Sequence[float], density: float, by: str = "bytes", sparsifier: str = "topk",
                iterations: Sequence[int] = (0,), workers: Sequence[int] = (0,), reverse: bool = True) -> list[float]:
    """Mean missing rate per fusion degree over (iteration, worker) gradients of a dense trace.

    Tensors are taken in the trace's order reversed (`reverse`: definition order -> gradient-ready
    order, as DDP sees a model's parameters); `sparsifier` is a name of `zensim.sparsify` that
    selects in each bucket (topk, dgc, threshold: the ones that choose without the other workers).
    """
    from zensim.sparsify import make_sparsifier

    order = list(range(len(trace.tensors)))[::-1] if reverse else list(range(len(trace.tensors)))
    rates = np.zeros(len(degrees))
    count = 0
    for it in iterations:
        for w in workers:
            grads = [trace.dense(it, w, t).astype(np.float64) for t in order]
            for j, d in enumerate(degrees):
                sp = make_sparsifier(sparsifier, density, seed=it * 7919 + w)
                choose = (None if sparsifier == "topk"
                          else lambda b, flat, sp=sp: np.asarray(sp.propose(str(b), flat)))
                rates[j] += missing_rate(grads, d, density, by, choose)
            count += 1
    return list(rates / count)
