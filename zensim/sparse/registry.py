"""Partitioners by name, for schemes, scenarios and the command line."""

from __future__ import annotations

from zensim.errors import ConfigError
from zensim.sparse.hashpart import HierarchicalHash, SingleHash
from zensim.sparse.partition import Contiguous, Partitioner, Thresholds

PARTITIONERS: dict[str, type[Partitioner]] = {
    "contiguous": Contiguous, "thresholds": Thresholds, "single_hash": SingleHash, "zen": HierarchicalHash,
}


def make_partitioner(name: str, numel: int, n: int, **options) -> Partitioner:
    """A partitioner by name with its options (seed, k, r1, r2, load, scope, period, r, ...)."""
    if name not in PARTITIONERS:
        raise ConfigError(f"partitioner {name!r}: expected one of {', '.join(PARTITIONERS)}")
    try:
        return PARTITIONERS[name](numel, n, **options)
    except TypeError as exc:
        raise ConfigError(f"partitioner {name!r}: {exc}") from None
