"""Reports of simulated training iterations: tables, a Chrome trace with compute / compression /
communication tracks per GPU and link counters, and throughput against the GPU count per scheme."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from zensim.errors import ConfigError
from zensim.net.links import LinkKind
from zensim.report.table import footnotes, format_table

MS, US = 1e3, 1e6
ITERATION_SCHEMA = "zensim-iterations/1"  # a scenario's iteration records ({"schema", "records": [...]})


@dataclass
class SimulatedIterationRecord:
    """One scheme's simulated training iterations on one cluster (zensim.train.iteration.simulate_iteration):
    times (s), throughput, per-bucket spans (ms)."""

    scheme: str
    cluster: str
    machines: int
    gpus: int
    layout: str
    model: str
    bucketing: str
    device: str
    profile_kind: str
    batch_per_gpu: int | None
    global_batch: int | None
    iterations: int
    iteration_s: float
    iteration_times_s: list[float]
    compute_s: float
    exposed_comm_s: float
    samples_per_s: float | None
    speedup_vs_dense: float | None
    dense_iteration_s: float | None
    nic_bytes_per_iteration: float  # bytes crossing machine boundaries (each message once)
    busiest_link: str
    busiest_link_util: float
    buckets: list[dict]
    events: int
    wall_s: float
    inputs: dict = field(default_factory=dict)  # the trace (path, sha256, first iteration) and the layer profile
    provenance: dict = field(default_factory=dict)  # zensim, commit, command, created (zensim.report.provenance)
    compression_s: float = 0.0  # per iteration, a fusion strategy's selection on the compute stream
    strategy: dict = field(default_factory=dict)  # the fusion strategy (zensim.train.fusion.schedule), if any
    point: int | None = None  # in a scenario's sweep: the point's index
    sweep: dict = field(default_factory=dict)  # in a sweep: each swept key with its value as written
    run: Any = field(default=None, repr=False)  # the simulated timeline (zensim.train.timeline.Run), not saved

    def to_dict(self) -> dict:
        """JSON-ready fields (the raw run left out)."""
        out = asdict(replace(self, run=None))
        del out["run"]
        return out

def iteration_records_of(doc: Any, where: str) -> list[Any] | None:
    """The training-iteration records (SimulatedIterationRecord) of a parsed JSON document:
    a zensim-iterations/1 document (a scenario's or sweep's json output) or the array that
    `zensim iteration --json` prints; None when it is neither; ConfigError naming `where` and the record
    when a record is not one."""
    if isinstance(doc, dict) and doc.get("schema") == ITERATION_SCHEMA:
        raw = doc.get("records")
        if not isinstance(raw, list) or not raw:
            raise ConfigError(f"{where}: {ITERATION_SCHEMA} document without records")
    elif isinstance(doc, list) and doc and all(isinstance(r, dict) and "iteration_s" in r for r in doc):
        raw = doc
    else:
        return None
    records = []
    for i, r in enumerate(raw):
        try:
            records.append(SimulatedIterationRecord(**{k: v for k, v in r.items() if k != "run"}))
        except TypeError as exc:
            raise ConfigError(f"{where}: record {i} is not an iteration record ({exc})") from None
    return records


# what a column means (zensim.report.table.footnotes), printed under the iteration table
DEFINITIONS = {
    "iteration ms": "one training iteration's time on the simulated timeline (mean over the iterations)",
    "compute ms": "forward + backward + optimizer of the layer profile: the iteration with free communication",
    "exposed ms": "iteration - compute: the communication the backward pass does not hide",
    "samples/s": "the whole cluster's training throughput (global batch / iteration)",
    "vs dense": "samples/s / dense DDP's samples/s on the same cluster (> 1: faster than dense)",
    "NIC MB/it": "MB crossing machine boundaries per iteration (each message once)",
    "buckets": "DDP gradient buckets synchronized per iteration",
    "util": "the busiest link's bytes / (its capacity x the run's time)",
    "degree/MiB": "the fusion strategy's degree (0: every tensor its own bucket .. 1: one bucket) or bucket cap (MiB)",
    "compress ms": "the fusion strategy's selection time on the compute stream per iteration",
    "missing": "the tensor missing rate: tensors with no element selected / all tensors",
}


def iteration_table(records: Sequence[Any]) -> str:
    """One row per record: iteration, compute and exposed communication (ms), samples/s, speedup; with
    fusion strategies also each one's fusion degree, compression (ms) and tensor missing rate; in a
    scenario's sweep the swept values first; the columns defined below it."""

    strategies = any(r.strategy for r in records)
    rows = [[r.scheme, r.gpus, r.iteration_s * MS, r.compute_s * MS, r.exposed_comm_s * MS, r.samples_per_s,
             r.speedup_vs_dense, r.nic_bytes_per_iteration / 1e6, len(r.buckets), r.busiest_link, r.busiest_link_util]
            for r in records]
    head = ["scheme", "GPUs", "iteration ms", "compute ms", "exposed ms", "samples/s", "vs dense", "NIC MB/it",
            "buckets", "busiest link", "util"]
    if strategies:
        for row, r in zip(rows, records):
            st = r.strategy
            degree = st.get("degree") if st.get("degree") is not None else st.get("bucket_mb")
            row[1:1] = [st.get("name", "-"), "-" if degree is None else degree, r.compression_s * MS,
                        st.get("missing_rate")]
        head[1:1] = ["strategy", "degree/MiB", "compress ms", "missing"]
    swept = list(dict.fromkeys(k for r in records for k in r.sweep))
    if swept:  # a scenario's sweep: its values first
        rows = [[r.sweep.get(k, "-") for k in swept] + row for row, r in zip(rows, records)]
        head = swept + head
    title = ""
    if records:
        r = records[0]
        buckets = "" if strategies or len({x.bucketing for x in records}) > 1 else f"{r.bucketing}, "
        title = (f"{r.device} ({r.profile_kind}), batch {r.batch_per_gpu}/GPU, {buckets}layout {r.layout}, "
                 f"model {r.model}, {r.iterations} iterations\n")
    return title + format_table(rows, head) + footnotes(head, DEFINITIONS)


