"""The Python API of `zensim simulate`: trace x schemes x cluster x model -> one record per scheme."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from tqdm import tqdm

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.profile import Profile
from zensim.net.replay import Timing, replay
from zensim.net.topology import ClusterSpec
from zensim.schemes.log import MessageLog
from zensim.schemes.presets import AUTO, PRESETS, build_scheme, scheme_names
from zensim.schemes.space import DISTINCT
from zensim.sim.closed import closed_form, measure
from zensim.sim.layout import DENSE_BYTES, LAYOUTS, Prepared, place, prepare
from zensim.sim.metrics import busiest_link, push_pull_imbalance, stage_times
from zensim.sparse.chunk import SparseChunk, sum_chunks
from zensim.trace.format import Trace

ALL_MODELS = (*MODELS, "analytic")
DENSE = "dense-allreduce"
GROUPS = {"all": scheme_names(), "presets": list(PRESETS) + [AUTO], "distinct": [p.name for p in DISTINCT]}


@dataclass
class SimRecord:
    """One scheme on one cluster under one model: times (s), bytes per rank, balance, links, stages."""

    scheme: str
    model: str
    layout: str
    cluster: str
    gpus: int
    time_s: float | None
    vs_dense: float | None
    bytes_sent: list[int]
    bytes_received: list[int]
    push_imbalance: float | None
    pull_imbalance: float | None
    busiest_link: str | None
    busiest_link_util: float | None
    stage_times_s: list[float]
    events: int
    wall_s: float
    timing: Timing | None = field(default=None, repr=False)
    log: MessageLog | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        """JSON-ready fields (the raw timing and message log are left out)."""
        out = asdict(replace(self, timing=None, log=None))
        del out["timing"], out["log"]
        return out


def resolve_schemes(spec: str | Sequence[str]) -> list[str]:
    """'all' | 'presets' | 'distinct' | 'a,b,c' | a list -> scheme names, unknown ones a ConfigError."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    names: list[str] = []
    for item in (i.strip() for i in items):
        for name in GROUPS.get(item, [item]):
            if name not in GROUPS["all"]:
                raise ConfigError(f"--scheme: unknown scheme {name!r} (known: all, presets, distinct, "
                                  f"{', '.join(GROUPS['all'])})")
            if name not in names:
                names.append(name)
    if not names:
        raise ConfigError("--scheme: no scheme given")
    return names


def with_profile(cluster: ClusterSpec, profile: Profile, keep: Sequence[str] = ()) -> ClusterSpec:
    """The cluster with the profile's link figures, except the fields named in `keep` (set explicitly)."""
    return replace(cluster, **{k: v for k, v in profile.links.items() if k not in keep})


def load_chunks(trace: Trace, iteration: int, gpus: int) -> list[SparseChunk]:
    """The first `gpus` workers' flat index sets at `iteration` (indices-only chunks)."""
    if trace.workers < gpus:
        raise ConfigError(f"{trace.path}: trace has {trace.workers} workers, the cluster asks for {gpus} GPUs")
    if not 0 <= iteration < trace.iterations:
        raise ConfigError(f"--iteration {iteration}: trace {trace.path} has iterations 0..{trace.iterations - 1}")
    return [SparseChunk(trace.flat_indices(iteration, w), None) for w in range(gpus)]


def simulate(trace_path: str | Path, schemes: str | Sequence[str], costs: Costs | ClusterSpec, model: str = "fifo", *,
             iteration: int = 0, layout: str = "zen", maxmin_batch: float = 1 / 64,
             progress: bool = False) -> list[SimRecord]:
    """Simulate every scheme on one iteration of a trace; records in the order of `schemes`.

    `costs`: the cluster and its cost knobs (zensim.net.costs.Costs; a bare ClusterSpec means default
    work costs and an ideal host; a host is a machine). With a calibration profile:
    `prof = load_profile(p); simulate(t, s, Costs.of(with_profile(cluster, prof), prof))`."""
    if model not in ALL_MODELS:
        raise ConfigError(f"--model: unknown model {model!r} (choose from {', '.join(ALL_MODELS)})")
    if layout not in LAYOUTS:
        raise ConfigError(f"--layout: unknown layout {layout!r} (choose from {', '.join(LAYOUTS)})")
    names = resolve_schemes(schemes)
    costs = costs if isinstance(costs, Costs) else Costs(costs)
    cluster = costs.cluster
    with Trace.open(trace_path) as trace:
        chunks = load_chunks(trace, iteration, cluster.gpus)
        numel = trace.numel
    prep = prepare(chunks, numel, cluster.machines, cluster.gpus_per_machine, layout)
    runs = names if DENSE in names else [DENSE] + names
    records: dict[str, SimRecord] = {}
    for name in tqdm(runs, desc="simulate", unit="scheme", disable=None if progress else True, leave=False):
        records[name] = _one(name, prep, chunks, costs, model, layout, maxmin_batch)
    dense = records[DENSE].time_s
    for rec in records.values():
        rec.vs_dense = rec.time_s / dense if rec.time_s is not None and dense else None
    return [records[name] for name in names]


def _one(name: str, prep: Prepared, chunks: list[SparseChunk], costs: Costs, model: str, layout: str,
         maxmin_batch: float) -> SimRecord:
    """Run one scheme through the driver and the chosen model."""
    start = time.perf_counter()
    cluster = costs.cluster
    numel = prep.numel
    gpus = cluster.gpus_per_machine

    def build(n: int, size: int, part: Sequence[SparseChunk]):
        return build_scheme(name, n, size, profile=part if name == AUTO else None)

    placed = place(prep, build)
    pushes, pulls = zip(*(push_pull_imbalance(lg, p.step2_start) for lg, p in zip(placed.groups, placed.programs)))
    timing = None
    if model == "analytic":
        seconds = _analytic(name, chunks, numel, cluster, layout)
        link, util, stages, events = None, None, [], 0
    else:
        timing = replay(placed.log, costs, model, options={"batch": maxmin_batch})
        seconds = timing.makespan
        link, util = busiest_link(timing, costs.topology)
        stages, events = stage_times(timing), timing.events
    return SimRecord(name, model, layout if gpus > 1 else "flat", cluster.describe(), cluster.gpus, seconds, None,
                     placed.log.bytes_sent().tolist(), placed.log.bytes_received().tolist(),
                     _worst(pushes), _worst(pulls), link, util, stages, events, time.perf_counter() - start, timing, placed.log)


def _worst(values: Sequence[float | None]) -> float | None:
    """The largest of the defined values (None if none is)."""
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _analytic(name: str, chunks: list[SparseChunk], numel: int, cluster: ClusterSpec, layout: str) -> float | None:
    """Closed form across endpoints; in ZEN's layout on machine sums plus the dense NVLink collectives."""
    g = cluster.gpus_per_machine
    if layout == "flat" or g == 1:
        return closed_form(name, measure(chunks, numel), cluster.nic_bandwidth)
    machines = [sum_chunks(chunks[m * g:(m + 1) * g]) for m in range(cluster.machines)]
    inter = closed_form(name, measure(machines, numel), cluster.nic_bandwidth)
    if inter is None:
        return None
    return inter + 2 * (g - 1) / g * DENSE_BYTES * numel / cluster.nvlink_bandwidth
