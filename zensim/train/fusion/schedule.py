"""Fusion strategies on the iteration timeline: each one's buckets, selection and compression.

`Strategy(name, ...)` is what `zensim.train.iteration.simulate_iteration(..., strategy=...)` takes
instead of a bucketing; the timeline then times every bucket's real message log (the scheme on the
selected indices) on the network model, buckets in flight sharing the links:

| strategy  | buckets                                   | selection (dense trace) | compression on the compute stream  |
| --------- | ----------------------------------------- | ----------------------- | ---------------------------------- |
| layerwise | one per tensor                            | per tensor              | h(x_i) after each gradient         |
| behind    | DDP's (25 MiB, or a cap, or a degree)     | per bucket              | h(x_b) after the bucket's last one |
| safusion  | SAFusion's adaptive buffers (eqs. 1-3)    | per tensor              | h(x_i) after each gradient         |
| cupcake   | Cupcake's optimal fusion                  | per bucket              | h(x_b) after the bucket's last one |

`none` (no compression: dense DDP) is the dense-allreduce baseline; `run_strategy` runs all five.

SAFusion and Cupcake decide their buckets on the fused-chain model (`chain.py`) of the same layer
profile with the strategy's compression cost h and a communication cost g(x) = alpha + beta x
*measured on this timeline*: the synchronizations of a few prefix groups (the first tensor, a
quarter, half and all of the tensors) timed alone by the same Timeline (network, scheme, layout,
selection), fitted as Cupcake fits its offline profiles (`zensim.net.profile.fit`).

Compression h(x) = alpha + beta x per selection (`strategies.Compression.encode`, per dense byte).
In ZEN's layout a GPU compresses only its 1/G shard of the machine's sum (the thesis' inter-machine
compression), so h(x / G); the timeline runs it on the compute stream before the bucket's
synchronization, which begins with the dense reduce-scatter that really precedes it: a reordering
that keeps the work and its overlap with backward. Compression applies where the trace's gradients
are selected (a dense trace); a sparse trace's recorded indices cost none.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.train.buckets import MIB, Bucket, DDPBuckets, PerTensor
from zensim.net.profile import fit
from zensim.train.fusion.chain import Affine
from zensim.train.fusion.base import FusionStrategy
from zensim.train.fusion.registry import STRATEGIES, lookup
from zensim.train.fusion.selection import Selection
from zensim.train.fusion.strategies import Compression, Workload, plan
from zensim.train.layers import LayerProfile, ParamTime
from zensim.train.syncs import DENSE, BucketSync, SyncLogs, bucket_syncs

COSTS = {"dgc": Affine(2.5e-4, 6.25e-11),        # thesis Fig. 5.2: ~0.25 ms flat to 4 MB, then linear
         "threshold": Affine(2e-5, 6.25e-12)}    # one pass over the tensor (a hard threshold)


def compression_cost(text: str, flag: str = "compression cost") -> Affine:
    """A selection's cost h(x) = alpha + beta x by name (COSTS) or as 'ALPHA,BETA' (seconds, seconds per
    dense byte, non-negative); ConfigError naming `flag` otherwise."""
    if text in COSTS:
        return COSTS[text]
    try:
        alpha, beta = (float(x) for x in str(text).split(","))
    except ValueError:
        alpha = beta = -1.0
    if not (alpha >= 0 and beta >= 0 and np.isfinite(alpha + beta)):
        raise ConfigError(f"{flag} {text}: {' or '.join(COSTS)}, or ALPHA,BETA (non-negative seconds and seconds "
                          "per byte)")
    return Affine(alpha, beta)


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


def ddp_buckets(profile: LayerProfile, bucket_mb: float | None, degree: float | None) -> DDPBuckets:
    """DDP's rule with a cap of `bucket_mb` MiB, or of `degree` x the model's bytes (the first bucket
    as large), or torch's defaults."""
    if bucket_mb is not None and degree is not None:
        raise ConfigError("--bucket-mb and --fusion-degree: give one")
    if degree is not None:
        if not 0 <= degree <= 1:
            raise ConfigError(f"--fusion-degree {degree}: must be in [0, 1]")
        bucket_mb = max(degree * sum(p.nbytes for p in profile.params), 1.0) / MIB
    return DDPBuckets(bucket_mb)


Timelines = Callable[..., object]  # (syncs, profile, iterations) -> zensim.train.timeline.Timeline


