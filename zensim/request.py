"""The request machinery: a run mode's request is a frozen dataclass whose fields are made by `option(...)`,
whose metadata (an `Option`) names the command-line flag and the YAML key, and holds the help text, the
default (the field's own) and the check. So

    add_arguments(parser, ClusterRequest)          # the flags, with their help and defaults
    ClusterRequest.from_args(args)                  # a request from argparse's namespace
    ClusterRequest.from_mapping(settings, where)    # a request from a scenario's flat settings

check every value with the same code, and a bad value is the same problem on one line, prefixed by
the flag and value (`--machines 0: must be at least 1`) or by the file and key
(`s.yaml: cluster.machines: must be at least 1, got 0`).

This module knows no run mode: the simulator's requests are in zensim.sim.request, the capture's in
zensim.trace.capture.request, the emulator's in emulate.request. It imports nothing of the project but
its errors, so that every layer may build its requests on it.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from zensim.errors import ConfigError


R = TypeVar("R", bound="Request")


class Where:
    """Where a value came from: names it in errors and says whether it arrived as command-line text."""

    def __init__(self, name: str, text: bool, path: Callable[[str], Any] | None = None) -> None:
        self.name, self.text, self.path = name, text, path

    def fail(self, value: Any, problem: str) -> ConfigError:
        """The one-line error: '--flag VALUE: problem' or 'FILE: key: problem, got VALUE'."""
        if self.text:
            return ConfigError(f"{self.name} {value}: {problem}")
        return ConfigError(f"{self.name}: {problem}, got {value!r}")


Check = Callable[[Any, Where], Any]  # a raw value (text from the CLI, a YAML scalar) -> the field's value


@dataclass(frozen=True)
class Option:
    """One field's mapping: flag, YAML key, help, and the check that turns a raw value into the value."""

    flag: str
    key: str
    help: str
    check: Check
    metavar: str | None = None
    switch: bool = False  # a store_true flag; a YAML true/false
    sweep: bool = True  # a scenario may sweep it (sweep: {key: [...]})
    required: bool = False  # the command line must give it
    one_of: str | None = None  # the command line gives exactly one of the fields with this name
    aliases: tuple[str, ...] = ()  # other spellings of the flag ('--output' beside '-o')
    many: bool = False  # a repeatable flag (its texts as a list); a YAML mapping or list


def option(default: Any, help: str, check: Check, *, flag: str | None = None, key: str | None = None,
           **settings: Any) -> Any:
    """A request field: its default, help, check, its flag and YAML key (default: from the field's name,
    `--field-name` and `field_name`; a flag without dashes is a positional taking the arguments after
    `--`), and Option's other settings (metavar, switch, sweep, required, one_of, aliases, many)."""
    return dataclasses.field(default=default, metadata={"option": dict(flag=flag, key=key, help=help, check=check,
                                                                       **settings)})


def integer(low: int) -> Check:
    """An integer >= low (a bool is not one), the one check of an integer with a floor in every mode's
    requests: '--machines 0: must be at least 1', '--machines x: expected an integer'."""
    whole = parsed(int)

    def check(value: Any, where: Where) -> int:
        value = whole(value, where)
        if value < low:
            raise where.fail(value, f"must be at least {low}")
        return value
    return check


def at_least(flag: str, value: int, low: int) -> int:
    """`integer(low)` on a Python function's argument that `flag` gives on the command line, with the same
    one line: '--ranks 0: must be at least 1'."""
    return integer(low)(value, Where(flag, True))


def parsed(kind: type) -> Check:
    """An int or a float, as given (the command line's text parsed); its range is the work's to check."""
    word = "an integer" if kind is int else "a number"

    def check(value: Any, where: Where) -> Any:
        if where.text and isinstance(value, str):
            try:
                return kind(value)
            except ValueError:
                raise where.fail(value, f"expected {word}") from None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or (kind is int and not isinstance(value, int)):
            raise where.fail(value, f"expected {word}")
        return kind(value)
    return check


def remainder(value: Any, where: Where) -> tuple[str, ...]:
    """The arguments after `--` (argparse's REMAINDER, which keeps the `--` itself), for a script."""
    items = tuple(value)
    return items[1:] if items[:1] == ("--",) else items


