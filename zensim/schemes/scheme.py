"""A named scheme: a point of the design space with its options, or a program built by hand.

The catalog (zensim.schemes.catalog) holds one `Scheme` per name. A point-based scheme composes its
program from the design space's parts (zensim.schemes.space); a scheme outside the four
dimensions (a value-dependent one, say) gives a `builder` and the options it accepts. Either way
`Scheme.build(n, numel, ...)` returns an object with the stage-program protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from zensim.run.context import Tables
from zensim.schemes.options import Option, accept
from zensim.schemes.program import ClosedForm
from zensim.schemes.space import Point, build_point, point_options
from zensim.sparse.chunk import SparseChunk


@dataclass(frozen=True)
class Scheme:
    """A named scheme (see the module docstring). `options` are the preset's own (formats,
    partitioner, ...), overridable by the user; `closed_form` overrides the design-space rule;
    `builder(n, numel, tables=, profile=, **options)` builds a program outside the space, with
    `accepts` its options; `needs_profile` marks schemes that choose from every rank's data."""

    name: str
    about: str
    point: Point | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    closed_form: ClosedForm | None = None
    builder: Callable[..., Any] | None = None
    accepts: tuple[Option, ...] = ()
    needs_profile: bool = False
    listing: Mapping[str, Any] = field(default_factory=dict)

    def declared(self) -> tuple[Option, ...]:
        """Every option the scheme accepts (from its parts, or its builder's), with this scheme's own
        values as the defaults."""
        if self.point is None:
            return self.accepts
        return tuple(replace(o, default=self.options.get(o.name, o.default)) for o in point_options(self.point))

    def build(self, n: int, numel: int, *, tables: Tables | None = None,
              profile: Sequence[SparseChunk] | None = None, **options: Any) -> Any:
        """The program for n ranks and `numel` elements with the user's `options` on top of the preset's."""
        if self.builder is not None:
            accept(self.declared(), options, self.name)
            return self.builder(n, numel, tables=tables, profile=profile, **options)
        return build_point(self.point, n, numel, name=self.name, tables=tables, closed_form=self.closed_form,
                           **{**self.options, **options})

    def row(self) -> dict[str, Any]:
        """The listing row of `zensim schemes`."""
        if self.point is None:
            return {"name": self.name, "kind": "preset", **self.listing, "about": self.about}
        point, opts = self.point, self.options
        push, pull = opts.get("push", "coo"), opts.get("pull", "coo")
        fmt = push if point.partition == "centralization" or push == pull else f"{push}/{pull}"
        partitioner = "-" if point.partition == "centralization" else opts.get(
            "partitioner", "zen" if point.balance == "balanced" else "contiguous")
        return point_row(self.name, "preset", point, fmt, partitioner, [point.canonical().name], self.about)


def point_row(name: str, kind: str, point: Point, fmt: str, partitioner: str, collapsed: list[str],
              about: str) -> dict[str, Any]:
    """One listing row for a design point."""
    return {"name": name, "kind": kind, "communication": point.communication,
            "aggregation": point.aggregation or "n/a (p2p)", "partition": point.partition,
            "balance": point.balance or "n/a", "format": fmt, "partitioner": partitioner,
            "collapses": collapsed, "about": about}
