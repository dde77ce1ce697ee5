"""Gradient buckets: which parameters are synchronized together, and in which order.

`DDPBuckets` is DistributedDataParallel's rule as torch 2.13 applies it from the second iteration on,
after the reducer rebuilt its buckets in the order gradients became ready in the first iteration
(`Reducer::rebuild_buckets` -> `compute_bucket_assignment_by_size` with the ready order):

- walk the parameters in gradient-ready order, one open bucket per element type;
- add the parameter; the bucket closes as soon as its bytes reach the current limit (the parameter
  that crosses the limit stays in it); the first bucket of a type has limit `first`, later ones `cap`;
- buckets still open at the end follow, ordered by their first parameter;
- a parameter whose gradient is sparse (here: synchronized by a sparse scheme) gets a bucket of its own.

Limits as torch's `_BucketCapacityConfig`: `bucket_cap_mb` None means 25 MiB with a first bucket of
1 MiB (`dist._DEFAULT_FIRST_BUCKET_BYTES`); an explicit `bucket_cap_mb` makes the first bucket the
same size unless `first_bucket_mb` is given too. MB here is MiB, as in torch.
Buckets are synchronized in their order (DDP launches bucket i+1's all-reduce after bucket i's).

Other strategies (`per-tensor`, `single`) are the two extremes of fusion; a new strategy is a class
with `name` and `assign(params, own)` plus a line in BUCKETINGS.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from zensim.errors import ConfigError
from zensim.train.layers import ParamTime

MIB = 1024 * 1024
DEFAULT_CAP_MB = 25
DEFAULT_FIRST_BYTES = 1 * MIB


@dataclass(frozen=True)
class Bucket:
    """Positions (in the ready-ordered parameter list) of the parameters synchronized together."""

    members: tuple[int, ...]
    names: tuple[str, ...]
    nbytes: int
    own: bool = False  # a parameter with a bucket of its own (sparse gradient)


def _bucket(params: Sequence[ParamTime], members: Sequence[int], own: bool = False) -> Bucket:
    return Bucket(tuple(members), tuple(params[i].name for i in members), sum(params[i].nbytes for i in members), own)


class DDPBuckets:
    """DDP's size-capped buckets in gradient-ready order (see the module docstring)."""

    name = "ddp"

    def __init__(self, bucket_cap_mb: float | None = None, first_bucket_mb: float | None = None) -> None:
        for label, value in (("--bucket-mb", bucket_cap_mb), ("--first-bucket-mb", first_bucket_mb)):
            if value is not None and not value > 0:
                raise ConfigError(f"{label} {value}: must be a positive number of MiB")
        self.cap = int((DEFAULT_CAP_MB if bucket_cap_mb is None else bucket_cap_mb) * MIB)
        if first_bucket_mb is not None:
            self.first = int(first_bucket_mb * MIB)
        else:
            self.first = DEFAULT_FIRST_BYTES if bucket_cap_mb is None else self.cap
        self.first = min(self.first, self.cap)

    def describe(self) -> str:
        """'ddp 25 MiB (first 1 MiB)'."""
        return f"ddp {self.cap / MIB:g} MiB (first {self.first / MIB:g} MiB)"

    def assign(self, params: Sequence[ParamTime], own: Collection[str] = ()) -> list[Bucket]:
        """Buckets of `params` (ready order); the names in `own` get a bucket each."""
        out: list[Bucket] = []
        open_: dict[str, list[int]] = {}
        size: dict[str, int] = {}
        closed: dict[str, int] = {}
        for i, p in enumerate(params):
            if p.name in own:
                out.append(_bucket(params, [i], own=True))
                continue
            members = open_.setdefault(p.dtype, [])
            members.append(i)
            size[p.dtype] = size.get(p.dtype, 0) + p.nbytes
            limit = self.first if closed.get(p.dtype, 0) == 0 else self.cap
            if size[p.dtype] >= limit:
                out.append(_bucket(params, members))
                open_[p.dtype], size[p.dtype] = [], 0
                closed[p.dtype] = closed.get(p.dtype, 0) + 1
        rest = sorted((m for m in open_.values() if m), key=lambda m: m[0])
        return out + [_bucket(params, m) for m in rest]


class PerTensor:
    """One bucket per parameter (layer-wise synchronization, no fusion)."""

    name = "per-tensor"

    def describe(self) -> str:
        """'per-tensor'."""
        return self.name

    def assign(self, params: Sequence[ParamTime], own: Collection[str] = ()) -> list[Bucket]:
        """Each parameter alone, in ready order."""
        return [_bucket(params, [i], own=p.name in own) for i, p in enumerate(params)]


class Single:
    """All parameters in one bucket (synchronization after the whole backward), sparse ones apart."""

    name = "single"

    def describe(self) -> str:
        """'single'."""
        return self.name

    def assign(self, params: Sequence[ParamTime], own: Collection[str] = ()) -> list[Bucket]:
        """One bucket of every dense parameter and one per own-bucket parameter, ordered by when each
        bucket is complete (its last member ready)."""
        dense = [i for i, p in enumerate(params) if p.name not in own]
        out = [_bucket(params, [i], own=True) for i, p in enumerate(params) if p.name in own]
        out += [_bucket(params, dense)] if dense else []
        return sorted(out, key=lambda b: b.members[-1])


BUCKETINGS = {cls.name: cls for cls in (DDPBuckets, PerTensor, Single)}


def make_bucketing(name: str, bucket_cap_mb: float | None = None, first_bucket_mb: float | None = None):
    """A bucketing strategy by name; the MiB limits apply to `ddp` only."""
    if name not in BUCKETINGS:
        raise ConfigError(f"--bucketing {name}: unknown (choose from {', '.join(BUCKETINGS)})")
    if name != "ddp":
        if bucket_cap_mb is not None or first_bucket_mb is not None:
            raise ConfigError(f"--bucket-mb/--first-bucket-mb: only for --bucketing ddp, not {name}")
        return BUCKETINGS[name]()
    return DDPBuckets(bucket_cap_mb, first_bucket_mb)