def number(low: float, high: float = math.inf, *, open_low: bool = False) -> Check:
    """A finite number in [low, high] ((low, high] with `open_low`; a bool is not one)."""
    span = f"{'(' if open_low else '['}{low:g}, " + ("inf)" if high == math.inf else f"{high:g}]")

    def check(value: Any, where: Where) -> float:
        raw = value
        if where.text and isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise where.fail(raw, f"expected a number in {span}") from None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) \
                or value < low or value > high or (open_low and value == low):
            raise where.fail(raw, f"expected a number in {span}")
        return float(value)
    return check


def choice(what: str, choices: Callable[[], Sequence[str]] | Sequence[str] | Mapping[str, Any]) -> Check:
    """One of `choices` (a function is called when checked: a registry may grow after import)."""
    def check(value: Any, where: Where) -> str:
        names = tuple(choices() if callable(choices) else choices)
        if value not in names:
            raise where.fail(value, f"unknown {what} (choose from {', '.join(names)})")
        return value
    check.choices = choices  # type: ignore[attr-defined]  # (the help lists them)
    return check


def text(what: str) -> Check:
    """A string (given as text, not a YAML number or list)."""
    def check(value: Any, where: Where) -> str:
        if not isinstance(value, str) or not value:
            raise where.fail(value, f"expected {what} as text")
        return value
    return check


def unit(parse: Callable[[Any, str], float], example: str) -> Check:
    """A bandwidth or latency with its unit ('25Gbps', '5us'), in SI units (bytes/s, s)."""
    def check(value: Any, where: Where) -> float:
        if isinstance(value, (int, float)) and not where.text:  # a bare YAML number has no unit
            raise where.fail(value, f"has no unit (e.g. {example})")
        return parse(value, where.name)
    return check


def switch(value: Any, where: Where) -> bool:
    """true or false."""
    if not isinstance(value, bool):
        raise where.fail(value, "expected true or false")
    return value


def input_file(value: Any, where: Where) -> str:
    """An input file: as given on the command line; in a scenario relative to its folder, checked to exist."""
    if not isinstance(value, str) or not value:
        raise where.fail(value, "expected a file path")
    return str(where.path(value)) if where.path is not None else value


def key_values(value: Any, where: Where) -> tuple[tuple[str, Any], ...]:
    """KEY=VALUE texts (a repeated flag) or a YAML mapping -> ((key, value), ...) in the order given; the
    values are typed where the keys' meaning is known (e.g. a model's options: zensim.sim.request)."""
    if where.text and isinstance(value, list):
        pairs = []
        for item in value:
            key, sep, text_ = str(item).partition("=")
            if not sep or not key.strip():
                raise where.fail(item, "expected KEY=VALUE")
            pairs.append((key.strip(), text_.strip()))
        return tuple(pairs)
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise where.fail(value, "expected a mapping of KEY: VALUE")
    return tuple(value.items())


def optional(check: Check) -> Check:
    """`check`, or None (not given)."""
    def maybe(value: Any, where: Where) -> Any:
        return None if value is None else check(value, where)
    maybe.choices = getattr(check, "choices", None)  # type: ignore[attr-defined]
    return maybe


def options_of(cls: type) -> dict[str, Option]:
    """Field name -> Option of a request class, in field order."""
    out = {}
    for f in dataclasses.fields(cls):
        settings = dict(f.metadata["option"])
        flag, key = settings.pop("flag") or "--" + f.name.replace("_", "-"), settings.pop("key") or f.name
        out[f.name] = Option(flag, key, **settings)
    return out


def swept_keys(cls: type) -> tuple[str, ...]:
    """The YAML keys of a request class that a scenario may sweep."""
    return tuple(opt.key for opt in options_of(cls).values() if opt.sweep)


def defaults_of(cls: type) -> dict[str, Any]:
    """YAML key -> default of every field of a request class."""
    fields = {f.name: f.default for f in dataclasses.fields(cls)}
    return {opt.key: fields[name] for name, opt in options_of(cls).items()}


