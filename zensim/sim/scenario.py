"""YAML scenarios: one experiment (trace x cluster x schemes x models, optional sweep) written down once.

A scenario expands into *points*: the cartesian product of its `sweep:` lists (in the order written)
and, last, its `model:` list. Each point is one `simulate()` call, or with a `training:` section
(docs/scenarios.md) the training iterations of every scheme (`zensim.train.iteration`, as `zensim
iteration`). Every key and every value of every
point is validated when the file is loaded, before anything runs; a problem is a one-line ConfigError
naming the file and the key. Schema and path rules: docs/scenarios.md.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from zensim.errors import ConfigError
from zensim.extras import require_parquet
from zensim.inputs import read_text
from zensim.net.profile import Profile
from zensim.net.topology import ClusterSpec
from zensim.report.outputs import OutputFiles, table_format
from zensim.sim.iteration import check_schemes, layer_profile
from zensim.request import Where, defaults_of, swept_keys, switch
from zensim.sim.request import MAXMIN_BATCH, ClusterRequest, IterationRequest, ReplayRequest, SimulateRequest
from zensim.schemes import check_options
from zensim.sim.run import resolve_schemes
from zensim.trace.format import Trace
from zensim.train.layers import LayerProfile
from zensim.train.syncs import sparse_tensors

TOP_KEYS = ("trace", "cluster", "schemes", "options", "values", "model", "maxmin_batch", "model_options", "outputs",
            "sweep", "training", "replay", "iterations")
REPLAY_KEYS = ("range", "sparsifier", "density")  # the replay: section (zensim simulate --replay)
REPLAY_SECTIONS = ("replay", "iterations")  # its name, and its older name (docs/cli.md)
TRACE_KEYS = ("path", "iteration")
# the cluster: section: ClusterRequest's keys but the model's (top-level model:, maxmin_batch:, model_options:)
MODEL_KEYS = ("model", "maxmin_batch", "model_options")
CLUSTER_DEFAULTS: dict[str, Any] = {k: v for k, v in defaults_of(ClusterRequest).items() if k not in MODEL_KEYS}
OUTPUT_KEYS = ("json", "csv", "parquet", "timeline", "plot", "links", "traffic", "link_plot")
# keys a sweep may vary: the request fields marked so (every cluster key but the profile; model, maxmin_batch,
# iteration); in a training scenario also the training keys marked so
SWEEPABLE = swept_keys(SimulateRequest)
# the training section: IterationRequest's keys but the cluster's and the trace's iteration (trace.iteration)
TRAINING_DEFAULTS: dict[str, Any] = {k: v for k, v in defaults_of(IterationRequest).items()
                                     if k not in defaults_of(ClusterRequest) and k != "iteration"}
STRATEGY_KEYS = ("strategy", "fusion_degree")  # swept, they are drawn in one plot (per strategy, against the degree)
TRAINING_SWEPT = tuple(k for k in swept_keys(IterationRequest) if k in TRAINING_DEFAULTS)
GPU_KEYS = ("machines", "gpus_per_machine", "preset")  # what a throughput-against-GPUs plot has on its x axis


@dataclass(frozen=True)
class Point:
    """One simulate() call: the swept values that define it, its request (everything it needs to run) and
    the cluster and profile the request builds."""

    values: dict[str, Any]
    request: SimulateRequest | IterationRequest | ReplayRequest  # a training's with its strategy's degree only
    cluster: ClusterSpec
    profile: Profile | None

    @property
    def training(self) -> IterationRequest | None:
        """The request of training iterations (instead of one synchronization), else None."""
        return self.request if isinstance(self.request, IterationRequest) else None

    @property
    def replay(self) -> ReplayRequest | None:
        """The request of a replay over iterations (instead of one synchronization), else None."""
        return self.request if isinstance(self.request, ReplayRequest) else None

    @property
    def simulate(self) -> SimulateRequest | None:
        """The request of one synchronization (neither of the above), else None."""
        return self.request if isinstance(self.request, SimulateRequest) else None

    @property
    def iteration(self) -> int:
        """The trace iteration it synchronizes, or its training's first (a replay's range is checked apart: 0)."""
        req = self.request
        if isinstance(req, IterationRequest):
            return req.first_iteration
        return req.iteration if isinstance(req, SimulateRequest) else 0

    def label(self) -> str:
        """'machines=8, model=fifo' (empty for a scenario without a sweep)."""
        return ", ".join(f"{k}={v}" for k, v in self.values.items())


@dataclass(frozen=True)
class Scenario:
    """A loaded, validated scenario: its points, schemes, trace and absolute output paths."""

    path: Path
    trace: Path
    schemes: list[str]
    swept: list[str]
    points: list[Point]
    outputs: dict[str, Path] = field(default_factory=dict)  # the plot's path may hold {KEY} placeholders
    files: OutputFiles = field(default_factory=OutputFiles)  # every output path, checked at load
    options: dict[str, Any] = field(default_factory=dict)  # scheme options, for every scheme
    values: bool | None = None  # carry values; None = only where a scheme needs them
    layers: LayerProfile | None = None  # with a training: section, the model's layer profile

    @property
    def is_sweep(self) -> bool:
        """True when the scenario has more than one point."""
        return len(self.points) > 1


def load_scenario(path: str | Path, out_dir: str | Path | None = None) -> Scenario:
    """Read and validate a scenario file; relative inputs are under the file's folder, relative outputs
    under `out_dir` (default: the current directory, as for `zensim simulate --csv`)."""
    path = Path(path)
    text = read_text(path, "scenario")
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)
    except DuplicateKey as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}: not valid YAML{where} ({getattr(exc, 'problem', None) or exc})") from None
    return _Loader(path, Path(out_dir) if out_dir is not None else Path()).scenario(raw)


class DuplicateKey(yaml.YAMLError):
    """A mapping gives one key twice (YAML says keys are unique; PyYAML would keep the last silently)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.safe_load, refusing duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base constructor reports it
                continue
            if first is not None:
                raise DuplicateKey(f"line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                                   f"(first given at line {first + 1})")
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


class _Loader:
    """Validation of one file's raw YAML; every error message starts with the file name."""

    def __init__(self, path: Path, out_dir: Path) -> None:
        self.path, self.base, self.out_dir = path, path.parent, out_dir
        self.sweep_keys: set[str] = set()
        self.training = False
        self.replaying = False
        self.replay_key = "replay"  # the replay section's name as the file gives it (or its older name)

    def fail(self, key: str, problem: str) -> ConfigError:
        """The one-line error for `key`."""
        return ConfigError(f"{self.path}: {key}: {problem}")

    def mapping(self, raw: Any, key: str, known: tuple[str, ...]) -> dict[str, Any]:
        """`raw` as a mapping whose keys are all in `known`."""
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise self.fail(key, f"expected a mapping, got {type(raw).__name__}")
        for k in raw:
            if k not in known:
                raise self.fail(f"{key}.{k}" if key else str(k), f"unknown key (known: {', '.join(known)})")
        return dict(raw)

    def scenario(self, raw: Any) -> Scenario:
        """The whole file -> Scenario."""
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{self.path}: a scenario is a YAML mapping (trace:, cluster:, schemes:, ...)")
        top = self.mapping(raw, "", TOP_KEYS)
        trace_raw = top.get("trace")
        if trace_raw is None:
            raise self.fail("trace", "missing (the trace file to replay)")
        trace = self.mapping({"path": trace_raw} if isinstance(trace_raw, str) else trace_raw, "trace", TRACE_KEYS)
        if "path" not in trace:
            raise self.fail("trace.path", "missing")
        trace_path = self.input_path("trace.path", trace["path"])
        base = dict(CLUSTER_DEFAULTS)
        base.update(self.mapping(top.get("cluster"), "cluster", tuple(CLUSTER_DEFAULTS)))
        base["iteration"] = trace.get("iteration", 0)
        base["maxmin_batch"] = top.get("maxmin_batch", MAXMIN_BATCH)
        base["model_options"] = top.get("model_options")
        base["values"] = top.get("values")
        if base["profile"] is not None:
            base["profile"] = str(self.input_path("cluster.profile", base["profile"]))
        self.training = top.get("training") is not None
        given = [k for k in REPLAY_SECTIONS if k in top]
        if len(given) > 1:
            raise self.fail("iterations", "the older name of replay: (give one of them)")
        self.replay_key = given[0] if given else "replay"
        replay = self.replay(top[self.replay_key]) if given else None
        self.replaying = replay is not None
        if replay is not None:
            base.update(replay)
            if "iteration" in trace or "iteration" in (top.get("sweep") or {}):
                raise self.fail("trace.iteration" if "iteration" in trace else "sweep.iteration",
                                f"not with {self.replay_key}: (which replays iterations A..B-1)")
        if replay is not None and self.training:
            raise self.fail(self.replay_key, "not with a training: section (give one of them)")
        if self.training:
            base.update(self.mapping(top["training"], "training", tuple(TRAINING_DEFAULTS)))
            base.update({k: v for k, v in TRAINING_DEFAULTS.items() if k not in base})
        sweep = self.mapping(top.get("sweep"), "sweep", SWEEPABLE + (TRAINING_SWEPT if self.training else ()))
        outputs = self.mapping(top.get("outputs"), "outputs", OUTPUT_KEYS)
        names = self.schemes(top.get("schemes", "all"), replay is not None)
        options = self.options(top.get("options"), [n.partition("+")[0] for n in names], replay is not None)
        values = top.get("values")
        if values is not None:  # (a training or replay point has no SimulateRequest to check it)
            switch(values, Where(f"{self.path}: values", False))
        axes = {k: self.values(f"sweep.{k}", v) for k, v in sweep.items()}
        self.sweep_keys = set(axes)
        model = top.get("model", "fifo")
        if isinstance(model, list):
            if "model" in axes:
                raise self.fail("model", "a list here and a sweep over model too: give the models in one place")
            axes["model"] = self.values("model", model)
        else:
            base["model"] = model
        points = [self.point(base, dict(zip(axes, combo))) for combo in itertools.product(*axes.values())]
        if replay is not None:
            self.check_replay(names, options, trace_path, points)
        if self.training:
            once: dict[tuple, Point] = {}  # a degree is dropped where a strategy has none: such points run once
            for p in points:
                once.setdefault(tuple(p.values.items()), p)
            points = list(once.values())
            check_schemes([p.training for p in points], names, trace_path, f"{self.path}: schemes")
        self.check_trace(trace_path, points)
        layers = self.layers(trace_path, points) if self.training else None
        paths = self.outputs(outputs, list(axes), points)
        x_keys = self.x_keys(list(axes)) if len(points) > 1 else None
        inputs = [self.path, trace_path] + [base[k] for k in ("profile", "layers") if base.get(k) is not None]
        return Scenario(self.path, trace_path, names, list(axes), points, paths,
                        self.files(paths, points, x_keys, inputs), options, values or None, layers)

    def x_keys(self, swept: list[str]) -> tuple[str, ...]:
        """The swept keys along a plot's x axis: the first one, or for training the keys that set the GPU
        count (throughput against GPUs); the other swept keys make one plot each."""
        if self.replaying:  # one plot per point
            return ()
        return tuple(k for k in swept if k in GPU_KEYS + STRATEGY_KEYS) if self.training else tuple(swept[:1])

    def layers(self, trace: Path, points: list[Point]) -> LayerProfile:
        """The training section's layer profile (`layers: FILE` or `device: PRESET`), scaled by
        compute_scale; the trace's tensors must be parameters of it."""
        try:
            prof = layer_profile(points[0].training, trace, lambda name: f"training.{name}")
            with Trace.open(trace) as t:
                for p in points:
                    sparse_tensors(prof, t, "zen", p.training.sparse_tensors)
        except ConfigError as exc:
            text = str(exc)
            if text.startswith(str(self.path)):
                raise
            raise (ConfigError(f"{self.path}: {text}") if text.startswith("training.")
                   else self.fail("training", text)) from None
        return prof

    def schemes(self, raw: Any, replay: bool = False) -> list[str]:
        """all | presets | distinct | a list of names -> scheme names; for a replay, all (the replay's
        set) or a list of SCHEME or SCHEME+SPARSIFIER items (checked with the points)."""
        if not isinstance(raw, (str, list)) or not all(isinstance(s, str) for s in (raw if isinstance(raw, list) else [raw])):
            raise self.fail("schemes", f"expected all | presets | distinct | a list of names, got {raw!r}")
        if replay:
            from zensim.replay.method import ITERATION_SET

            return list(ITERATION_SET) if raw == "all" else [raw] if isinstance(raw, str) else list(raw)
        try:
            return resolve_schemes(raw)
        except ConfigError as exc:
            raise self.fail("schemes", str(exc).removeprefix("--scheme: ")) from None

    def options(self, raw: Any, names: list[str], each: bool = False) -> dict[str, Any]:
        """Scheme options (a mapping), accepted by every scheme of the scenario; with `each` (a
        replay: every scheme takes the options it accepts) each option by one scheme at least."""
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise self.fail("options", f"expected a mapping of scheme options, got {raw!r}")
        if each:
            from zensim.schemes import scheme_options

            for key, value in raw.items():
                takers = [n for n in names if key in {o.name for o in scheme_options(n)}]
                if not takers:
                    raise self.fail(f"options.{key}", f"no scheme of {', '.join(names)} takes it")
                for name in takers:
                    try:
                        check_options(name, {key: value})
                    except ConfigError as exc:
                        raise self.fail("options", str(exc)) from None
            return dict(raw)
        for name in names:
            try:
                check_options(name, dict(raw))
            except ConfigError as exc:
                raise self.fail("options", str(exc)) from None
        return dict(raw)

    def values(self, key: str, raw: Any) -> list[Any]:
        """A sweep axis: a non-empty list of scalars."""
        if not isinstance(raw, list) or not raw:
            raise self.fail(key, f"expected a non-empty list of values, got {raw!r}")
        if any(isinstance(v, (list, dict)) for v in raw):
            raise self.fail(key, "sweep values must be single values, not lists or mappings")
        return raw

    def replay(self, raw: Any) -> dict[str, Any]:
        """The replay: section: 'A:B', or a mapping of range (A:B), sparsifier and density (checked
        with each point's ReplayRequest)."""
        section = self.mapping({"range": raw} if isinstance(raw, str) else raw, self.replay_key, REPLAY_KEYS)
        if section.get("range") is None:
            raise self.fail(f"{self.replay_key}.range", "expected A:B (B exclusive), e.g. '0:50', as text, got None")
        return section

    def check_replay(self, names: list[str], options: dict[str, Any], trace: Path, points: list[Point]) -> None:
        """The range is in the trace; every SCHEME[+SPARSIFIER] item makes a method on every point's GPU count."""
        from zensim.sim.replay import replay_methods, replay_range
        from zensim.trace.gradients import TraceGradients

        with Trace.open(trace) as t:
            iterations, numel = TraceGradients(t).iterations, t.numel
        try:
            replay_range(points[0].replay, iterations)
        except ConfigError as exc:
            raise self.fail(self.replay_key, str(exc).removeprefix("--replay ")) from None
        for p in {p.cluster.gpus: p for p in points}.values():
            try:
                replay_methods(p.replay, p.cluster.gpus, numel, names, options)
            except ConfigError as exc:
                raise self.fail("schemes", str(exc)) from None

    def input_path(self, key: str, raw: Any) -> Path:
        """An input file, relative to the scenario's folder; it must exist."""
        if not isinstance(raw, str) or not raw:
            raise self.fail(key, f"expected a file path, got {raw!r}")
        path = Path(raw) if Path(raw).is_absolute() else self.base / raw
        if not path.is_file():
            raise self.fail(key, f"{path} not found")
        return path

    def point(self, base: dict[str, Any], values: dict[str, Any]) -> Point:
        """Validate and build one point from the base settings overridden by the swept values."""
        s = {**base, **values}

        def where(key: str) -> str:
            if key in values:
                return "model" if key == "model" and "model" not in self.sweep_keys else f"sweep.{key}"
            if self.training and key in TRAINING_DEFAULTS:
                return f"training.{key}"
            if self.replaying and key in REPLAY_KEYS:
                return f"{self.replay_key}.{key}"
            return f"cluster.{key}" if key in CLUSTER_DEFAULTS else "trace.iteration" if key == "iteration" else key

        kind = IterationRequest if self.training else ReplayRequest if self.replaying else SimulateRequest
        place = lambda key: f"{self.path}: {where(key)}"  # noqa: E731
        req = kind.from_mapping(s, place, lambda key, raw: self.input_path(where(key), raw))
        cluster, profile = req.build(place)
        if self.replaying:
            req.check_layout(cluster.gpus_per_machine, place)
        if self.training:
            req = req.one_point()
            if req.fusion_degree is None:  # a degree its strategy does not have
                values = {k: v for k, v in values.items() if k != "fusion_degree"}
        return Point(values, req, cluster, profile)

    def check_trace(self, trace: Path, points: list[Point]) -> None:
        """Every point fits the trace: enough workers for its GPUs, an iteration the trace has."""
        with Trace.open(trace) as t:
            workers, iterations = t.workers, t.iterations
        for p in points:
            if p.cluster.gpus > workers:
                raise self.fail(p.label() or "cluster", f"{p.cluster.gpus} GPUs but trace {trace} has {workers} workers")
            if p.iteration >= iterations:
                raise self.fail(p.label() or "trace.iteration",
                                f"iteration {p.iteration} but trace {trace} has iterations 0..{iterations - 1}")

    def outputs(self, out: dict[str, Any], swept: list[str], points: list[Point]) -> dict[str, Path]:
        """Output paths, relative ones under the output folder; checks the outputs fit the points."""
        for key, value in out.items():
            if not isinstance(value, str) or not value:
                raise self.fail(f"outputs.{key}", f"expected a file path, got {value!r}")
        for key in ("timeline", "links", "traffic", "link_plot"):
            if key in out and any(p.request.model == "analytic" for p in points):
                raise self.fail(f"outputs.{key}", "the analytic model has no timeline nor per-link figures "
                                "(use fifo or maxmin)")
        for key in ("timeline", "links", "traffic", "link_plot"):
            if key in out and self.replaying:
                raise self.fail(f"outputs.{key}", f"not with {self.replay_key}: (a replay writes json, csv and plot)")
        for key in ("links", "traffic", "link_plot"):
            if key in out and self.training:
                raise self.fail(f"outputs.{key}", "per-link figures are for synchronization scenarios, not for a "
                                "training: section")
        for key in ("links", "traffic"):
            if key in out:
                table_format(out[key], f"{self.path}: outputs.{key}")
        if "parquet" in out:  # before the run, as --parquet
            require_parquet(f"{self.path}: outputs.parquet")
        if "link_plot" in out and len(points) > 1:
            raise self.fail("outputs.link_plot", "one point only (a row of panels per scheme); for a sweep, write "
                            "outputs.links and outputs.traffic, or `zensim report --link-plot` a results file")
        if "plot" in out and len(points) > 1:
            try:
                fields = {f for _, f, _, _ in string.Formatter().parse(out["plot"]) if f is not None}
            except ValueError as exc:
                raise self.fail("outputs.plot", f"bad {{placeholder}} in {out['plot']!r} ({exc})") from None
            others = [k for k in swept if k not in self.x_keys(swept)]
            if fields != set(others):
                want = " ".join(f"{{{k}}}" for k in others) or "no placeholder"
                raise self.fail("outputs.plot", f"{out['plot']!r}: one plot per value of the other swept keys: "
                                f"the name needs {want}")
        return {k: Path(v) if Path(v).is_absolute() else self.out_dir / v for k, v in out.items()}

    def files(self, outputs: dict[str, Path], points: list[Point], x_keys: tuple[str, ...] | None,
              inputs: list[Path]) -> OutputFiles:
        """Every output path (each plot of a sweep) checked now, before any point runs: none is a
        folder, an input, or another output; the plot's extension is an image format."""
        files = OutputFiles(inputs=inputs, create_folders=True)
        for key, path in outputs.items():
            paths = {plot_file(path, p.values, x_keys) for p in points} if key == "plot" else {path}
            for one in sorted(paths):
                files.add(one, f"{self.path}: outputs.{key}", plot=key in ("plot", "link_plot"))
        return files


def plot_file(template: Path, values: dict[str, Any], x_keys: str | tuple[str, ...] | None) -> Path:
    """The plot file of the sweep point with swept `values` and x axis `x_keys` (a key, or the keys
    that set a throughput plot's GPU count): the template's {KEY} placeholders (the other swept keys)
    filled in. Without a sweep (x_keys None) the path as written."""
    if x_keys is None:
        return template
    along = (x_keys,) if isinstance(x_keys, str) else x_keys
    return Path(str(template).format_map({k: v for k, v in values.items() if k not in along}))
