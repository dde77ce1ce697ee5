"""Fusion and compression strategies as objects of one timeline: each turns (model, cluster, costs) into a `Chain`.

Every strategy sees the same tensors (gradient-ready order, dense bytes, backward seconds), the
same cluster and the same compression costs, and is timed by the same fused-chain timeline
(`chain.py`: backward and compression on one stream, communication on another). The strategies
are registered in zensim.train.fusion.registry, each in its own file:

- `none`: no compression; DDP buckets (`zensim.train.buckets`) each all-reduced hierarchically;
- `layerwise`: every tensor compressed and sent on its own (GRACE / HiPress style);
- `behind`: sparsification-behind fusion: DDP buckets, one compression per bucket (OkTopk, OMGS);
  (these three: basic.py)
- `safusion`: every tensor compressed on its own right after its backward, the sparse tensors fused
  into SAFusion's adaptive buffers (eqs. 1-3), aligned across workers (safusion.py);
- `cupcake`: fuse-then-compress with Cupcake's optimal fusion (cupcake.py).

Compressed tensors take the hierarchical path the thesis uses at 25 Gbps (Cupcake §5.4.1: compress
for inter-machine communication only): a dense reduce-scatter over NVLink, each GPU compresses its
1/G shard (h(x) = alpha_h + beta_h x / G), all-gathers it among the N machines (G rings through one
NIC: (N - 1) c bytes per NIC for c compressed bytes of the whole tensor), decodes the N shards it
receives, and a dense all-gather over NVLink. Decoding is folded into the communication's beta.
Collective times are alpha-beta ring models; all of it is affine in the dense bytes x, as eq. 5.1
needs. The network simulator (the iteration timeline, zensim/train) times the same groups with the
message logs of real schemes; this module is the model the optimizers reason with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zensim.net.topology import ClusterSpec
from zensim.train.fusion.base import Fusing
from zensim.train.fusion.chain import Affine, Chain
from zensim.train.fusion.registry import lookup


@dataclass(frozen=True)
class Compression:
    """A sparsifier's cost: density, wire bytes per kept element, encode and decode costs per byte."""

    density: float = 0.01
    wire_bytes: int = 8                       # COO: int32 index + float32 value per kept element
    encode: Affine = Affine(2.5e-4, 6.25e-11)  # thesis Fig. 5.2: ~0.25 ms flat to 4 MB, then linear
    decode_beta: float = 6.25e-11             # seconds per received compressed byte

    @property
    def ratio(self) -> float:
        """Compressed bytes per dense fp32 byte."""
        return self.density * self.wire_bytes / 4


@dataclass(frozen=True)
class Workload:
    """A model's tensors in gradient-ready order, its forward time and the global batch (samples)."""

    name: str
    sizes: np.ndarray        # dense bytes
    backward: np.ndarray     # seconds
    forward: float
    batch_per_gpu: int


def dense_allreduce(c: ClusterSpec) -> Affine:
    """Hierarchical all-reduce of x bytes: NVLink reduce-scatter, G inter-machine rings, NVLink all-gather."""
    N, G = c.machines, c.gpus_per_machine
    alpha = 2 * (N - 1) * c.nic_latency + 2 * (G - 1) * c.nvlink_latency
    beta = 2 * (N - 1) / (N * c.nic_bandwidth) + 2 * (G - 1) / (G * c.nvlink_bandwidth)
    return Affine(alpha, beta)


def sparse_allgather(c: ClusterSpec, comp: Compression) -> Affine:
    """Compressed path of x dense bytes: dense NVLink phases around an all-gather of shards across machines."""
    N, G = c.machines, c.gpus_per_machine
    alpha = (N - 1) * c.nic_latency + 2 * (G - 1) * c.nvlink_latency
    beta = (2 * (G - 1) / (G * c.nvlink_bandwidth) + (N - 1) * comp.ratio / c.nic_bandwidth
            + comp.decode_beta * N * comp.ratio / G)
    return Affine(alpha, beta)


def shard_encode(c: ClusterSpec, comp: Compression) -> Affine:
    """Compression of a group of x dense bytes: each GPU encodes its x / G shard."""
    return Affine(comp.encode.alpha, comp.encode.beta / c.gpus_per_machine)


@dataclass(frozen=True)
class Plan:
    """A strategy applied: the chain it is timed on, its groups, the iteration time and the throughput."""

    strategy: str
    chain: Chain
    ends: tuple[int, ...]
    iteration: float
    samples_per_s: float

    @property
    def groups(self) -> int:
        """Number of communicated groups (buckets, buffers)."""
        return len(self.ends)


def plan(strategy: str, w: Workload, c: ClusterSpec, comp: Compression, *, communicate: Affine | None = None,
         encode: Affine | None = None) -> Plan:
    """Apply `strategy` (a name of zensim.train.fusion.registry) to workload `w` on cluster `c` with
    compression `comp`. `communicate` and `encode` replace the compressed path's g and the per-GPU
    compression h (e.g. g fitted to the iteration timeline's synchronizations:
    zensim.train.fusion.schedule)."""
    g = communicate or sparse_allgather(c, comp)
    h = encode or shard_encode(c, comp)
    chain, ends = lookup(strategy).fuse(Fusing(w.backward, w.sizes, w.forward, h, g, dense_allreduce(c)))
    t = chain.time(ends)
    return Plan(strategy, chain, ends, t, w.batch_per_gpu * c.gpus / t)
