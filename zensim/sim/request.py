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
import itertools
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
from zensim.train.buckets import BUCKETINGS
from zensim.train.iteration import DENSE_WORK
from zensim.train.syncs import SPARSE_BUCKETS
from zensim.train.tuner import DENSE_CHOICES

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
    many: bool = False  # a repeatable flag (its texts as a list); a YAML mapping or list


def option(default: Any, help: str, check: Check, *, flag: str | None = None, key: str | None = None,
           metavar: str | None = None, switch: bool = False, sweep: bool = True, many: bool = False) -> Any:
    """A request field: its default, help, check, its flag and YAML key (default: from the field's name,
    `--field-name` and `field_name`), whether a scenario may sweep it and whether the flag repeats."""
    return dataclasses.field(default=default, metadata={"option": (flag, key, help, check, metavar, switch, sweep,
                                                                   many)})


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
        flag, key, help_, check, metavar, is_switch, sweep, many = f.metadata["option"]
        out[f.name] = Option(flag or "--" + f.name.replace("_", "-"), key or f.name, help_, check, metavar, is_switch,
                             sweep, many)
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
    for name, opt in options_of(cls).items():
        if name in added:
            continue
        if opt.switch:
            parser.add_argument(opt.flag, dest=name, action="store_true", help=opt.help)
        elif opt.many:
            parser.add_argument(opt.flag, dest=name, action="append", default=fields[name], help=opt.help,
                                metavar=opt.metavar or _metavar(opt))
        else:
            parser.add_argument(opt.flag, dest=name, default=fields[name],
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


def key_values(value: Any, where: Where) -> tuple[tuple[str, Any], ...]:
    """KEY=VALUE texts (a repeated flag) or a YAML mapping -> ((key, value), ...) in the order given; the
    values are typed where the keys' meaning is known (the model's options: ClusterRequest.validate)."""
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


MAXMIN_BATCH = MODELS["maxmin"].options["batch"]  # the model's default allowance


@dataclass(frozen=True)
class ClusterRequest(Request):
    """The cluster, its links and fabric, the multi-GPU layout and the network model: the part every
    simulated mode shares (zensim simulate, zensim iteration; a scenario's cluster:, model: and
    maxmin_batch: keys)."""

    machines: int = option(16, "machines (default 16)", integer(1))
    gpus_per_machine: int | None = option(None, "GPUs per machine (default: the preset's or 1)", optional(integer(1)))
    preset: str | None = option(None, "machine type: GPUs, NVLink, NICs, transport and NIC latency "
                                "(docs/simulator.md, Presets); explicit options win",
                                optional(choice("preset", PRESETS)))
    nic: float | None = option(None, "bandwidth of one NIC, e.g. 25Gbps, 12.5GB/s (default: profile, preset or 25Gbps)",
                               optional(unit(parse_bandwidth, "25Gbps")))
    nics: str | None = option(None, "one NIC per machine, or one per GPU on rail-optimized switches (default: preset's "
                              "or machine)", optional(choice("nics", NIC_LAYOUTS)))
    transport: str | None = option(None, "tcp or rdma: the default NIC latency (tcp 25us, rdma 2us; default: preset's "
                                   "or tcp)", optional(choice("transport", TRANSPORTS)))
    nic_latency: float | None = option(None, "per-message latency across machines, e.g. 5us (default: profile, preset "
                                       "or by --transport)", optional(unit(parse_latency, "5us")))
    nvlink: float | None = option(None, "per-GPU intra-machine bandwidth (default: profile, preset or 300GB/s)",
                                  optional(unit(parse_bandwidth, "300GB/s")))
    nvlink_latency: float | None = option(None, "per-message latency inside a machine (default: profile or 1us)",
                                          optional(unit(parse_latency, "1us")))
    fabric: str = option("switch", "non-blocking switch, two-level leaf-spine, or multi-tier fat-tree (with --tiers)",
                         choice("fabric", FABRICS))
    oversubscription: float | None = option(None, "leaf-spine oversubscription ratio (default 1)",
                                            optional(number(1)), flag="--oversub")
    machines_per_leaf: int | None = option(None, "leaf-spine: machines under one leaf (default 4)",
                                           optional(integer(1)))
    tiers: str | None = option(None, "fat-tree tiers from the bottom, members per group : oversubscription of its "
                               "uplinks, e.g. 4:1,8:2 = leaves of 4 machines (1:1), pods of 8 leaves (2:1), a "
                               "non-blocking core", optional(text("MEMBERS:OVERSUB[,MEMBERS:OVERSUB...]")),
                               metavar="M:O[,M:O...]")
    fabric_option: tuple[tuple[str, Any], ...] | None = option(
        None, "an option the fabric declares, KEY=VALUE, typed as its default (repeatable; --oversub, "
        "--machines-per-leaf and --tiers are three: --fabric leafspine --fabric-option oversub=2 is --oversub 2)",
        optional(key_values), key="fabric_options", metavar="KEY=VALUE", sweep=False, many=True)
    layout: str = option("zen", "multi-GPU layout (default zen)", choice("layout", LAYOUTS))
    profile: str | None = option(None, "calibration profile JSON: links, per-element work costs, host figures",
                                 optional(input_file), key="profile", sweep=False)
    model: str = option("fifo", "network model: a bandwidth sharing model or analytic (default fifo)",
                        choice("model", all_models))
    maxmin_batch: float = option(MAXMIN_BATCH, "maxmin: service a link may lose to freed capacity left idle between "
                                 "solves, as a fraction of its work (0 = exact max-min; default 1/256)", number(0, 1))
    model_option: tuple[tuple[str, Any], ...] | None = option(
        None, "an option the network model declares, KEY=VALUE, typed as its default (repeatable; e.g. --model maxmin "
        "--model-option batch=0; docs/extending.md, A sharing model)", optional(key_values),
        key="model_options", metavar="KEY=VALUE", sweep=False, many=True)

    def validate(self, place: Callable[[str], str], text: bool) -> None:
        """Each model and fabric option is one the model or the fabric declares, of its default's type."""
        self.typed_options("model_option", place, text)
        self.typed_options("fabric_option", place, text)

    def typed_options(self, name: str, place: Callable[[str], str] | None = None, text: bool = True
                      ) -> dict[str, Any]:
        """The model options (`name` 'model_option') or fabric options ('fabric_option') given, each typed as
        the model or fabric declares it (zensim.net.models.model_option, zensim.net.fabrics.fabric_option);
        a one-line error naming the flag and item ('--model-option batch=x: expected a number') or the key
        ('FILE: model_options.batch: expected a number, got 'x'')."""
        from zensim.net.fabrics import fabric_option
        from zensim.net.models import model_option

        read, owner = (model_option, self.model) if name == "model_option" else (fabric_option, self.fabric)
        out = {}
        for key, value in getattr(self, name) or ():
            try:
                out[key] = read(owner, key, value)
            except ConfigError as exc:
                where = place(name) if place is not None else self.place(name)
                raise (Where(where, True).fail(f"{key}={value}", str(exc)) if text
                       else Where(f"{where}.{key}", False).fail(value, str(exc))) from None
        return out

    def build(self, where: Callable[[str], str] | None = None):  # -> tuple[ClusterSpec, Profile | None]
        """The ClusterSpec (explicit fields > the profile's > the preset's > defaults) and the profile."""
        from zensim.sim.cluster import build_cluster

        names = {k: self.place(f, where) for k, f in (("oversub", "oversubscription"), ("tiers", "tiers"),
                                                      ("machines_per_leaf", "machines_per_leaf"), ("preset", "preset"),
                                                      ("fabric_option", "fabric_option"))}
        return build_cluster(self.machines, self.gpus_per_machine, nic=self.nic, nic_latency=self.nic_latency,
                             nvlink=self.nvlink, nvlink_latency=self.nvlink_latency, fabric=self.fabric,
                             oversub=self.oversubscription, machines_per_leaf=self.machines_per_leaf,
                             profile=self.profile, preset=self.preset, nics=self.nics, transport=self.transport,
                             tiers=self.tiers, fabric_options=tuple(self.typed_options("fabric_option").items()),
                             names=names)

    @property
    def model_options(self) -> dict[str, Any] | None:
        """The sharing model's options from the request: maxmin's batch, then the model options given (a
        given batch wins); None for none."""
        batch = {"batch": self.maxmin_batch} if self.model == "maxmin" else {}
        options = {**batch, **self.typed_options("model_option")}
        return options or None


@dataclass(frozen=True)
class SimulateRequest(ClusterRequest):
    """One synchronization of a trace's iteration on a cluster (zensim simulate; a scenario without a
    training: or iterations: section, its trace.iteration and values keys)."""

    iteration: int = option(0, "trace iteration (default 0; not with --replay)", integer(0))
    values: bool = option(False, "carry values (the trace's, or synthetic ones) even where no scheme needs them",
                          switch, switch=True, sweep=False)

    def run(self, trace: Any, schemes: str | Sequence[str], *, options: dict | None = None, costs: Any = None,
            **kw: Any) -> list:
        """zensim.sim.run.simulate() of this request (`costs`: its cluster's, if built already); `kw`:
        simulate's other keywords (progress, provenance, cache, baselines) -> RunRecords."""
        from zensim.net.costs import Costs
        from zensim.sim.run import simulate

        costs = costs if costs is not None else Costs.of(*self.build())
        return simulate(trace, schemes, costs, self.model, iteration=self.iteration, layout=self.layout,
                        model_options=self.model_options, options=options, values=True if self.values else None, **kw)


def tensor_names(value: Any, where: Where) -> tuple[str, ...] | None:
    """Tensor names: a comma-separated list on the command line (empty: not given), a YAML list."""
    if where.text and isinstance(value, str):
        value = [n for n in value.split(",") if n] or None
        if value is None:
            return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(n, str) and n for n in value):
        raise where.fail(value, "expected a list of tensor names")
    return tuple(value)