def iteration_rows(records: Sequence[Any]) -> list[dict[str, Any]]:
    """CSV rows of records: their fields without the buckets, the fusion strategy as `strategy.*` and a
    sweep's values as `sweep.*` columns."""
    from zensim.report.record import flatten

    return [{k: v for k, v in r.to_dict().items() if k not in ("buckets", "strategy", "sweep")}
            | {f"strategy.{k}": v for k, v in flatten(r.strategy).items()}
            | {f"sweep.{k}": v for k, v in r.sweep.items()} for r in records]


def bucket_table(record: Any) -> str:
    """Per bucket: members, bytes, synchronization, and when it was ready, started and ended (ms after
    backward started; the latest GPU, mean over iterations)."""
    rows = [[b["bucket"], b["params"], f"{b['first']} .. {b['last']}" if b["params"] > 1 else b["first"],
             b["bytes"] / 2**20, b["sync"], b["ready_ms"], b["start_ms"], b["end_ms"], b["sync_ms"]]
            for b in record.buckets]
    return (f"{record.scheme} on {record.cluster}: buckets\n"
            + format_table(rows, ["bucket", "params", "members", "MiB", "synchronization", "ready ms", "start ms",
                                  "end ms", "sync ms"]))


def _span(name: str, pid: int, tid: int, start: float, end: float, **args: Any) -> dict[str, Any]:
    return {"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": start * US, "dur": max(end - start, 0.0) * US,
            "args": args}