@dataclass
class Strategy:
    """A registered strategy that compresses (zensim.train.fusion.registry) on the iteration timeline
    (module docstring)."""

    name: str
    compression: Compression = Compression()
    sparsifier: str = "topk"
    bucket_mb: float | None = None  # behind: DDP's cap
    degree: float | None = None     # behind: the cap as a fraction of the model's bytes
    options: dict = field(default_factory=dict)  # the sparsifier's
    fitted: Affine | None = field(default=None, init=False)
    spec: FusionStrategy = field(init=False)  # the registered strategy (zensim.train.fusion.registry)
    selection: Selection = field(init=False)

    def __post_init__(self) -> None:
        spec = lookup(self.name)
        if spec.unit is None:
            raise ConfigError(f"--strategy {self.name}: compresses nothing (run_strategy runs it as dense DDP)")
        if not spec.takes_cap and (self.bucket_mb is not None or self.degree is not None):
            capped = ", ".join(n for n, s in STRATEGIES.items() if s.takes_cap and s.unit is not None)
            raise ConfigError(f"--bucket-mb/--fusion-degree: only for the {capped} strategy, not {self.name}")
        self.spec = spec
        self.selection = Selection(spec.unit, self.sparsifier, self.compression.density, dict(self.options))

    def describe(self) -> str:
        """'cupcake, topk 1% per bucket'."""
        return f"{self.name}, {self.selection.describe()}"

    def syncs(self, profile: LayerProfile, sparse: set[str], logs: SyncLogs, timeline: Timelines) -> list[BucketSync]:
        """The buckets of `profile` and their compression (the timeline's hook: see simulate_iteration)."""
        c = logs.cluster
        shard = c.gpus_per_machine if logs.layout == "zen" else 1
        h = Affine(self.compression.encode.alpha, self.compression.encode.beta / shard)
        selected = sparse if logs.selection is not None else set()
        params = profile.params
        if self.spec.buckets == "tensor":
            buckets = PerTensor().assign(params)
        elif self.spec.buckets == "ddp":
            buckets = ddp_buckets(profile, self.bucket_mb, self.degree).assign(params)
        else:  # "chain": the strategy's groups on the fused-chain model, g fitted on this timeline
            self.fitted = fit_communication(profile, sparse, timeline)
            ends = plan(self.name, profile_workload(profile), c, self.compression, communicate=self.fitted,
                        encode=h if selected else Affine(0.0, 0.0)).ends
            buckets = Groups(self.name, ends).assign(params)
        ready = profile.ready_s
        out = []
        for sync in bucket_syncs(profile, buckets, sparse):
            mine = [i for i in sync.bucket.members if params[i].name in selected]
            if not mine:
                out.append(sync)
            elif self.selection.unit == "tensor":
                out.append(replace(sync, compress=tuple((float(ready[i]), h(params[i].nbytes)) for i in mine)))
            else:
                out.append(replace(sync, compress=((sync.ready_s, h(sum(params[i].nbytes for i in mine))),)))
        return out

    def summary(self, syncs: Sequence[BucketSync], logs: SyncLogs) -> dict:
        """What the record keeps: groups, selection, missing rate of the synchronized parts, h and g."""
        names = {part.names for s in syncs for part in s.parts if part.sparse}
        missing = self.selection.missing_of(names) if logs.selection is not None else None
        h = self.compression.encode
        return {"name": self.name, "groups": len(syncs), "degree": self.degree, "bucket_mb": self.bucket_mb,
                "selection": self.selection.describe() if logs.selection is not None else "trace indices",
                "missing_rate": missing.rate if missing is not None else None,
                "compress_alpha_s": h.alpha, "compress_beta_s_per_byte": h.beta,
                "fitted_g": None if self.fitted is None else {"alpha_s": self.fitted.alpha,
                                                             "beta_s_per_byte": self.fitted.beta}}


def fit_communication(profile: LayerProfile, sparse: set[str], timeline: Timelines) -> Affine:
    """g(x) = alpha + beta x fitted to the synchronizations of prefix groups (1, N/4, N/2, N tensors)
    timed alone on this timeline (no compute: a profile scaled to zero)."""
    params = profile.params
    n = len(params)
    ends = sorted({1, max(1, n // 4), max(1, n // 2), n})
    if len(ends) < 2:  # one tensor: one group whatever g is
        return Affine(0.0, 0.0)
    zero = profile.scaled(0.0)
    sizes, seconds = [], []
    for e in ends:
        bucket = Bucket(tuple(range(e)), tuple(p.name for p in params[:e]), sum(p.nbytes for p in params[:e]))
        run = timeline(bucket_syncs(zero, [bucket], sparse), zero, 1).run()
        sizes.append(bucket.nbytes)
        seconds.append(max(run.makespan, 1e-12))
    alpha, beta = fit(sizes, seconds)
    return Affine(alpha, beta)


def run_strategy(name: str, profile: LayerProfile, scheme: str, costs: Costs, *, compression: Compression = Compression(),
                 sparsifier: str = "topk", bucket_mb: float | None = None, degree: float | None = None,
                 sparsifier_options: dict | None = None, dense=None, **common):
    """One strategy's SimulatedIterationRecord: `none` is dense DDP (DDP's buckets, or a cap / degree of them),
    the others `scheme` on the strategy's buckets. `common`: simulate_iteration's keywords (trace,
    model, layout, iterations, the scheme's options, ...); `dense` reuses a dense baseline."""
    from zensim.train.iteration import simulate_iteration

    if lookup(name).unit is None:
        if dense is not None and bucket_mb is None and degree is None:
            rec = dense
        else:
            plain = {k: v for k, v in common.items() if k != "options"}  # the sparse scheme's
            rec = simulate_iteration(profile, DENSE, costs, bucketing=ddp_buckets(profile, bucket_mb, degree), **plain)
            if dense is None and (bucket_mb is not None or degree is not None):
                # the baseline of every strategy is DDP's default buckets, not this cap
                dense = simulate_iteration(profile, DENSE, costs, **{k: v for k, v in plain.items() if k != "bucketing"})
            if dense is not None:
                rec.dense_iteration_s, rec.speedup_vs_dense = dense.iteration_s, dense.iteration_s / rec.iteration_s
        return replace(rec, strategy={"name": name, "groups": len(rec.buckets), "degree": degree,
                                      "bucket_mb": bucket_mb, "selection": "none (dense)", "missing_rate": 0.0})
    strategy = Strategy(name, compression, sparsifier, bucket_mb, degree, dict(sparsifier_options or {}))
    return simulate_iteration(profile, scheme, costs, strategy=strategy, dense=dense, **common)