def cost(value: Any, where: Where) -> str:
    """A selection's cost: a name (dgc, threshold) or ALPHA,BETA."""
    from zensim.train.fusion.schedule import compression_cost

    compression_cost(str(value), where.name)
    return str(value)


def _strategies() -> tuple[str, ...]:
    from zensim.train.fusion.registry import STRATEGIES

    return tuple(STRATEGIES)


def takes_cap(strategy: str) -> bool:
    """Whether DDP's bucket cap and a fusion degree apply to the registered strategy (FusionStrategy.takes_cap:
    none, behind)."""
    from zensim.train.fusion.registry import lookup

    return lookup(strategy).takes_cap


@dataclass(frozen=True)
class IterationRequest(ClusterRequest):
    """Training iterations of a model on a cluster (zensim iteration; a scenario's training: section, its
    trace.iteration as the first iteration): the layer profile, buckets or a fusion strategy, the dense
    all-reduce and the iterations. The trace, the schemes and their options are the run's."""

    layers: str | None = option(None, "layer profile JSON (zensim layers record/estimate/import)",
                                optional(input_file), sweep=False)
    device: str | None = option(None, "instead of --layers: a GPU preset (v100, a100, h100): the shipped profile of "
                                "the trace's workload and batch beside the trace (layers/), else an estimate",
                                optional(text("a GPU preset")), sweep=False)
    corpus: str | None = option(None, "with --device and no shipped profile: corpus of the language models",
                                optional(input_file), sweep=False)
    iterations: int = option(4, "training iterations (default 4)", integer(1), sweep=False)
    first_iteration: int = option(0, "trace iteration of the first one (default 0)", integer(0), flag="--iteration",
                                  key="iteration")
    bucketing: str = option("ddp", "DDP's buckets (default ddp), a bucket per tensor, or one bucket",
                            choice("bucketing", BUCKETINGS))
    bucket_mb: float | None = option(None, "DDP bucket_cap_mb in MiB (default 25, first 1)", optional(number(0)))
    first_bucket_mb: float | None = option(None, "DDP first bucket cap in MiB", optional(number(0)))
    sparse_buckets: str = option("own", "own (default): a sparse tensor is a bucket of its own (torch's rule for "
                                 "sparse gradients); fused: they join DDP's buckets and each bucket is synchronized as "
                                 "zensim_hook does (the scheme's run on the whole bucket, dense members included)",
                                 choice("sparse_buckets", SPARSE_BUCKETS))
    dense_above: float | None = option(None, "with sparse buckets fused: all-reduce a bucket densely when its previous "
                                       "sum's density exceeded D, as zensim_hook's dense_above",
                                       optional(number(0, 1)), metavar="D", sweep=False)
    hook_run_s: float | None = option(None, "with sparse buckets fused: zensim_hook's host seconds per bucket in the "
                                      "scheme's run outside its stages, as benchmarks/hook_run_overhead.py measures "
                                      "for the scheme and rank count; x the compute scale (default 0)",
                                      optional(number(0)), metavar="S", sweep=False)
    sparse_tensors: tuple[str, ...] | None = option(None, "trace tensors synchronized sparse (default: all)",
                                                    optional(tensor_names), sweep=False)
    dense_work: str = option("fused", "fused (default): a dense collective is one kernel per rank as NCCL's (its work "
                             "per element, one launch per rank); profile: a launch per piece, as a scheme's work; free: "
                             "none",
                             choice("dense_work", DENSE_WORK))
    dense_algorithm: str = option("auto", "the dense all-reduce of dense buckets, in every scheme's run and dense DDP "
                                  "alike: auto (default) the fastest for each bucket's size, as NCCL's tuner; ring or "
                                  "doubling (recursive doubling) forced",
                                  choice("dense_algorithm", DENSE_CHOICES))
    compute_scale: float = option(1.0, "multiply the profile's compute times (e.g. the calibration's cpu_slowdown for "
                                  "a profile measured alone on an emulation host; default 1)", number(0, open_low=True),
                                  sweep=False)
    shared_host: bool = option(False, "every GPU is a process of one host sharing its processors (the profile's "
                               "host_cores) for compute and local work: CPU training, the emulator", switch, switch=True,
                               sweep=False)
    host_others: float = option(0.0, "with --shared-host: K other processes (scheduling groups) always runnable on the "
                                "host, sharing its processors with the ranks' work (another user's jobs; docs/ddp.md "
                                "measures it; default 0)", number(0), metavar="K", sweep=False)
    strategy: str | None = option(None, "a fusion strategy (docs/fusion.md): buckets, selection and compression decided "
                                  "by it (none = dense DDP); instead of the bucketing (the command: all = each)",
                                  optional(choice("strategy", _strategies)))
    fusion_degree: float | None = option(None, "with a strategy: behind's (and none's) bucket cap as a fraction of the "
                                         "model's bytes (0 = a bucket per tensor, 1 = one bucket)",
                                         optional(number(0, 1)))
    compression_cost: str = option("dgc", "with a strategy: seconds per selection, dgc or threshold or ALPHA,BETA "
                                   "(s, s per dense byte); default dgc", cost, sweep=False)
    density: float = option(0.01, "with a strategy: selection density (default 0.01)", number(0, 1, open_low=True),
                            sweep=False)
    sparsifier: str = option("topk", "with a strategy, on a dense trace: the selection (default topk)",
                             text("a sparsifier name"), sweep=False)

    def validate(self, place: Callable[[str], str], text: bool) -> None:
        """The rules between fields (`place(field)` names one in errors; `text`: from the command line)."""
        from zensim.train.buckets import make_bucketing
        from zensim.train.fusion.schedule import Strategy
        from zensim.train.fusion.strategies import Compression

        def wrap(name: str, exc: ConfigError) -> ConfigError:
            return exc if text else ConfigError(f"{place(name)}: {exc}")

        super().validate(place, text)

        if self.model not in MODELS:
            raise ConfigError(f"{place('model')}: training iterations need a network model with a timeline "
                              f"({', '.join(MODELS)}), not {self.model!r}")
        if self.host_others and not self.shared_host:
            raise ConfigError(f"{place('host_others')}: only with {place('shared_host')} (the processes share the "
                              "ranks' host)")
        hook_settings = {"dense_above": self.dense_above is not None, "hook_run_s": bool(self.hook_run_s)}
        for name, given in hook_settings.items():  # zensim_hook's (a strategy refuses them below)
            if given and self.strategy is None and self.sparse_buckets != "fused":
                raise ConfigError(f"{place(name)}: only with {place('sparse_buckets')} fused (the buckets of "
                                  "zensim_hook)")
        try:
            make_bucketing(self.bucketing, self.bucket_mb, self.first_bucket_mb)
        except ConfigError as exc:
            raise wrap("bucket_mb", exc) from None
        if self.strategy is None:
            if self.fusion_degree is not None:
                raise ConfigError(f"{place('fusion_degree')}: only with a strategy ({place('strategy')})")
            return
        for name, free in (("bucketing", "ddp"), ("sparse_buckets", "own"), ("first_bucket_mb", None),
                           ("dense_above", None), ("hook_run_s", None)):
            if getattr(self, name) != free:
                raise ConfigError(f"{place(name)}: not with a strategy (each strategy decides its buckets)")
        if self.fusion_degree is not None and self.bucket_mb is not None:
            raise ConfigError(f"{place('fusion_degree')} and {place('bucket_mb')}: give one")
        if self.strategy != "none":
            try:
                Strategy(self.strategy, Compression(density=self.density), self.sparsifier,
                         self.bucket_mb if takes_cap(self.strategy) else None)
            except ConfigError as exc:
                raise wrap("sparsifier", exc) from None

    def timeline_keywords(self) -> dict[str, Any]:
        """simulate_iteration's keywords that come from the request as they are (the timeline's network
        model and layout, the iterations, the dense all-reduce's work and algorithm, the shared host)."""
        return dict(model=self.model, layout=self.layout, model_options=self.model_options, iterations=self.iterations,
                    dense_work=self.dense_work, dense_algorithm=self.dense_algorithm, shared_host=self.shared_host)

    def one_point(self) -> IterationRequest:
        """The request with a fusion degree only where its strategy has one (none, behind)."""
        return self if self.strategy is None or takes_cap(self.strategy) else dataclasses.replace(self, fusion_degree=None)


