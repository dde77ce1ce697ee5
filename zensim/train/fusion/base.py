"""What a fusion strategy is (`FusionStrategy`) and what it fuses (`Fusing`).

A strategy turns a model's tensors (gradient-ready order, dense bytes, backward seconds) and the
costs of its cluster (compression h, compressed path g, dense all-reduce) into a fused chain and
its groups (`fuse`: zensim.train.fusion.strategies.plan times them with `Chain.time`), and says how
the iteration timeline buckets the same model (`buckets`) and what one selection covers (`unit`).
The strategies are looked up by name in zensim.train.fusion.registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from zensim.train.buckets import DDPBuckets
from zensim.train.fusion.chain import Affine, Chain
from zensim.train.layers import ParamTime

BUCKETINGS = ("tensor", "ddp", "chain")  # how the iteration timeline buckets: FusionStrategy.buckets


def ddp_buckets(sizes: Sequence[float]) -> tuple[int, ...]:
    """DDP's buckets (zensim.train.buckets: 25 MiB, the first 1 MiB) of fp32 tensors, as group ends."""
    params = [ParamTime(f"t{i}", int(x) // 4, i, 0.0, 0.0) for i, x in enumerate(sizes)]
    return tuple(int(e) for e in np.cumsum([len(b.members) for b in DDPBuckets().assign(params)]))


@dataclass(frozen=True)
class Fusing:
    """A model's tensors and its cluster's costs, as a strategy fuses them: backward seconds and dense
    bytes per tensor (gradient-ready order), the forward seconds, a group's compression per GPU
    (`compress`, h), its compressed path (`communicate`, g) and its dense all-reduce (`dense`)."""

    backward: np.ndarray
    sizes: np.ndarray
    forward: float
    compress: Affine
    communicate: Affine
    dense: Affine

    def chain(self) -> Chain:
        """The fuse-then-compress chain: every group compressed (h) then sent on the compressed path (g)."""
        return Chain(self.backward, self.sizes, self.compress, self.communicate, self.forward)

    def ddp(self) -> tuple[int, ...]:
        """DDP's buckets of these tensors, as group ends."""
        return ddp_buckets(self.sizes)


Fuse = Callable[[Fusing], tuple[Chain, tuple[int, ...]]]


@dataclass(frozen=True)
class FusionStrategy:
    """A fusion strategy: `fuse` (its chain and group ends on the fused-chain model), `unit` (what one
    selection and compression covers on the iteration timeline: 'tensor' or 'bucket'; None for no
    compression, dense DDP), `buckets` (the timeline's buckets, BUCKETINGS: one per tensor, DDP's rule
    where a cap or a fusion degree applies, or the groups `fuse` picks with g fitted on the timeline)."""

    name: str
    about: str
    fuse: Fuse
    unit: str | None
    buckets: str = "chain"

    def __post_init__(self) -> None:
        if self.buckets not in BUCKETINGS:
            raise ValueError(f"fusion strategy {self.name}: buckets {self.buckets!r} (choose from {', '.join(BUCKETINGS)})")
        if self.unit not in (None, "tensor", "bucket"):
            raise ValueError(f"fusion strategy {self.name}: unit {self.unit!r} (tensor, bucket or None)")

    @property
    def takes_cap(self) -> bool:
        """Whether DDP's bucket cap (--bucket-mb) or a fusion degree applies to it."""
        return self.buckets == "ddp"
