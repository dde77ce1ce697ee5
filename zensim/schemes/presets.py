"""Named presets (points of the design space with a format and a partitioner) and the registry.

`build_scheme(name, n, numel, **options)` accepts a preset name, a distinct scheme name
(ring-incr-central, ...) or a raw combination 'ring/incremental/centralization/balanced'.
Options: value_dtype (float32, float16, bfloat16), block_size, seed, partitioner (a name of
zensim.sparse.registry, overriding the one of the balance dimension), and for zen-auto either
`profile=<chunks>` (measured) or `stats=SparsityProfile(...)` (given).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from zensim.errors import ConfigError
from zensim.schemes.choice import SparsityProfile, profile_chunks, zen_choice
from zensim.schemes.program import StageProgram
from zensim.schemes.space import BY_NAME, DISTINCT, RAW, Point, build_point, collapses
from zensim.sparse.chunk import SparseChunk


@dataclass(frozen=True)
class Preset:
    """A named scheme: a design point plus format/partitioner options and where it comes from."""

    name: str
    point: Point
    options: dict[str, Any] = field(default_factory=dict)
    about: str = ""

    @property
    def formats(self) -> str:
        """'push/pull' formats ('fmt' when the same)."""
        push, pull = self.options.get("push", "coo"), self.options.get("pull", "coo")
        if push == pull:
            return push
        return f"{push}/{pull}"


def _p(comm: str, agg: str | None, part: str, bal: str | None) -> Point:
    """Shorthand for a design point."""
    return Point(comm, agg, part, bal)


PRESETS = {p.name: p for p in [
    Preset("dense-allreduce", _p("ring", "incremental", "parallelism", "balanced"),
           {"push": "dense", "pull": "dense", "partitioner": "contiguous"},
           "ring all-reduce: reduce-scatter + all-gather of dense contiguous partitions"),
    Preset("agsparse-ring", _p("ring", "one-shot", "centralization", None), {}, "AGsparse, ring all-gather of COO"),
    Preset("agsparse-hier", _p("hierarchy", "one-shot", "centralization", None), {},
           "AGsparse, recursive-doubling all-gather of COO"),
    Preset("agsparse-p2p", _p("p2p", None, "centralization", None), {}, "AGsparse, every rank sends its COO to all"),
    Preset("sparcml", _p("hierarchy", "incremental", "centralization", None), {},
           "SparCML SSAR recursive doubling (COO)"),
    Preset("sparse-ps", _p("p2p", None, "parallelism", "imbalanced"), {},
           "Sparse PS: COO push to contiguous servers, point-to-point COO pull"),
    Preset("sparse-ps-bcast", _p("p2p", None, "parallelism", "imbalanced"), {"pull_pattern": "binomial"},
           "Sparse PS with the broadcast: pull by binomial trees, ceil(log2 n) rounds"),
    Preset("omnireduce", _p("p2p", None, "parallelism", "imbalanced"), {"push": "blocks", "pull": "blocks"},
           "OmniReduce: non-zero blocks of 256 to contiguous aggregators and back"),
    Preset("zen-coo", _p("p2p", None, "parallelism", "balanced"), {},
           "ZEN Balanced Parallelism, COO push and pull (hierarchical hashing)"),
    Preset("zen", _p("p2p", None, "parallelism", "balanced"), {"pull": "hash_bitmap"},
           "ZEN Balanced Parallelism: COO push via hierarchical hashing, hash bitmap pull"),
    Preset("hier-central", _p("hierarchy", "incremental", "centralization", None), {},
           "Hierarchical Centralization (ZEN Def. 7; the same program as sparcml)"),
]}
AUTO = "zen-auto"
AUTO_ABOUT = "ZEN's choice between zen and hier-central by eq. (1) vs (2) on profiled d, γ^k"
COMMON_OPTIONS = {"value_dtype", "block_size", "seed", "partitioner"}


def scheme_names() -> list[str]:
    """Every name build_scheme accepts, presets first (raw 'a/b/c/d' names aside)."""
    return list(PRESETS) + [AUTO] + [p.name for p in DISTINCT]


def resolve(name: str) -> tuple[Point, dict[str, Any]]:
    """(design point, preset options) of a preset, distinct or raw name; ConfigError if unknown."""
    if name in PRESETS:
        return PRESETS[name].point, dict(PRESETS[name].options)
    if name in BY_NAME:
        return BY_NAME[name], {}
    for raw in RAW:
        if raw.raw_name == name:
            return raw, {}
    raise ConfigError(f"scheme {name!r}: unknown; see `zensim schemes` ({', '.join(scheme_names())})")


def build_scheme(name: str, n: int, numel: int, *, profile: Sequence[SparseChunk] | None = None,
                 stats: SparsityProfile | None = None, **options: Any) -> StageProgram:
    """The stage program called `name` for n ranks and `numel` elements (see module docstring)."""
    unknown = set(options) - COMMON_OPTIONS
    if unknown:
        raise ConfigError(f"scheme {name}: unknown option(s) {', '.join(sorted(unknown))}")
    if name == AUTO:
        if stats is None:
            if profile is None:
                raise ConfigError("zen-auto: needs profile=<chunks> or stats=SparsityProfile(...)")
            stats = profile_chunks(profile, numel)
        chosen = zen_choice(n, stats)
        return build_scheme(chosen, n, numel, **options)
    point, preset = resolve(name)
    return build_point(point, n, numel, name=name, **{**preset, **options})


def design_space() -> list[dict[str, Any]]:
    """One row per distinct scheme and per preset: name, kind, the four dimensions, format,
    partitioner, the raw combinations that collapse into it (distinct) or its point (preset)."""
    rows = []
    for p in DISTINCT:
        rows.append(_row(p.name, "distinct", p, "coo", _partitioner(p, {}),
                         [r.raw_name for r in collapses(p)], ""))
    for pre in PRESETS.values():
        rows.append(_row(pre.name, "preset", pre.point, pre.formats, _partitioner(pre.point, pre.options),
                         [pre.point.canonical().name], pre.about))
    rows.append({"name": AUTO, "kind": "preset", "communication": "p2p | hierarchy", "aggregation": "-",
                 "partition": "parallelism | centralization", "balance": "balanced | n/a",
                 "format": "coo/hash_bitmap | coo", "partitioner": "zen | -",
                 "collapses": ["zen", "hier-central"], "about": AUTO_ABOUT})
    return rows


def _partitioner(point: Point, options: dict[str, Any]) -> str:
    """The partitioner a point runs with ('-' under Centralization)."""
    if point.partition == "centralization":
        return "-"
    return options.get("partitioner", "zen" if point.balance == "balanced" else "contiguous")


def _row(name: str, kind: str, point: Point, fmt: str, partitioner: str, collapsed: list[str],
         about: str) -> dict[str, Any]:
    """One listing row."""
    return {"name": name, "kind": kind, "communication": point.communication,
            "aggregation": point.aggregation or "n/a (p2p)", "partition": point.partition,
            "balance": point.balance or "n/a", "format": fmt, "partitioner": partitioner,
            "collapses": collapsed, "about": about}
