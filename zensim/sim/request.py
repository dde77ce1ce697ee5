"""Typed requests: one frozen dataclass per run mode, built from the command line and from a scenario's
YAML by one mapping (a flat configuration, as Vidur's).

Every field of a request is made by `option(...)`: its metadata (an `Option`) names the command-line
flag and the YAML key, and holds the help text, the default (the field's own) and the check. So

    add_arguments(parser, ClusterRequest)          # the flags, with their help and defaults
    ClusterRequest.from_args(args)                  # a request from argparse's namespace
    ClusterRequest.from_mapping(settings, where)    # a request from a scenario's flat settings

check every value with the same code, and a bad value is the same problem on one line, prefixed by
the flag and value (`--machines 0: expected a positive integer`) or by the file and key
(`s.yaml: cluster.machines: expected a positive integer, got 0`). Adding an option to a mode is one
`option(...)` line here and its use; the CLI and the scenario loader pick it up.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from zensim.errors import ConfigError
from zensim.layout import LAYOUTS
from zensim.net.models import MODELS
from zensim.net.presets import PRESETS
from zensim.net.topology import FABRICS, NIC_LAYOUTS, TRANSPORTS
from zensim.net.units import parse_bandwidth, parse_latency
from zensim.sim.run import all_models

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


def option(default: Any, help: str, check: Check, *, flag: str | None = None, key: str | None = None,
           metavar: str | None = None, switch: bool = False) -> Any:
    """A request field: its default, help, check, and its flag and YAML key (default: from the field's
    name, `--field-name` and `field_name`)."""
    return dataclasses.field(default=default, metadata={"option": (flag, key, help, check, metavar, switch)})


def integer(low: int) -> Check:
    """An integer >= low (a bool is not one)."""
    word = {0: "a non-negative integer", 1: "a positive integer"}.get(low, f"an integer >= {low}")

    def check(value: Any, where: Where) -> int:
        if where.text and isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                raise where.fail(value, f"expected {word}") from None
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise where.fail(value, f"expected {word}")
        return value
    return check


def number(low: float, high: float = math.inf, *, open_low: bool = False, open_high: bool = False) -> Check:
    """A finite number in the interval (a bool is not one)."""
    span = f"{'(' if open_low else '['}{low:g}, {'inf)' if high == math.inf else f'{high:g}' + (')' if open_high else ']')}"

    def check(value: Any, where: Where) -> float:
        raw = value
        if where.text and isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise where.fail(raw, f"expected a number in {span}") from None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) \
                or value < low or value > high or (open_low and value == low) or (open_high and value == high):
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


def optional(check: Check) -> Check:
    """`check`, or None (not given)."""
    return lambda value, where: None if value is None else check(value, where)


def options_of(cls: type) -> dict[str, Option]:
    """Field name -> Option of a request class, in field order."""
    out = {}
    for f in dataclasses.fields(cls):
        flag, key, help_, check, metavar, is_switch = f.metadata["option"]
        out[f.name] = Option(flag or "--" + f.name.replace("_", "-"), key or f.name, help_, check, metavar, is_switch)
    return out


def defaults_of(cls: type) -> dict[str, Any]:
    """YAML key -> default of every field of a request class."""
    fields = {f.name: f.default for f in dataclasses.fields(cls)}
    return {opt.key: fields[name] for name, opt in options_of(cls).items()}


def add_arguments(parser: argparse.ArgumentParser, cls: type, *, skip: Sequence[str] = (),
                  defaults: Mapping[str, Any] | None = None) -> None:
    """Add a flag for every field of `cls` but `skip`; `defaults` (field -> value) overrides what argparse
    fills in when a flag is absent (e.g. a comma list's text), the field's default otherwise."""
    fields = {f.name: f.default for f in dataclasses.fields(cls)}
    for name, opt in options_of(cls).items():
        if name in skip:
            continue
        default = (defaults or {}).get(name, fields[name])
        if opt.switch:
            parser.add_argument(opt.flag, dest=name, action="store_true", help=opt.help)
        else:
            parser.add_argument(opt.flag, dest=name, default=default, help=opt.help,
                                metavar=opt.metavar or opt.flag.lstrip("-").replace("-", "_").upper())


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
            raw = getattr(args, name)
            values[name] = raw if raw is None or opt.switch else opt.check(raw, Where(opt.flag, isinstance(raw, str)))
        return cls(**values)

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
        return cls(**values)

    def place(self, name: str, where: Callable[[str], str] | None = None) -> str:
        """How errors name field `name`: its flag, or with `where` its YAML key's place."""
        opt = options_of(type(self))[name]
        return where(opt.key) if where is not None else opt.flag


MAXMIN_BATCH = MODELS["maxmin"].options["batch"]  # the model's default allowance


@dataclass(frozen=True)
class ClusterRequest(Request):
    """The cluster, its links and fabric, the multi-GPU layout and the network model: the part every
    simulated mode shares (zensim simulate, zensim iteration; a scenario's cluster:, model: and
    maxmin_batch: keys)."""

    machines: int = option(16, "machines (default 16)", integer(1))
    gpus_per_machine: int | None = option(None, "GPUs per machine (default: the preset's or 1)", optional(integer(1)))
    preset: str | None = option(None, "machine type: GPUs, NVLink, NICs, transport and NIC latency "
                                "(docs/simulator.md, Presets); explicit options win", optional(choice("preset", PRESETS)))
    nic: float | None = option(None, "bandwidth of one NIC, e.g. 25Gbps, 12.5GB/s (default: profile, preset or 25Gbps)",
                               optional(unit(parse_bandwidth, "25Gbps")))
    nics: str | None = option(None, "one NIC per machine, or one per GPU on rail-optimized switches (default: preset's "
                              "or machine)", optional(choice("nics", NIC_LAYOUTS)), metavar="{" + ",".join(NIC_LAYOUTS) + "}")
    transport: str | None = option(None, "tcp or rdma: the default NIC latency (tcp 25us, rdma 2us; default: preset's "
                                   "or tcp)", optional(choice("transport", TRANSPORTS)),
                                   metavar="{" + ",".join(TRANSPORTS) + "}")
    nic_latency: float | None = option(None, "per-message latency across machines, e.g. 5us (default: profile, preset "
                                       "or by --transport)", optional(unit(parse_latency, "5us")))
    nvlink: float | None = option(None, "per-GPU intra-machine bandwidth (default: profile, preset or 300GB/s)",
                                  optional(unit(parse_bandwidth, "300GB/s")))
    nvlink_latency: float | None = option(None, "per-message latency inside a machine (default: profile or 1us)",
                                          optional(unit(parse_latency, "1us")))
    fabric: str = option("switch", "non-blocking switch, two-level leaf-spine, or multi-tier fat-tree (with --tiers)",
                         choice("fabric", FABRICS), metavar="{" + ",".join(FABRICS) + "}")
    oversubscription: float | None = option(None, "leaf-spine oversubscription ratio (default 1)",
                                            optional(number(1)), flag="--oversub")
    machines_per_leaf: int | None = option(None, "leaf-spine: machines under one leaf (default 4)",
                                           optional(integer(1)))
    tiers: str | None = option(None, "fat-tree tiers from the bottom, members per group : oversubscription of its "
                               "uplinks, e.g. 4:1,8:2 = leaves of 4 machines (1:1), pods of 8 leaves (2:1), a "
                               "non-blocking core", optional(text("MEMBERS:OVERSUB[,MEMBERS:OVERSUB...]")),
                               metavar="M:O[,M:O...]")
    layout: str = option("zen", "multi-GPU layout (default zen)", choice("layout", LAYOUTS),
                         metavar="{" + ",".join(LAYOUTS) + "}")
    profile: str | None = option(None, "calibration profile JSON: links, per-element work costs, host figures",
                                 optional(input_file), key="profile")
    model: str = option("fifo", "network model: a bandwidth sharing model or analytic (default fifo)",
                        choice("model", all_models))
    maxmin_batch: float = option(MAXMIN_BATCH, "maxmin: service a link may lose to freed capacity left idle between "
                                 "solves, as a fraction of its work (0 = exact max-min; default 1/256)", number(0, 1))

    def build(self, where: Callable[[str], str] | None = None):  # -> tuple[ClusterSpec, Profile | None]
        """The ClusterSpec (explicit fields > the profile's > the preset's > defaults) and the profile."""
        from zensim.sim.cluster import build_cluster

        names = {k: self.place(f, where) for k, f in (("oversub", "oversubscription"), ("tiers", "tiers"),
                                                      ("machines_per_leaf", "machines_per_leaf"), ("preset", "preset"))}
        return build_cluster(self.machines, self.gpus_per_machine, nic=self.nic, nic_latency=self.nic_latency,
                             nvlink=self.nvlink, nvlink_latency=self.nvlink_latency, fabric=self.fabric,
                             oversub=self.oversubscription, machines_per_leaf=self.machines_per_leaf,
                             profile=self.profile, preset=self.preset, nics=self.nics, transport=self.transport,
                             tiers=self.tiers, names=names)

    @property
    def model_options(self) -> dict[str, float] | None:
        """The sharing model's options from the request (maxmin's batch), None for the others."""
        return {"batch": self.maxmin_batch} if self.model == "maxmin" else None
