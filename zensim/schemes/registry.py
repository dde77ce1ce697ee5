"""Finding and building schemes by name: catalog names, distinct design points, raw combinations.

`build_scheme(name, n, numel, **options)` accepts a catalog name (zensim.schemes.catalog), a
distinct scheme name (ring-incr-central, ...) or a raw combination
'ring/incremental/centralization/balanced'. The options a scheme accepts come from its parts
(`scheme_options(name)`); schemes that choose from data (zen-auto) take `profile=` (every rank's
chunks of a profiled iteration, or a SparsityProfile).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from zensim.errors import ConfigError
from zensim.report.record import RunRecord
from zensim.run.context import Tables
from zensim.schemes.catalog import CATALOG
from zensim.schemes.options import Option, accept
from zensim.schemes.scheme import Scheme, point_row
from zensim.schemes.space import BY_NAME, DISTINCT, RAW, Point, collapses
from zensim.sparse.chunk import SparseChunk


def scheme_names() -> list[str]:
    """Every name build_scheme accepts, catalog first (raw 'a/b/c/d' names aside)."""
    return list(CATALOG) + [p.name for p in DISTINCT]


def lookup(name: str) -> Scheme:
    """The scheme called `name` (a design point or raw combination becomes a plain Scheme)."""
    if name in CATALOG:
        return CATALOG[name]
    point = BY_NAME.get(name) or next((raw for raw in RAW if raw.raw_name == name), None)
    if point is None:
        raise ConfigError(f"scheme {name!r}: unknown; see `zensim schemes` ({', '.join(scheme_names())})")
    return Scheme(name, f"design point {point.raw_name}", point)


def build_scheme(name: str, n: int, numel: int, *, tables: Tables | None = None,
                 profile: Sequence[SparseChunk] | Any | None = None, **options: Any):
    """The program called `name` for n ranks and `numel` elements (see the module docstring)."""
    return lookup(name).build(n, numel, tables=tables, profile=profile, **options)


def scheme_options(name: str) -> tuple[Option, ...]:
    """The options scheme `name` accepts."""
    return lookup(name).declared()


def check_options(name: str, options: dict[str, Any]) -> None:
    """ConfigError unless scheme `name` accepts every option in `options` with its value."""
    accept(scheme_options(name), options, name)


def lossless(name: str, n: int = 4, options: dict[str, Any] | None = None) -> bool | None:
    """Scheme `name`'s lossless capability (every rank ends with the dense sum) from its program built
    for `n` ranks with `options`; None when it cannot be built so (it needs a profile, or the name or
    options are not a scheme's)."""
    try:
        return bool(build_scheme(name, max(n, 2), 1024, **(options or {})).caps.lossless)
    except (ConfigError, ValueError, TypeError):
        return None


def with_lossless(records: Sequence[RunRecord]) -> list[RunRecord]:
    """`records` with each scheme record's `lossless` capability filled in where the record does not say
    (files written before it was recorded), as `lossless` builds the scheme with the record's options."""
    memo: dict[tuple[str, int, str], bool | None] = {}

    def known(r: RunRecord) -> bool | None:
        key = (r.scheme, r.gpus, json.dumps(r.options, sort_keys=True))
        if key not in memo:
            memo[key] = lossless(r.scheme, r.gpus, r.options)
        return memo[key]

    return [replace(r, lossless=known(r)) if r.lossless is None and r.kind == "scheme" else r for r in records]


def needs_profile(name: str) -> bool:
    """Whether `name` chooses from every rank's data (it then needs `profile=`)."""
    return lookup(name).needs_profile


def all_schemes() -> list[str]:
    """Every distinct program once: catalog schemes (the first of those that run the same program;
    the data-dependent zen-auto, which runs one of them, left out), then the design points no
    option-free catalog scheme already runs."""
    seen, names = set(), []
    for name, scheme in CATALOG.items():
        if scheme.point is None:
            if not scheme.needs_profile:
                names.append(name)
            continue
        key = (scheme.point.canonical(), tuple(sorted(scheme.options.items())))
        if key not in seen:
            seen.add(key)
            names.append(name)
    return names + [p.name for p in DISTINCT if (p, ()) not in seen]


def design_space() -> list[dict[str, Any]]:
    """One row per distinct scheme and per catalog scheme: name, kind, the four dimensions, format,
    partitioner, the raw combinations that collapse into it (distinct) or the point it runs (catalog)."""
    rows = [point_row(p.name, "distinct", p, "coo", "-" if p.partition == "centralization" else
                      ("zen" if p.balance == "balanced" else "contiguous"), [r.raw_name for r in collapses(p)], "")
            for p in DISTINCT]
    return rows + [scheme.row() for scheme in CATALOG.values()]


__all__ = ["scheme_names", "lookup", "build_scheme", "scheme_options", "check_options", "needs_profile", "all_schemes",
           "design_space", "Point"]
