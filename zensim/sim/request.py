"""The simulator's typed requests: one frozen dataclass per simulated run mode (simulate, iteration, the
replay over iterations), built from the command line and from a scenario's YAML by one mapping (a flat
configuration, as Vidur's; the machinery, `option(...)` and its checks, is zensim.request's). Adding an
option to a mode is one `option(...)` line here and its use; the CLI and the scenario loader pick it up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from zensim.errors import ConfigError
from zensim.layout import LAYOUTS
from zensim.net.models import MODELS
from zensim.net.presets import PRESETS
from zensim.net.topology import FABRICS, NIC_LAYOUTS, TRANSPORTS
from zensim.net.units import parse_bandwidth, parse_latency
from zensim.request import (Request, Where, choice, input_file, integer, key_values, number, option, optional,
                             switch, text, unit)
from zensim.sim.run import all_models
from zensim.train.buckets import BUCKETINGS
from zensim.train.iteration import DENSE_WORK
from zensim.train.syncs import SPARSE_BUCKETS
from zensim.train.tuner import DENSE_CHOICES

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
        ('FILE: model_options.batch: expected a number, got 'x''). Typed once per request (validate types
        them; build and model_options find them in the request's cache, which is no field: not compared,
        and a `dataclasses.replace` copy types its own)."""
        from zensim.net.fabrics import fabric_option
        from zensim.net.models import model_option

        cache = self.__dict__.setdefault("_typed_options", {})  # a frozen dataclass's __dict__ stays writable
        if name in cache:
            return dict(cache[name])
        read, owner = (model_option, self.model) if name == "model_option" else (fabric_option, self.fabric)
        out = {}
        for key, value in getattr(self, name) or ():
            try:
                out[key] = read(owner, key, value)
            except ConfigError as exc:
                where = place(name) if place is not None else self.place(name)
                raise (Where(where, True).fail(f"{key}={value}", str(exc)) if text
                       else Where(f"{where}.{key}", False).fail(value, str(exc))) from None
        cache[name] = out
        return dict(out)

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
