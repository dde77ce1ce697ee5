"""SAFusion's buffers (Ming et al., HPDC '25, `004_...` §3.2-3.3): which sparsified tensors share a buffer.

SAFusion sparsifies every tensor on its own, then fuses the sparse tensors into buffers that are
all-gathered. Three ways to form the buffers, each returning group ends over the tensors in
gradient-ready order (as `Chain` strategies are written):

- `fixed_capacity(sparse_bytes, cap)` per worker: SAF(Naive), a buffer closes when its sparse bytes
  reach `cap`; workers' sparse sizes differ, so their buffers hold different tensors (§3.2, Fig. 6);
- `aligned(L, M)`: SAF-Inter, N_i = ceil(L / M) tensors in every buffer, the same on every worker;
- `adaptive(fuse, comm)`: SAF-(Inter+Intra), buffer i grows until its sparse tensor fusion time
  (backward + compression + copy of its tensors) reaches the previous buffer's communication time
  (eq. 1), the first buffer by eq. 2, then long-tailed buffers are merged (eq. 3). The sizes are
  decided once from a profile and used by every worker (so alignment holds).

Where the paper is ambiguous, this module decides (docs/fusion.md says the same):
- eq. 1 is printed as T_cm^{i-1} >= T_cp^i + T_b^i "until it begins to be satisfied", which a
  growing buffer can only stop satisfying; the text and Fig. 10 grow buffer i *until* its fusion
  time F_i reaches C_{i-1}. We follow the text: the first size with F_i >= C_{i-1}.
- eq. 2 (first buffer: F_1 + C_1 < sum of its tensors' layer-wise communication) holds for every
  large enough buffer once it holds; we take the smallest such size (1 if none).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from zensim.train.fusion.base import Fusing, FusionStrategy
from zensim.train.fusion.chain import Affine, Chain, close_at


def fixed_capacity(sparse_bytes: Sequence[float], cap: float) -> tuple[int, ...]:
    """SAF(Naive) on one worker: buffers of this worker's sparse tensors closed at `cap` bytes."""
    if cap <= 0:
        raise ValueError(f"buffer capacity must be positive, got {cap}")
    return close_at(sparse_bytes, cap)


def aligned(tensors: int, buffers: int) -> tuple[int, ...]:
    """SAF-Inter: every buffer holds N_i = ceil(L / M) tensors (the last the remainder), on every worker."""
    if tensors < 1 or buffers < 1:
        raise ValueError("need at least one tensor and one buffer")
    per = math.ceil(tensors / min(buffers, tensors))
    return tuple(range(per, tensors, per)) + (tensors,)


def adaptive(fuse: Sequence[float], comm: Callable[[int, int], float]) -> tuple[int, ...]:
    """SAF-(Inter+Intra) buffer ends from per-tensor fusion times and a buffer communication time.

    `fuse[l]` is tensor l's sparse tensor fusion time (its backward, its compression and its copy
    into the buffer); `comm(lo, hi)` the communication time of a buffer of tensors lo .. hi-1.
    Eq. 2 and eq. 1 size the buffers (`size_by_overlap`), eq. 3 merges the long tail.
    """
    return merge_long_tail(size_by_overlap(fuse, comm), fuse, comm)


def size_by_overlap(fuse: Sequence[float], comm: Callable[[int, int], float]) -> tuple[int, ...]:
    """Eq. 2 for the first buffer, then eq. 1: each next buffer as small as covers the previous one's communication."""
    fuse = np.asarray(fuse, dtype=np.float64)
    L = len(fuse)
    if L == 0:
        raise ValueError("no tensors")
    cum = np.concatenate([[0.0], np.cumsum(fuse)])
    # eq. 2: the first buffer, the smallest N_1 whose fusion + communication beats layer-wise sending
    layerwise = np.cumsum([comm(l, l + 1) for l in range(L)])
    first = next((m for m in range(2, L + 1) if cum[m] + comm(0, m) < layerwise[m - 1]), 1)
    ends = [first]
    # eq. 1: grow buffer i until its fusion time reaches the previous buffer's communication time
    while ends[-1] < L:
        lo = ends[-1]
        target = comm(ends[-2] if len(ends) > 1 else 0, lo)
        hi = lo + 1
        while hi < L and cum[hi] - cum[lo] < target:
            hi += 1
        ends.append(hi)
    return tuple(ends)


def merge_long_tail(ends: tuple[int, ...], fuse: Sequence[float], comm: Callable[[int, int], float]) -> tuple[int, ...]:
    """Eq. 3: at the first M' < M whose buffers' communication so far exceeds the fusion time of
    buffers 2 .. M, buffers M' .. M become one (their communication could not overlap anything)."""
    cum = np.concatenate([[0.0], np.cumsum(np.asarray(fuse, dtype=np.float64))])
    starts = (0,) + ends[:-1]
    hidden = cum[ends[-1]] - cum[ends[0]]          # sum of F_j over j = 2 .. M
    sent = 0.0
    for m, (lo, hi) in enumerate(zip(starts, ends)):
        sent += comm(lo, hi)
        if m + 1 < len(ends) and sent > hidden:
            return ends[:m] + (ends[-1],)
    return ends


def fuse(f: Fusing) -> tuple[Chain, tuple[int, ...]]:
    """Every tensor compressed right after its backward (fusing the sparse tensors costs nothing more),
    then SAFusion's adaptive buffers over the compressed path."""
    per_tensor = np.array([f.compress(x) for x in f.sizes])
    chain = Chain(f.backward + per_tensor, f.sizes, Affine(0.0, 0.0), f.communicate, f.forward)
    return chain, adaptive(chain.backward, lambda lo, hi: chain.g(lo, hi - 1))


SAFUSION = FusionStrategy("safusion", "each tensor compressed, fused into SAFusion's adaptive buffers", fuse, "tensor")
