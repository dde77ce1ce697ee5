"""The Python API of `zensim simulate`: trace x schemes x cluster x model -> one record per scheme."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from zensim.errors import ConfigError
from zensim.layout import (DENSE_BYTES, LAYOUTS, Prepared, dense_ring_log, load_chunks, place, prepare, prepare_trace,
                           stage_phases)
from zensim.memo import Memo
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.profile import Profile
from zensim.net.replay import replay
from zensim.net.topology import ClusterSpec
from zensim.report.provenance import provenance as make_provenance, trace_info
from zensim.report.record import RunRecord, Simulated
from zensim.run import MessageLog, Tables
from zensim.schemes import CATALOG, DISTINCT, build_scheme, needs_profile, scheme_names
from zensim.schemes import closed as analytic
from zensim.schemes.closed import measure
from zensim.sim.logcache import Driven, LogCache, driver_key
from zensim.sim.metrics import busiest_link, imbalances, stage_times, traffic_entries
from zensim.sparse.chunk import SparseChunk, sum_chunks
from zensim.trace.format import Trace, opened

DENSE = "dense-allreduce"


def all_models() -> tuple[str, ...]:
    """The sharing models registered now (zensim.net.models.MODELS), then 'analytic' (closed forms)."""
    return (*MODELS, "analytic")


def scheme_groups() -> dict[str, list[str]]:
    """The names that 'all', 'presets' and 'distinct' stand for, read from the registry now (so a
    scheme registered after import is among them)."""
    return {"all": scheme_names(), "presets": list(CATALOG), "distinct": [p.name for p in DISTINCT]}


def resolve_schemes(spec: str | Sequence[str]) -> list[str]:
    """'all' | 'presets' | 'distinct' | 'a,b,c' | a list -> scheme names, unknown ones a ConfigError."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    groups = scheme_groups()
    names: list[str] = []
    for item in (i.strip() for i in items):
        for name in groups.get(item, [item]):
            if name not in groups["all"]:
                raise ConfigError(f"--scheme: unknown scheme {name!r} (known: all, presets, distinct, "
                                  f"{', '.join(groups['all'])})")
            if name not in names:
                names.append(name)
    if not names:
        raise ConfigError("--scheme: no scheme given")
    return names


def with_profile(cluster: ClusterSpec, profile: Profile, keep: Sequence[str] = ()) -> ClusterSpec:
    """The cluster with the profile's link figures, except the fields named in `keep` (set explicitly)."""
    return replace(cluster, **{k: v for k, v in profile.links.items() if k not in keep})