def iteration_events(pid: int, label: str, record: Any, gpus: Sequence[int], bins: int = 400) -> list[dict[str, Any]]:
    """Trace events of one record: per GPU in `gpus` a compute, a compression and a communication track;
    NIC link counters (Gbit/s, averaged over `bins` intervals of the run)."""
    run = record.run
    events: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": label}}]
    for g in gpus:
        tracks = {"compute": 3 * g, "compression": 3 * g + 1, "communication": 3 * g + 2}
        for what, tid in tracks.items():
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": f"GPU {g} {what}"}})
        for i in range(run.iteration_start.shape[0]):
            events.append(_span("forward", pid, tracks["compute"], run.iteration_start[i, g], run.backward_start[i, g],
                                iteration=i))
            events.append(_span("backward", pid, tracks["compute"], run.backward_start[i, g], run.backward_end[i, g],
                                iteration=i))
            events.append(_span("optimizer", pid, tracks["compute"], run.optimizer_start[i, g], run.iteration_end[i, g],
                                iteration=i))
            for b, info in enumerate(record.buckets):
                events.append(_span(f"bucket {b}", pid, tracks["communication"], run.bucket_start[i, b, g],
                                    run.bucket_end[i, b, g], iteration=i, bytes=info["bytes"], sync=info["sync"],
                                    ready_s=float(run.bucket_ready[i, b, g])))
        for (i, b, k), client in run.clients.items():
            pre, post, stages = client.arrays["pre"], client.arrays["post"], client.stages
            for s in range(stages):
                p, q = pre[g * stages + s], post[g * stages + s]
                if p > 0:
                    events.append(_span("compress", pid, tracks["compression"], client.stage_start[g, s],
                                        client.stage_start[g, s] + p, iteration=i, bucket=b, part=k, stage=s))
                if q > 0:
                    events.append(_span("decompress", pid, tracks["compression"], client.stage_end[g, s] - q,
                                        client.stage_end[g, s], iteration=i, bucket=b, part=k, stage=s))
    events += link_counters(pid, run.network, run.makespan, bins)
    return events


def link_counters(pid: int, net: Any, makespan: float, bins: int) -> list[dict[str, Any]]:
    """Counter events of every NIC link: Gbit/s carried, averaged over `bins` equal intervals of the run
    (a message's bytes spread evenly over its time in the network)."""
    if makespan <= 0 or net.count == 0:
        return []
    count = net.count
    start, end = net.sent_at[:count], net.delivered_at[:count]
    nbytes, routes = net.nbytes[:count], net.routes[:count]
    edges = np.linspace(0.0, makespan, bins + 1)
    out = []
    for k in net.topology.links_of_kind(LinkKind.NIC).tolist():
        on = (routes == k).any(axis=1)
        if not on.any():
            continue
        s, e, b = start[on], end[on], nbytes[on]
        rate = b / np.maximum(e - s, 1e-15)
        # bytes carried before each edge: a message contributes rate x its overlap with [0, edge]
        carried = np.array([(rate * np.clip(np.minimum(e, x) - s, 0, None)).sum() for x in edges])
        gbps = np.diff(carried) / np.diff(edges) * 8 / 1e9
        name = net.topology.names[k]
        out += [{"name": name, "ph": "C", "pid": pid, "ts": t * US, "args": {"Gbit/s": float(v)}}
                for t, v in zip(edges[:-1], gbps)]
    return out


def iteration_trace(records: Sequence[Any], gpus: int | None = None) -> dict[str, Any]:
    """The Chrome trace document of several records (one process each), GPUs 0 .. gpus-1 shown
    (default: those of the first machine)."""
    events = []
    for pid, r in enumerate(records):
        shown = range(min(gpus or r.run.iteration_start.shape[1] // max(r.machines, 1), r.gpus))
        events += iteration_events(pid, f"{r.scheme} @ {r.cluster}", r, shown)
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def throughput_figure(records: Sequence[Any], title: str = "") -> Any:
    """Samples/s against the GPU count (log2 axis ticked at the counts run), one line per scheme, and each
    scheme's speedup over dense DDP beside it; the legend below the panels, off the lines."""
    import matplotlib.pyplot as plt

    from zensim.report.plots import gpu_axis, series_styles

    schemes = list(dict.fromkeys(r.scheme for r in records))
    fig, (ax, ax_s) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, (colour, marker) in zip(schemes, series_styles(len(schemes))):
        mine = sorted((r.gpus, r.samples_per_s, r.speedup_vs_dense) for r in records if r.scheme == name)
        ax.plot([g for g, _, _ in mine], [v for _, v, _ in mine], color=colour, marker=marker, label=name)
        ax_s.plot([g for g, _, _ in mine], [s for _, _, s in mine], color=colour, marker=marker, label=name)
    for a, ylabel in ((ax, "samples / s (the whole cluster's training throughput)"),
                      (ax_s, "speedup: samples/s / dense DDP's samples/s")):
        gpu_axis(a, sorted({r.gpus for r in records}))
        a.set_ylabel(ylabel)
    ax_s.axhline(1.0, color="black", lw=1, ls="--")
    fig.legend(*ax.get_legend_handles_labels(), fontsize=7, ncol=min(6, max(1, len(schemes))), loc="upper center",
               bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title, fontsize=9)
    return fig