@dataclass(frozen=True)
class ReplayRequest(ClusterRequest):
    """A replay over iterations of a trace with values, state carried (zensim simulate --replay A:B;
    a scenario's replay: section): each scheme with its sparsifier at a user-set density. A replay
    runs every GPU as a rank of the scheme (the flat layout) and times every iteration on a sharing model."""

    range: str | None = option(None, "replay iterations A..B-1 with state carried (a trace with values: capture "
                               "--dense); --scheme takes SCHEME or SCHEME+SPARSIFIER items (exdyna+cltk)",
                               optional(text("A:B (B exclusive), e.g. '0:50',")), flag="--replay", metavar="A:B",
                               sweep=False)
    sparsifier: str | None = option(None, "with --replay: sparsifier of every scheme, or 'none' (default: each "
                                    "scheme's own: spardl blocktopk, exdyna exdyna, oktopk oktopk, dense-allreduce "
                                    "none, others topk)", optional(text("a sparsifier name or none")))
    density: float = option(0.01, "with --replay: user-set density (default 0.01)", number(0, 1, open_low=True))

    def validate(self, place: Callable[[str], str], text: bool) -> None:
        """The model must have a timeline (the replay times each iteration's log with it and its options)."""
        if self.model not in MODELS:
            raise ConfigError(f"{place('model')}: {self.model} has no timeline for a replay over iterations "
                              "(use fifo or maxmin)")
        super().validate(place, text)

    def check_layout(self, gpus_per_machine: int, place: Callable[[str], str]) -> None:
        """A replay's ranks are the GPUs (the flat layout): the zen layout of several GPUs per machine is
        refused, not silently ignored."""
        if gpus_per_machine > 1 and self.layout != "flat":
            raise ConfigError(f"{place('layout')}: {self.layout} with {gpus_per_machine} GPUs per machine, but a "
                              "replay runs every GPU as a rank of the scheme: give the flat layout")
