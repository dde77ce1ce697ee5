"""The three strategies without an optimizer of their own: `none` (dense DDP), `layerwise`, `behind`.

- `none`: no compression; DDP buckets (`zensim.train.buckets`) each all-reduced hierarchically;
- `layerwise`: every tensor compressed and sent on its own (GRACE / HiPress style);
- `behind`: sparsification-behind fusion: DDP buckets, one compression per bucket (OkTopk, OMGS).
"""

from __future__ import annotations

from zensim.train.fusion.base import Fusing, FusionStrategy
from zensim.train.fusion.chain import Affine, Chain


def dense(f: Fusing) -> tuple[Chain, tuple[int, ...]]:
    """DDP's buckets, no compression, each all-reduced densely."""
    return Chain(f.backward, f.sizes, Affine(0.0, 0.0), f.dense, f.forward), f.ddp()


def per_tensor(f: Fusing) -> tuple[Chain, tuple[int, ...]]:
    """Every tensor its own compressed group."""
    chain = f.chain()
    return chain, chain.layerwise()


def behind(f: Fusing) -> tuple[Chain, tuple[int, ...]]:
    """DDP's buckets, each compressed once."""
    return f.chain(), f.ddp()


NONE = FusionStrategy("none", "no compression: dense DDP", dense, None, "ddp")
LAYERWISE = FusionStrategy("layerwise", "every tensor compressed and sent on its own", per_tensor, "tensor", "tensor")
BEHIND = FusionStrategy("behind", "DDP's buckets, one compression per bucket", behind, "bucket", "ddp")
