"""Scheme options, declared by the parts a program is composed from.

Each part (the wire formats, a partition, an aggregation, a hand-written scheme) lists the
`Option`s it reads; a scheme accepts exactly the union of its parts' options, so nothing keeps a
list by hand. `accept(declared, given, scheme)` checks names and values: an unknown option or a bad
value is a one-line ConfigError naming the scheme, the option and what it accepts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zensim.errors import ConfigError


@dataclass(frozen=True)
class Option:
    """One option: its name, what it does, its default, and its accepted values (`choices`: a tuple,
    or a registry mapping whose keys are read at each check, so that a member registered later is
    accepted) or type (`kind`, int options must be at least `minimum`)."""

    name: str
    help: str
    default: Any = None
    choices: tuple[Any, ...] | Mapping[str, Any] | None = None
    kind: type = str
    minimum: int | None = None

    def check(self, value: Any, scheme: str) -> Any:
        """`value` if acceptable, else a ConfigError naming the scheme and the option."""
        if self.choices is not None:
            if value not in self.choices:
                raise ConfigError(f"scheme {scheme}: option {self.name} = {value!r}: expected one of "
                                  f"{', '.join(map(str, self.choices))}")
            return value
        if self.kind is int:
            if isinstance(value, bool) or not isinstance(value, int) or (self.minimum is not None and value < self.minimum):
                at_least = f" >= {self.minimum}" if self.minimum is not None else ""
                raise ConfigError(f"scheme {scheme}: option {self.name} = {value!r}: expected an integer{at_least}")
            return value
        if not isinstance(value, self.kind):
            raise ConfigError(f"scheme {scheme}: option {self.name} = {value!r}: expected {self.kind.__name__}")
        return value


def accept(declared: Iterable[Option], given: Mapping[str, Any], scheme: str) -> dict[str, Any]:
    """Every declared option's value: the given one (checked) or its default; ConfigError on an
    option no part declares."""
    table = {o.name: o for o in declared}
    unknown = sorted(set(given) - set(table))
    if unknown:
        raise ConfigError(f"scheme {scheme}: unknown option(s) {', '.join(unknown)} "
                          f"(it accepts: {', '.join(sorted(table)) or 'none'})")
    return {name: opt.check(given[name], scheme) if name in given else opt.default for name, opt in table.items()}


def describe(declared: Iterable[Option]) -> list[dict[str, Any]]:
    """The options as rows (name, default, choices, help), for `zensim schemes --options`."""
    return [{"name": o.name, "default": o.default, "choices": list(o.choices) if o.choices is not None else None,
             "help": o.help} for o in declared]
