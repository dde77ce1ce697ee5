"""ZEN (OSDI '25): Balanced Parallelism by hierarchical hashing, with COO or hash-bitmap pull;
Hierarchical Centralization (Def. 7); and ZEN's run-time choice between them (`zen-auto`).

zen-auto chooses the scheme by eq. (1) vs eq. (2) on the profiled density and densification
(zensim.schemes.choice), and, for Balanced Parallelism, the pull format by size: the hash bitmap
costs |𝕀_j|/8 bytes of bitmap plus the values, COO the ids plus the values, so the hash bitmap pays
only when a partition's aggregated density exceeds 1/32 (int32 ids; 1/64 with int64 ids). The
expected aggregated non-zeros per partition are d γ^n numel / n.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zensim.errors import ConfigError
from zensim.run.context import Tables
from zensim.schemes import closed
from zensim.schemes.choice import SparsityProfile, profile_chunks, zen_choice
from zensim.schemes.scheme import Scheme
from zensim.schemes.space import Point
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import RangeDomain
from zensim.sparse.formats import Counted, make_format

BP = Point("p2p", None, "parallelism", "balanced")
HC = Point("hierarchy", "incremental", "centralization", None)
ZEN = Scheme("zen", "ZEN Balanced Parallelism: COO push via hierarchical hashing, hash bitmap pull", BP,
             {"pull": "hash_bitmap"})
HIER_CENTRAL = Scheme("hier-central", "Hierarchical Centralization (ZEN Def. 7; the same program as sparcml)", HC)


def pull_format(n: int, numel: int, profile: SparsityProfile, value_dtype: str = "float32") -> str:
    """'hash_bitmap' when it is smaller than COO for the expected aggregated partition, else 'coo'."""
    size = max(numel // n, 1)
    domain = RangeDomain(numel - size, numel)
    held = Counted(int(round(profile.density * profile.gamma.get(n, 1.0) * size)))
    coo = make_format("coo", value_dtype).size(held, domain)
    bitmap = make_format("bitmap", value_dtype).size(held, domain)
    return "hash_bitmap" if bitmap < coo else "coo"


def build_auto(n: int, numel: int, *, tables: Tables | None = None,
               profile: Sequence[SparseChunk] | SparsityProfile | None = None, **options: Any):
    """zen or hier-central (and zen's pull format) chosen from `profile`: every rank's chunks of a
    profiled iteration, or a SparsityProfile."""
    if profile is None:
        raise ConfigError("zen-auto: needs a profile (every rank's chunks of an iteration, or a SparsityProfile)")
    stats = profile if isinstance(profile, SparsityProfile) else profile_chunks(profile, numel)
    chosen = ZEN if zen_choice(n, stats) == "zen" else HIER_CENTRAL
    if chosen is ZEN and "pull" not in options:
        options = {**options, "pull": pull_format(n, numel, stats, options.get("value_dtype", "float32"))}
    known = {o.name for o in chosen.declared()}
    return chosen.build(n, numel, tables=tables, **{k: v for k, v in options.items() if k in known})


SCHEMES = [
    Scheme("zen-coo", "ZEN Balanced Parallelism, COO push and pull (hierarchical hashing)", BP),
    ZEN,
    HIER_CENTRAL,
    Scheme("zen-auto", "ZEN's choice between zen and hier-central by eq. (1) vs (2) on profiled d, γ^k, and the "
           "pull format by the aggregated density", builder=build_auto, accepts=tuple(
               o for o in Scheme("", "", BP).declared() if o.name in ("value_dtype", "block_size", "seed", "pull")),
           closed_form=closed.zen_auto, needs_profile=True,
           listing={"communication": "p2p | hierarchy", "aggregation": "-", "partition": "parallelism | centralization",
                    "balance": "balanced | n/a", "format": "coo/hash_bitmap | coo/coo | coo", "partitioner": "zen | -",
                    "collapses": ["zen", "zen-coo", "hier-central"]}),
]
