"""Fusion strategies as bucketings of the iteration timeline (`zensim.train.timeline`).

The iteration timeline groups gradients with a bucketing (`assign(params, own) -> [Bucket]`, as
`zensim.train.buckets`); each strategy of this package decides its groups on the fused-chain model
of the same layer profile and cluster (`strategies.py`), and `Groups` hands them to the timeline,
which then times every group's real message log on the network model:

    bucketing = strategy_bucketing("cupcake", profile, cluster, Compression())
    simulate_iteration(profile, "agsparse", Costs.of(cluster), trace=..., bucketing=bucketing,
                       sparse_buckets="fused")
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from zensim.net.topology import ClusterSpec
from zensim.train.buckets import Bucket
from zensim.train.fusion.strategies import Compression, Workload, plan
from zensim.train.layers import LayerProfile, ParamTime


class Groups:
    """A bucketing of fixed consecutive groups (ends over the ready-ordered parameters)."""

    def __init__(self, name: str, ends: Sequence[int]) -> None:
        self.name = name
        self.ends = tuple(int(e) for e in ends)

    def describe(self) -> str:
        """The strategy's name and group count."""
        return f"{self.name} ({len(self.ends)} groups)"

    def assign(self, params: Sequence[ParamTime], own: Collection[str] = ()) -> list[Bucket]:
        """The groups as buckets; `own` is ignored (a strategy fuses sparse tensors too)."""
        if not self.ends or self.ends[-1] != len(params):
            raise ValueError(f"{self.name}: groups end at {self.ends[-1] if self.ends else 0}, "
                             f"the profile has {len(params)} parameters")
        starts = (0,) + self.ends[:-1]
        return [Bucket(tuple(range(lo, hi)), tuple(params[i].name for i in range(lo, hi)),
                       sum(params[i].nbytes for i in range(lo, hi))) for lo, hi in zip(starts, self.ends)]


def profile_workload(profile: LayerProfile, batch: int = 1) -> Workload:
    """The fused-chain view of a layer profile: dense bytes and backward seconds in ready order."""
    sizes = np.array([float(p.nbytes) for p in profile.params])
    back = np.array([p.backward_s for p in profile.params])
    return Workload(profile.workload, sizes, back, profile.forward_s, batch)


def strategy_bucketing(strategy: str, profile: LayerProfile, cluster: ClusterSpec, comp: Compression) -> Groups:
    """The groups `strategy` chooses for `profile` on `cluster` (none/behind: DDP's, layerwise: one per tensor)."""
    return Groups(strategy, plan(strategy, profile_workload(profile), cluster, comp).ends)