def add_arguments(parser: argparse.ArgumentParser, cls: type, *, lists: Sequence[str] = (), below: type | None = None
                  ) -> None:
    """Add a flag for every field of `cls` (but those of its base class `below`, added already), defaulting
    to the field's default; the fields in `lists` take a comma-separated list (requests_from_args)."""
    fields = {f.name: f.default for f in dataclasses.fields(cls)}
    added = {f.name for f in dataclasses.fields(below)} if below is not None else set()
    groups: dict[str, Any] = {}
    for name, opt in options_of(cls).items():
        if name in added:
            continue
        if not opt.flag.startswith("-"):  # (a positional's name is its dest)
            parser.add_argument(opt.flag, nargs=argparse.REMAINDER, help=opt.help)
            continue
        where = parser
        if opt.one_of is not None:
            if opt.one_of not in groups:
                groups[opt.one_of] = parser.add_mutually_exclusive_group(required=True)
            where = groups[opt.one_of]
        if opt.switch:
            where.add_argument(opt.flag, *opt.aliases, dest=name, action="store_true", help=opt.help)
        elif opt.many:
            where.add_argument(opt.flag, *opt.aliases, dest=name, action="append", default=fields[name],
                               help=opt.help, metavar=opt.metavar or _metavar(opt))
        else:
            where.add_argument(opt.flag, *opt.aliases, dest=name, default=fields[name], required=opt.required,
                               help=opt.help + ("; a comma-separated list runs each" if name in lists else ""),
                               metavar=opt.metavar or _metavar(opt))


def _metavar(opt: Option) -> str:
    """How the help names an option's value: its choices ('{switch,leafspine,fattree}') or its name."""
    names = getattr(opt.check, "choices", None)
    if names is not None:
        return "{" + ",".join(names() if callable(names) else names) + "}"
    return opt.flag.lstrip("-").replace("-", "_").upper()


def requests_from_args(cls: type[R], args: argparse.Namespace, lists: Sequence[str]) -> list[R]:
    """One request per combination of the comma lists given for the fields in `lists` (in that order,
    the last varying fastest), each item checked as the field's value."""
    opts = options_of(cls)
    axes = []
    for name in lists:
        raw = getattr(args, name)
        flag = opts[name].flag
        axes.append([opts[name].check(item, Where(flag, True)) for item in raw.split(",")]
                    if isinstance(raw, str) else [raw])
    return [cls.from_args(args, **dict(zip(lists, combo))) for combo in itertools.product(*axes)]


@dataclass(frozen=True)
class Request:
    """The base of every request: the mapping from the command line and from a scenario."""

    @classmethod
    def from_args(cls: type[R], args: argparse.Namespace, **given: Any) -> R:
        """The request from argparse's namespace (every flag's text checked); `given`: fields already
        checked by the caller (e.g. one value of a comma list)."""
        values = {}
        for name, opt in options_of(cls).items():
            if name in given:
                values[name] = given[name]
                continue
            raw = getattr(args, name)  # text, a repeated flag's list of texts, or the field's default
            text = isinstance(raw, (str, list))
            values[name] = raw if raw is None or opt.switch else opt.check(raw, Where(opt.flag, text))
        request = cls(**values)
        request.validate(lambda name: options_of(cls)[name].flag, True)
        return request

    @classmethod
    def from_mapping(cls: type[R], settings: Mapping[str, Any], where: Callable[[str], str],
                     path: Callable[[str, Any], Any] | None = None) -> R:
        """The request from a scenario's flat settings (YAML key -> value; a missing key takes the
        default); `where(key)` names a key in errors ('FILE: cluster.nic'), `path(key, value)` resolves
        an input file."""
        fields = {f.name: f.default for f in dataclasses.fields(cls)}
        values = {}
        for name, opt in options_of(cls).items():
            raw = settings.get(opt.key, fields[name])
            resolve = (lambda value, key=opt.key: path(key, value)) if path is not None else None
            values[name] = None if raw is None else opt.check(raw, Where(where(opt.key), False, resolve))
        request = cls(**values)
        request.validate(lambda name: where(options_of(cls)[name].key), False)
        return request

    def validate(self, place: Callable[[str], str], text: bool) -> None:
        """The rules between fields (`place(field)` names a field in errors; `text`: from the command line);
        none here."""

    def place(self, name: str, where: Callable[[str], str] | None = None) -> str:
        """How errors name field `name`: its flag, or with `where` its YAML key's place."""
        opt = options_of(type(self))[name]
        return where(opt.key) if where is not None else opt.flag
