"""The four dimensions, the 24 raw combinations, the 15 distinct schemes, and building a program.

A raw combination picks one value per dimension. Two collapse rules make 15 distinct schemes out
of 24: balance does not apply under Centralization (nothing is partitioned), and aggregation is
moot for Point-to-point (one stage per step: nothing to aggregate in between). A collapsed
dimension is `None` in the canonical point. Defaults of a design point: COO for push and pull,
ZEN hierarchical hashing ('zen') for Balanced, contiguous ranges for Imbalanced.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from zensim.errors import ConfigError
from zensim.schemes.plans import PATTERNS, Binomial
from zensim.schemes.program import Centralization, Incremental, OneShot, Parallelism, StageProgram
from zensim.sparse.formats import make_format
from zensim.sparse.partition import Partitioner
from zensim.sparse.registry import make_partitioner

COMMUNICATION = ("ring", "hierarchy", "p2p")
AGGREGATION = ("incremental", "one-shot")
PARTITION = ("centralization", "parallelism")
BALANCE = ("balanced", "imbalanced")
SHORT = {"ring": "ring", "hierarchy": "hier", "p2p": "p2p", "incremental": "incr", "one-shot": "oneshot",
         "centralization": "central", "parallelism": "parallel", "balanced": "balanced", "imbalanced": "imbalanced"}


@dataclass(frozen=True)
class Point:
    """A point of the design space; `aggregation` / `balance` are None where they collapse."""

    communication: str
    aggregation: str | None
    partition: str
    balance: str | None

    def canonical(self) -> "Point":
        """The distinct scheme this combination runs as."""
        return replace(self, aggregation=None if self.communication == "p2p" else self.aggregation,
                       balance=None if self.partition == "centralization" else self.balance)

    @property
    def name(self) -> str:
        """Short name of the (canonical) point, e.g. ring-incr-central, p2p-parallel-balanced."""
        dims = (self.communication, self.aggregation, self.partition, self.balance)
        return "-".join(SHORT[d] for d in dims if d is not None)

    @property
    def raw_name(self) -> str:
        """All four values, '/'-separated ('n/a' where collapsed)."""
        return "/".join(d or "n/a" for d in (self.communication, self.aggregation, self.partition, self.balance))


RAW = [Point(*dims) for dims in itertools.product(COMMUNICATION, AGGREGATION, PARTITION, BALANCE)]
DISTINCT = list(dict.fromkeys(p.canonical() for p in RAW))
BY_NAME = {p.name: p for p in DISTINCT}


def collapses(point: Point) -> list[Point]:
    """The raw combinations that run as the distinct scheme `point`."""
    return [raw for raw in RAW if raw.canonical() == point.canonical()]


LOSSY_PARTITIONERS = ("single_hash",)


HASHED = ("zen", "single_hash")


def partitioner_for(kind: str, numel: int, n: int, seed: int = 0) -> Partitioner:
    """A partitioner of zensim.sparse by name; hash ones get the shared `seed` ('zen' hashes
    without modelling its memory: the split is the same and its statistics are not needed here).
    'thresholds' is never re-profiled here, so it splits evenly like 'contiguous'."""
    if kind == "zen":
        return make_partitioner(kind, numel, n, seed=seed, model_memory=False)
    if kind in HASHED:
        return make_partitioner(kind, numel, n, seed=seed)
    return make_partitioner(kind, numel, n)


def build_point(point: Point, n: int, numel: int, *, name: str | None = None, push: str = "coo",
                pull: str = "coo", value_dtype: str = "float32", block_size: int = 256, seed: int = 0,
                partitioner: str | None = None, pull_pattern: str | None = None) -> StageProgram:
    """The stage program of `point` for n ranks and a tensor of `numel` elements; `partitioner`
    names any zensim.sparse partitioner (a lossy one turns the dense-sum check off)."""
    if n < 1:
        raise ConfigError(f"ranks n = {n}: must be >= 1")
    if numel < 1:
        raise ConfigError(f"numel = {numel}: must be >= 1")
    point = point.canonical()
    pattern = PATTERNS[point.communication]
    aggregation = OneShot() if point.aggregation == "one-shot" else Incremental()
    if point.partition == "centralization":
        stages = pattern.allreduce(n, aggregation.one_shot)
        step2, partition = len(stages), Centralization(numel)
    else:
        kind = partitioner or ("zen" if point.balance == "balanced" else "contiguous")
        partition = Parallelism(partitioner_for(kind, numel, n, seed), hashed=kind in HASHED)
        gather = Binomial() if pull_pattern == "binomial" else pattern
        step1 = pattern.reduce_scatter(n)
        stages, step2 = step1 + gather.allgather(n), len(step1)
    return StageProgram(name or point.name, n, numel, stages, step2, aggregation, partition,
                        make_format(push, value_dtype, block_size), make_format(pull, value_dtype, block_size),
                        lossless=partitioner not in LOSSY_PARTITIONERS)