def simulate(trace: str | Path | Trace, schemes: str | Sequence[str], costs: Costs | ClusterSpec, model: str = "fifo",
             *, iteration: int = 0, layout: str = "zen", maxmin_batch: float | None = None, options: dict | None = None,
             values: bool | None = None, progress: bool = False, provenance: dict[str, Any] | None = None,
             cache: LogCache | str | Path | None = None, baselines: Memo[float] | None = None,
             model_options: Mapping[str, object] | None = None) -> list[RunRecord]:
    """Simulate every scheme on one iteration of a trace (a path or an open Trace); records in the order
    of `schemes`.

    `options` go to every scheme (value_dtype, block_size, partitioner, pull, seed, ...: those its
    parts accept). `values`: carry values (the trace's, or synthetic ones) through the schemes; None
    = only when a scheme needs them (indices-only is the fast default).

    `costs`: the cluster and its cost knobs (zensim.net.costs.Costs; a bare ClusterSpec means default
    work costs and an ideal host; a host is a machine). With a calibration profile:
    `prof = load_profile(p); simulate(t, s, Costs.of(with_profile(cluster, prof), prof))`.
    `provenance`: what the records say made them (default: this zensim, called from Python).
    `cache`: a message-log cache (a LogCache or its folder): each scheme's driver runs once per trace,
    iteration, cluster shape, options and code version, whatever the links, latencies or model.
    `baselines`: the dense baselines of earlier calls, to reuse (see dense_baseline).
    `model_options`: the sharing model's options (those it declares, zensim.net.models; e.g. from
    `parse_model_options`), the dense baseline's too; `maxmin_batch` is maxmin's `batch` (a `batch` in
    `model_options` wins)."""
    if model not in all_models():
        raise ConfigError(f"--model: unknown model {model!r} (choose from {', '.join(all_models())})")
    if layout not in LAYOUTS:
        raise ConfigError(f"--layout: unknown layout {layout!r} (choose from {', '.join(LAYOUTS)})")
    names = resolve_schemes(schemes)
    options = dict(options or {})
    model_options = {**({} if maxmin_batch is None else {"batch": maxmin_batch}), **(model_options or {})}
    for name in names:  # every scheme accepts the options (one line naming it if not), before any work
        if not needs_profile(name):
            build_scheme(name, 2, 2, **options)
    if values is None:
        values = any(_needs_values(name, options) for name in names)
    costs = costs if isinstance(costs, Costs) else Costs(costs)
    cluster = costs.cluster
    with opened(trace) as source:
        numel = source.numel
        if model == "analytic":  # closed forms take every GPU's chunk
            chunks = load_chunks(source, iteration, cluster.gpus, values)
            prep = prepare(chunks, numel, cluster.machines, cluster.gpus_per_machine, layout)
        else:  # the layout's chunks only, read a machine at a time
            chunks = None
            prep = prepare_trace(source, iteration, cluster.machines, cluster.gpus_per_machine, layout, values)
        context = {"trace": trace_info(source, iteration), "cluster": cluster_info(costs),
                   "provenance": provenance if provenance is not None else make_provenance()}
    tables = Tables()
    if cache is not None and not isinstance(cache, LogCache):
        cache = LogCache(cache)
    records = []
    from tqdm import tqdm  # here, not at the top: the GPU machines have no tqdm and need not

    for name in tqdm(names, desc="simulate", unit="scheme", disable=None if progress else True, leave=False):
        records.append(_one(name, options, prep, chunks, costs, model, layout, model_options, tables,
                            {**context, "options": dict(options), "values": bool(values)}, cache))
    dense = dense_baseline(costs, numel, model, layout, memo=baselines, model_options=model_options)
    for rec in records:
        rec.vs_dense = rec.time_s / dense if rec.time_s is not None and dense else None
    return records


def dense_baseline(costs: Costs, numel: int, model: str, layout: str, memo: Memo[float] | None = None,
                   model_options: Mapping[str, object] | None = None) -> float:
    """Seconds of a dense ring all-reduce of `numel` fp32 elements on the cluster (the vs_dense reference):
    data-independent, so built from sizes (zensim.layout.dense_ring_log) and replayed, or its closed
    form under the analytic model. With `memo` (owned by the caller: a sweep over iterations, schemes
    or traces of one size) it is replayed once per costs, size, model, its options and layout."""
    model_options = dict(model_options or {})
    cluster, g = costs.cluster, costs.cluster.gpus_per_machine
    flat = layout == "flat" or g == 1
    if model == "analytic":
        n = cluster.gpus if flat else cluster.machines
        inter = analytic.dense_ring(analytic.SparsityStats(n, float(DENSE_BYTES * numel), 0.0), cluster.nic_bandwidth)
        return inter if flat else inter + 2 * (g - 1) / g * DENSE_BYTES * numel / cluster.nvlink_bandwidth
    placed = "flat" if flat else layout

    def seconds() -> float:
        log = dense_ring_log(cluster.machines, g, numel, placed)
        return replay(log, costs, model, options=model_options).makespan

    if memo is None:
        return seconds()
    return memo.get((repr(costs), numel, model, placed, repr(sorted(model_options.items()))), seconds)  # every field


def _needs_values(name: str, options: dict) -> bool:
    """Whether scheme `name` cannot run indices-only."""
    if needs_profile(name):
        return False
    return bool(build_scheme(name, 2, 2, **options).caps.needs_values)


def cluster_info(costs: Costs) -> dict[str, Any]:
    """The cluster block of a record: its description, every link parameter (bytes/s, seconds) and the
    cost knobs (local work: [kind, seconds per piece, seconds per element] rows, a list since kinds
    hold dots that a CSV column name would split, and where they come from; NIC and host efficiency by
    flows, host cores; None = ideal)."""
    c = costs
    spec = {k: v for k, v in asdict(c.cluster).items() if k != "fabric_options" or v}  # (only where given)
    return {"description": c.cluster.describe(), **spec,
            "costs": {"work": [[k, c.work.fixed.get(k, 0.0), v] for k, v in c.work.per_element.items()],
                      "host_cores": c.host_cores,
                      "work_source": c.work.source if c.measured_work is None else
                      f"the logs' measured step times x {c.measured_work:g}",
                      "nic_efficiency": c.nic_efficiency.to_json() if c.nic_efficiency else None,
                      "host_efficiency": c.host_efficiency.to_json() if c.host_efficiency else None,
                      "measured_work": c.measured_work}}


