"""The four dimensions, the 24 raw combinations, the 15 distinct schemes, and composing a program.

A raw combination picks one value per dimension. Two collapse rules make 15 distinct schemes out
of 24: balance does not apply under Centralization (nothing is partitioned), and aggregation is
moot for Point-to-point (one stage per step: nothing to aggregate in between). A collapsed
dimension is `None` in the canonical point. A point is composed from one part per dimension
(`parts`) plus the wire formats; the options it accepts are those its parts declare. Defaults:
COO for push and pull, ZEN hierarchical hashing ('zen') for Balanced, contiguous ranges for
Imbalanced.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

from zensim.errors import ConfigError
from zensim.run.context import Tables
from zensim.schemes import closed
from zensim.schemes.aggregation import Incremental, OneShot
from zensim.schemes.options import Option, accept
from zensim.schemes.partitioning import Centralization, Parallelism
from zensim.schemes.plans import PATTERNS, PULLS
from zensim.schemes.program import ClosedForm, ComposedProgram
from zensim.sparse.formats import FORMATS, make_format
from zensim.sparse.values import CODECS

COMMUNICATION = ("ring", "hierarchy", "p2p")
AGGREGATION = ("incremental", "one-shot")
PARTITION = ("centralization", "parallelism")
BALANCE = ("balanced", "imbalanced")
SHORT = {"ring": "ring", "hierarchy": "hier", "p2p": "p2p", "incremental": "incr", "one-shot": "oneshot",
         "centralization": "central", "parallelism": "parallel", "balanced": "balanced", "imbalanced": "imbalanced"}

# The wire formats are a part of every program: their options.
FORMAT_OPTIONS = (
    Option("push", "wire format of the push (the whole scheme under Centralization)", "coo", FORMATS),
    Option("value_dtype", "value dtype on the wire", "float32", tuple(CODECS)),
    Option("block_size", "elements per block of the blocks format", 256, kind=int, minimum=1),
)
PULL_OPTIONS = (
    Option("pull", "wire format of step 2, the pull", "coo", FORMATS),
    Option("pull_pattern", "plan of the pull: the point's own pattern, a binomial-tree broadcast, or recursive "
           "doubling", None, (None, "binomial", "doubling")),
)


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


def point_options(point: Point) -> tuple[Option, ...]:
    """The options a program of `point` accepts: those of its parts."""
    point = point.canonical()
    aggregation = OneShot if point.aggregation == "one-shot" else Incremental
    parts = FORMAT_OPTIONS + aggregation.OPTIONS
    if point.partition == "centralization":
        return parts + Centralization.OPTIONS
    return parts + Parallelism.OPTIONS + PULL_OPTIONS


def closed_form_of(point: Point, push: str, pull: str | None, partitioner: str | None = None) -> ClosedForm | None:
    """The closed form that describes `point` with these formats (ZEN §2.3), or None: the formulas
    count COO (or dense for the dense ring), the point's own pull pattern and its own partitioner."""
    point = point.canonical()
    if point.partition == "parallelism":
        if push == pull == "dense" and point == Point("ring", "incremental", "parallelism", "balanced"):
            return closed.dense_ring if partitioner in (None, "contiguous") else None
        if partitioner not in (None, "zen" if point.balance == "balanced" else "contiguous"):
            return None
        if push == pull == "coo" and point.communication == "p2p":
            return closed.balanced_parallelism if point.balance == "balanced" else closed.sparse_ps
        return None
    if push != "coo":
        return None
    if point.communication == "p2p" or point.aggregation == "one-shot":
        return closed.agsparse
    return closed.hierarchical_centralization if point.communication == "hierarchy" else None


def build_point(point: Point, n: int, numel: int, *, name: str | None = None, tables: Tables | None = None,
                closed_form: ClosedForm | None = None, **options: Any) -> ComposedProgram:
    """The stage program of `point` for n ranks and a tensor of `numel` elements, composed from its
    parts; `options` are checked against the parts' (ConfigError naming the scheme)."""
    if n < 1:
        raise ConfigError(f"ranks n = {n}: must be >= 1")
    if numel < 1:
        raise ConfigError(f"numel = {numel}: must be >= 1")
    point = point.canonical()
    label = name or point.name
    opts = accept(point_options(point), options, label)
    pattern = PATTERNS[point.communication]
    aggregation = OneShot() if point.aggregation == "one-shot" else Incremental()
    push = make_format(opts["push"], opts["value_dtype"], opts["block_size"])
    if point.partition == "centralization":
        stages = pattern.allreduce(n, aggregation.one_shot)
        step2, partition, pull = len(stages), Centralization(numel), push
        counted = pattern.counted(n, aggregation.one_shot, True)
    else:
        kind = opts["partitioner"] or ("zen" if point.balance == "balanced" else "contiguous")
        # a block format's blocks are the tensor's (block b = ids [b B, (b + 1) B)): parts hold whole blocks
        align = opts["block_size"] if "blocks" in (opts["push"], opts["pull"]) else 1
        partition = Parallelism(kind, numel, n, opts["seed"], tables if tables is not None else Tables(), align)
        gather = PULLS[opts["pull_pattern"]] if opts["pull_pattern"] else pattern
        step1 = pattern.reduce_scatter(n)
        stages, step2 = step1 + gather.allgather(n), len(step1)
        pull = make_format(opts["pull"], opts["value_dtype"], opts["block_size"])
        counted = pattern.counted(n, aggregation.one_shot, False) if gather is pattern else None
    if closed_form is None and opts.get("pull_pattern") is None:
        closed_form = closed_form_of(point, opts["push"], opts.get("pull"), opts.get("partitioner"))
    return ComposedProgram(label, n, numel, stages, step2, aggregation, partition, push, pull,
                           symmetric=pattern.symmetric, closed_form=closed_form, counted=counted)
