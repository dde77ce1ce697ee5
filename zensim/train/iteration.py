"""The Python API of `zensim iteration`: profile x trace x scheme x cluster -> one record per scheme.

    from zensim.net.costs import Costs
    from zensim.net.topology import ClusterSpec
    from zensim.train.iteration import simulate_iteration
    from zensim.train.layers import load_layers
    costs = Costs(ClusterSpec.parse(16, 8, "25Gbps"))
    rec = simulate_iteration(load_layers("traces/layers/lstm-lm-b20.v100.layers.json"), "zen", costs,
                             trace="traces/lstm-lm-128w.zt", iterations=4)
    rec.iteration_s, rec.samples_per_s, rec.speedup_vs_dense, rec.buckets
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from zensim.errors import ConfigError
from zensim.layout import DENSE_SCHEMES, LAYOUTS
from zensim.memo import Memo
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.profile import WorkCost
from zensim.net.links import LinkKind
from zensim.report.iteration import SimulatedIterationRecord
from zensim.report.provenance import trace_info
from zensim.request import at_least
from zensim.schemes import build_scheme, needs_profile, scheme_names
from zensim.train.buckets import DDPBuckets
from zensim.train.layers import LayerProfile
from zensim.train.syncs import DENSE, SPARSE_BUCKETS, SyncLogs, bucket_syncs, sparse_tensors
from zensim.train.timeline import Run, Timeline
from zensim.train.tuner import check_dense_algorithm
from zensim.trace.format import Trace

MS = 1e3
DENSE_WORK = ("fused", "profile", "free")


def check_scheme(scheme: str, options: Mapping[str, object] | None) -> bool:
    """ConfigError unless `scheme` is known and accepts `options`; whether it needs values."""
    if scheme not in scheme_names():
        raise ConfigError(f"--scheme: unknown scheme {scheme!r} (see `zensim schemes`)")
    if needs_profile(scheme):
        return False
    return bool(build_scheme(scheme, 2, 2, **dict(options or {})).caps.needs_values)


def simulate_iteration(profile: LayerProfile, scheme: str, costs: Costs, *, trace: str | Path | Trace | None = None,
                       model: str = "fifo", layout: str = "zen", bucketing=None, sparse_buckets: str = "own",
                       sparse: Sequence[str] | None = None, iterations: int = 1, first_iteration: int = 0,
                       options: Mapping[str, object] | None = None, model_options: Mapping[str, object] | None = None,
                       dense_baseline: bool = True, dense: "SimulatedIterationRecord | None" = None,
                       dense_work: str = "fused", shared_host: bool = False, strategy=None,
                       background=None, logs: SyncLogs | None = None, dense_algorithm: str = "auto",
                       dense_above: float | None = None,
                       dense_times: Memo[dict[str, float]] | None = None,
                       hook_run_s: float = 0.0) -> SimulatedIterationRecord:
    """Simulate `iterations` training iterations of `profile` with `scheme` on `costs.cluster`.

    The trace's tensors are synchronized sparse by `scheme` (those named in `sparse`, or all), every
    other parameter dense (zensim.train.syncs); iteration i uses trace iteration first_iteration + i
    (cycling). `bucketing`: a strategy of zensim.train.buckets (DDP's defaults if None). The dense DDP
    baseline (every tensor dense, same bucketing) gives `speedup_vs_dense`; pass `dense` to reuse one.
    `dense_work`: "fused" prices a dense collective (a dense all-reduce, an intra-machine ring) as one
    fused kernel, NCCL's: its work per element and one launch per rank (the profile's fixed cost once,
    not per piece: zensim.run.log.MessageLog.fused, as the simulator's dense reference), "profile"
    every piece a launch, as a scheme's work, "free" none (a CPU collective's sums next to a slow network). `shared_host`: every GPU is a
    process of one host whose `costs.host_cores` processors run all compute and local work (the
    emulator's ranks training on its CPUs). `strategy`: a fusion strategy (zensim.train.fusion.schedule)
    decides the buckets, the selection of a dense trace's gradients and its compression instead of
    `bucketing` and `sparse_buckets`; the dense baseline then has DDP's default buckets. `background`:
    a client of the run's network called as each GPU begins an iteration (zensim.train.timeline,
    e.g. zensim.train.gemini's checkpoint traffic); the dense baseline runs without it. `logs`: the
    SyncLogs of an earlier call with the same trace (pass it open: a trace given by path is closed on
    return), scheme, layout, options and cluster shape (another bandwidth or latency): its message logs,
    which depend on neither, are reused. `dense_algorithm`: the dense all-reduce of every dense part, in
    this run and its dense baseline alike: "auto" the fastest for the part's size (zensim.train.tuner),
    "ring" or "doubling" forced. `sparse_buckets` "fused" synchronizes every bucket as `zensim_hook` does
    (the scheme's run on the whole bucket, dense members included); `dense_above` then all-reduces a
    bucket densely in an iteration where its previous sum was denser, as the hook's `dense_above`.
    `dense_times`: the dense algorithms' times alone of earlier calls on the same costs, to reuse (a
    memo of zensim.train.tuner; by default this call's own, shared by its timelines and its dense baseline).
    `hook_run_s` (with `sparse_buckets` "fused"): zensim_hook's host seconds in the scheme's run outside
    its stages, for each bucket the scheme synchronizes (zensim.train.timeline; measured for a scheme and
    rank count by benchmarks/hook_run_overhead.py)."""
    if model not in MODELS:
        raise ConfigError(f"--model: unknown sharing model {model!r} (choose from {', '.join(MODELS)})")
    if layout not in LAYOUTS:
        raise ConfigError(f"--layout: unknown layout {layout!r} (choose from {', '.join(LAYOUTS)})")
    if sparse_buckets not in SPARSE_BUCKETS:
        raise ConfigError(f"--sparse-buckets {sparse_buckets}: choose from {', '.join(SPARSE_BUCKETS)}")
    at_least("--iterations", iterations, 1)
    if dense_work not in DENSE_WORK:
        raise ConfigError(f"--dense-work {dense_work}: choose from {', '.join(DENSE_WORK)}")
    check_dense_algorithm(dense_algorithm)
    if dense_above is not None and not 0.0 <= dense_above <= 1.0:
        raise ConfigError(f"--dense-above {dense_above}: must be in [0, 1]")
    if dense_above is not None and (sparse_buckets != "fused" or strategy is not None):
        raise ConfigError("--dense-above: only with --sparse-buckets fused (the buckets of zensim_hook)")
    if not 0.0 <= hook_run_s < float("inf"):
        raise ConfigError(f"--hook-run-s {hook_run_s}: must be seconds >= 0")
    if hook_run_s and (sparse_buckets != "fused" or strategy is not None):
        raise ConfigError("--hook-run-s: only with --sparse-buckets fused (the buckets of zensim_hook)")
    values = check_scheme(scheme, options)
    if strategy is not None and bucketing is not None:
        raise ConfigError("--bucketing: not with a fusion strategy (the strategy decides the buckets)")
    bucketing = bucketing or DDPBuckets()
    opened = Trace.open(trace) if isinstance(trace, (str, Path)) else trace
    try:
        if opened is not None and not 0 <= first_iteration < opened.iterations:
            raise ConfigError(f"--iteration {first_iteration}: trace {opened.path} has iterations "
                              f"0..{opened.iterations - 1}")
        chosen = sparse_tensors(profile, opened, scheme, sparse)
        own = chosen if sparse_buckets == "own" else set()
        if logs is None:
            logs = SyncLogs(costs.cluster, layout, scheme, opened, options, values,
                            strategy.selection if strategy is not None else None)
        elif not logs.fits(costs.cluster, layout, scheme, opened, options, values):
            raise ConfigError(f"logs of {logs.scheme} on {logs.cluster.describe()} reused for {scheme} on "
                              f"{costs.cluster.describe()}: not the same synchronization")
        t_iters = [(first_iteration + i) % opened.iterations for i in range(iterations)] if opened else [0]
        dense_cost = {"fused": None, "profile": replace(costs.work, per_piece=True), "free": WorkCost.zero()}
        hosts = [0] * costs.cluster.gpus if shared_host else None

        hooked = sparse_buckets == "fused" and scheme != DENSE
        dense_times = dense_times if dense_times is not None else Memo()

        def timeline(syncs: list, prof: LayerProfile = profile, n: int = iterations) -> Timeline:
            return Timeline(prof, syncs, logs, costs, model, n, t_iters, model_options, dense_cost[dense_work], hosts,
                            dense_algorithm=dense_algorithm, dense_above=dense_above if hooked else None,
                            dense_times=dense_times, hook_run_s=hook_run_s if hooked else 0.0)

        if strategy is None:
            syncs = bucket_syncs(profile, bucketing.assign(profile.params, own), chosen, carry=hooked)
        else:
            syncs = strategy.syncs(profile, chosen, logs, timeline)
        main = timeline(syncs)
        main.on_iteration = background
        run = main.run()
        trace_block = trace_info(opened, first_iteration) if opened is not None and chosen else None
    finally:
        if opened is not None and opened is not trace:
            opened.close()
    rec = _record(profile, scheme, costs, layout if costs.cluster.gpus_per_machine > 1 else "flat", model,
                  strategy.describe() if strategy is not None else bucketing.describe(), syncs, run)
    rec.inputs = {"layers": {"workload": profile.workload, "kind": profile.kind, "device": profile.device,
                             "source": profile.source}, "trace": trace_block}
    if strategy is not None:
        rec.strategy = strategy.summary(syncs, logs)
    if scheme != DENSE and dense_baseline and dense is None:
        dense = simulate_iteration(profile, DENSE, costs, model=model, layout=layout, bucketing=bucketing,
                                   iterations=iterations, model_options=model_options, dense_baseline=False,
                                   dense_work=dense_work, shared_host=shared_host, dense_algorithm=dense_algorithm,
                                   dense_times=dense_times)
    if scheme == DENSE:
        dense = rec
    if dense is not None:
        rec.dense_iteration_s = dense.iteration_s
        rec.speedup_vs_dense = dense.iteration_s / rec.iteration_s if rec.iteration_s > 0 else None
    return rec


def iteration_records(profile: LayerProfile, schemes: Sequence[str], costs: Costs, *,
                      dense: SimulatedIterationRecord | None = None, done=None, **kw) -> list[SimulatedIterationRecord]:
    """Dense DDP (the baseline: `dense`, or simulated here with kw's bucketing) and every other scheme of
    `schemes`, in that order, each with its speedup over the baseline; `kw` as simulate_iteration's;
    `done()` is called after each record (a progress bar). The runs share one memo of dense times
    (`dense_times`: kw's, or this call's own)."""
    kw.setdefault("dense_times", Memo())
    if dense is None:
        base = {k: v for k, v in kw.items() if k not in ("trace", "sparse_buckets", "sparse", "first_iteration",
                                                          "options", "dense_above", "hook_run_s")}
        dense = simulate_iteration(profile, DENSE, costs, **base)
        if done:
            done()
    records = [dense]
    for name in schemes:
        if name != DENSE:
            records.append(simulate_iteration(profile, name, costs, dense=dense, **kw))
            if done:
                done()
    return records


def _label(scheme: str, part, run: Run) -> str:
    """A part as the buckets table names it: 'zen(3, 2 dense)', 'dense-allreduce(4)'."""
    name = scheme if part.sparse else DENSE_SCHEMES[run.dense_algorithms[part.numel]]
    return f"{name}({len(part.names)}{f', {len(part.dense)} dense' if part.dense else ''})"


def _record(profile: LayerProfile, scheme: str, costs: Costs, layout: str, model: str, bucketing: str,
            syncs: list, run: Run) -> SimulatedIterationRecord:
    """Figures of a run: iteration times, exposed communication, throughput, buckets, links."""
    cluster = costs.cluster
    ends = run.iteration_end.max(axis=1)
    times = np.diff(np.concatenate([[0.0], ends]))
    iteration_s = float(ends[-1] / len(ends))
    batch = profile.batch_size
    global_batch = batch * cluster.gpus if batch else None
    def span(x: np.ndarray) -> float:
        """Of an (iteration, GPU) array of times: ms after each GPU's backward start, the latest GPU,
        mean over iterations."""
        return float((x - run.backward_start).max(axis=1).mean()) * MS

    buckets = []
    for b, sync in enumerate(syncs):
        sync_ms = float((run.bucket_end[:, b] - run.bucket_start[:, b]).max(axis=1).mean()) * MS
        parts = " + ".join(_label(scheme, p, run) for p in sync.parts)
        dense = int(run.densely[:, b].sum())
        if dense:
            parts = (" + ".join(_label(scheme, p.densely(), run) for p in sync.parts)
                     + ("" if dense == len(ends) else f" ({dense} of {len(ends)} iterations; else {parts})"))
        buckets.append({"bucket": b, "params": len(sync.bucket.names), "first": sync.bucket.names[0],
                        "last": sync.bucket.names[-1], "bytes": sync.bucket.nbytes, "sync": parts,
                        "ready_ms": span(run.bucket_ready[:, b]), "start_ms": span(run.bucket_start[:, b]),
                        "end_ms": span(run.bucket_end[:, b]), "sync_ms": sync_ms})
    net = run.network
    count = net.count
    routes, nbytes = net.routes[:count], net.nbytes[:count]
    links = net.num_links
    link_bytes = np.bincount(routes.ravel(), weights=np.repeat(nbytes, routes.shape[1]), minlength=links + 1)[:links]
    busy = link_bytes / net.capacity
    k = int(busy.argmax()) if links else 0
    makespan = run.makespan
    nic_bytes = float(link_bytes[net.topology.links_of_kind(LinkKind.NIC)].sum()) / 2 if links else 0.0
    return SimulatedIterationRecord(
        scheme, cluster.describe(), cluster.machines, cluster.gpus, layout, model, bucketing, profile.device,
        profile.kind, batch, global_batch, len(ends), iteration_s, times.tolist(), profile.compute_s,
        iteration_s - profile.compute_s, global_batch / iteration_s if global_batch and iteration_s > 0 else None,
        None, None, nic_bytes / len(ends), net.topology.names[k] if links else "-",
        float(busy[k] / makespan) if links and makespan > 0 else 0.0, buckets, run.events, run.wall_s,
        compression_s=float(run.compression.max(axis=1).mean()), run=run)