def log_digest(log: MessageLog) -> str:
    """SHA-256 (first 16 hex digits) of everything a message log holds: each message's stage, source,
    destination, bytes and format, and the local work. Two schemes with equal digests ran the same
    program on this input (zensim.report marks them so)."""
    digest = hashlib.sha256()
    for column in (log.stage, log.src, log.dst, log.nbytes, log.fmt, log.w_stage, log.w_rank, log.w_phase,
                   log.w_kind, log.w_elements, log.w_launches):
        digest.update(column.tobytes())
    digest.update("\0".join(log.fmt_names + ("",) + log.kind_names).encode())
    return digest.hexdigest()[:16]


def _one(name: str, options: dict, prep: Prepared, chunks: list[SparseChunk] | None, costs: Costs, model: str, layout: str,
         model_options: Mapping[str, object], tables: Tables, context: dict[str, Any], cache: LogCache | None) -> RunRecord:
    """Run one scheme through the driver (or take its log from the cache) and the chosen model."""
    start = time.perf_counter()
    cluster = costs.cluster
    gpus = cluster.gpus_per_machine

    def build(n: int, size: int, part: Sequence[SparseChunk]):
        return build_scheme(name, n, size, tables=tables, profile=part if needs_profile(name) else None, **options)

    def drive() -> Driven:
        placed = place(prep, build, tables)
        return Driven(placed.log, *imbalances(placed), sum(run.context.flushed for run in placed.runs),
                      stage_phases(placed))

    if cache is None:
        driven, cached = drive(), False
    else:
        key = driver_key(context["trace"]["sha256"], context["trace"]["iteration"], cluster.machines, gpus, layout,
                         context["values"], name, options)
        driven, cached = cache.get_or_run(key, drive)
    driver_s = time.perf_counter() - start
    timing = None
    program = build(len(prep.groups[0]), int(prep.sizes[0]), prep.groups[0])  # its capabilities
    if model == "analytic":
        seconds = _analytic(program.caps.closed_form, chunks, prep.numel, cluster, layout)
        link, util, stages, events, link_bytes, traffic = None, None, [], 0, [], []
    else:
        timing = replay(driven.log, costs, model, options=model_options)
        seconds = timing.makespan
        link, util = busiest_link(timing, costs.topology)
        stages, events = stage_times(timing), timing.events
        link_bytes, traffic = timing.link_bytes.round().astype(np.int64).tolist(), traffic_entries(timing.machine_bytes)
    return RunRecord(
        name, "simulated", model, layout if gpus > 1 else "flat", cluster.gpus, seconds, None,
        driven.log.bytes_sent().tolist(), driven.log.bytes_received().tolist(), driven.push, driven.pull,
        driven.recv, link, util, stages, wall_s=time.perf_counter() - start, program=log_digest(driven.log),
        values_flushed=driven.flushed, lossless=program.caps.lossless,
        simulated=Simulated(list(driven.phases), link_bytes, traffic, events, driver_s, cached, timing, driven.log),
        **context)


def _analytic(formula, chunks: list[SparseChunk], numel: int, cluster: ClusterSpec, layout: str) -> float | None:
    """The scheme's closed form (`formula`, a program's caps.closed_form) across endpoints; in ZEN's layout
    on machine sums plus the dense NVLink collectives (None when the scheme has no closed form)."""
    if formula is None:
        return None
    g = cluster.gpus_per_machine
    if layout == "flat" or g == 1:
        return formula(measure(chunks, numel), cluster.nic_bandwidth)
    machines = [sum_chunks(chunks[m * g:(m + 1) * g]) for m in range(cluster.machines)]
    inter = formula(measure(machines, numel), cluster.nic_bandwidth)
    return inter + 2 * (g - 1) / g * DENSE_BYTES * numel / cluster.nvlink_bandwidth
