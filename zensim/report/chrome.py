"""Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one process per run of a scheme, one
track per rank, named phases, local work apart from transfer, an arrow per message, link-utilization
counters.

Each rank's stages are complete events (`ph: "X"`, microseconds) named by their phase (`intra-machine
reduce-scatter`, `push`, `pull`, `intra-machine all-gather`; `stage s` when the phases are not
known), with the stage, its bytes sent and received in `args`. Inside each stage, nested spans split
the time: `local work` before the sends (pre work: partitioning, encoding), `transfer` (from the
sends' injection to the last of the stage's messages delivered), `local work` after (post work:
decoding, merging). Every message is a flow from its sender to its receiver (`ph: "s"` on the sender's
track at its injection, inside the sender's transfer span; `ph: "f"`, `bp: "e"`, on the receiver's
track at its delivery, bound to the span it arrives in: the message's stage, or an earlier one the
receiver is still in), so Perfetto draws an arrow per message. With a
topology, a second process per run holds one counter track per link that
carried bytes (`ph: "C"`): its utilization in `bins` equal time bins, each message's bytes spread
evenly over its life on every link of its route (injection to delivery: a mean rate, exact in bytes
per bin only where a message's rate was constant).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zensim.net.replay import Timing
from zensim.net.fabrics import build_topology
from zensim.net.links import Topology
from zensim.report.record import RunRecord
from zensim.run.log import MessageLog

US = 1e6
BINS = 200


@dataclass
class Track:
    """One run of a scheme to draw: its label, timing and message log, the phase of each stage (empty:
    unknown) and its topology (None: no link counters)."""

    label: str
    timing: Timing
    log: MessageLog
    phases: Sequence[str] = ()
    topology: Topology | None = None


def track_of(rec: RunRecord, label: str | None = None) -> Track:
    """The track of a simulated record that kept its timing and log (label: default the scheme), with
    its phases and its cluster's topology (for the link counters)."""
    from zensim.report.links import cluster_spec

    return Track(label or rec.scheme, rec.simulated.timing, rec.simulated.log, rec.simulated.stage_phases,
                 build_topology(cluster_spec(rec)))


def timeline_events(pid: int, track: Track) -> list[dict[str, Any]]:
    """Trace events of one run: a named process `pid`, one named thread per rank, per stage a span named
    by its phase with its local work and transfer as nested spans."""
    timing, log = track.timing, track.log
    cols = log.arrays()
    slot = log.num_stages
    sent = np.bincount(cols["src"] * slot + cols["stage"], weights=cols["nbytes"], minlength=log.n * slot)
    recv = np.bincount(cols["dst"] * slot + cols["stage"], weights=cols["nbytes"], minlength=log.n * slot)
    names = list(track.phases) if len(track.phases) == slot else [f"stage {s}" for s in range(slot)]
    events: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                                     "args": {"name": track.label}}]
    split = timing.transfer_start is not None and timing.transfer_end is not None
    for r in range(log.n):
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": r, "args": {"name": f"rank {r}"}})
        for s in range(slot):
            start, end = float(timing.stage_start[r, s]), float(timing.stage_end[r, s])
            events.append({"name": names[s], "cat": "stage", "ph": "X", "pid": pid, "tid": r, "ts": start * US,
                           "dur": (end - start) * US,
                           "args": {"stage": s, "sent_bytes": int(sent[r * slot + s]),
                                    "received_bytes": int(recv[r * slot + s])}})
            if not split:
                continue
            t0, t1 = float(timing.transfer_start[r, s]), float(timing.transfer_end[r, s])
            for name, cat, a, b in (("local work", "work", start, t0), ("transfer", "transfer", t0, t1),
                                    ("local work", "work", t1, end)):
                if b > a:
                    events.append({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": r, "ts": a * US,
                                   "dur": (b - a) * US, "args": {"stage": s}})
    return events


def flow_events(pid: int, track: Track, first_id: int) -> list[dict[str, Any]]:
    """A start (sender, injection) and a finish (receiver, delivery) flow event per message of the run, in
    log order, with ids first_id, first_id + 1, ... (unique in the document: chrome_trace numbers runs on)."""
    cols, timing = track.log.arrays(), track.timing
    events: list[dict[str, Any]] = []
    for k, (stage, src, dst, nbytes, t0, t1) in enumerate(zip(
            cols["stage"].tolist(), cols["src"].tolist(), cols["dst"].tolist(), cols["nbytes"].tolist(),
            timing.msg_start.tolist(), timing.msg_end.tolist())):
        flow = {"name": "message", "cat": "message", "id": first_id + k, "pid": pid}
        events += [{**flow, "ph": "s", "tid": src, "ts": t0 * US, "args": {"stage": stage, "bytes": nbytes}},
                   {**flow, "ph": "f", "bp": "e", "tid": dst, "ts": t1 * US}]
    return events


def link_utilization(timing: Timing, topology: Topology, bins: int = BINS) -> tuple[np.ndarray, np.ndarray]:
    """(bin edges in seconds, utilization per link and bin): each message's bytes spread evenly over
    [injection, delivery] on every link of its route, per bin divided by capacity x bin width."""
    links = topology.num_links
    end = max(timing.makespan, float(np.nanmax(timing.msg_end)) if timing.msg_end.size else 0.0)
    edges = np.linspace(0.0, end, bins + 1)
    out = np.zeros((links, bins))
    if timing.msg_links is None or timing.msg_bytes is None or not timing.msg_end.size or end <= 0:
        return edges, out
    routes = timing.msg_links
    width = routes.shape[1]
    link = routes.ravel()
    keep = link < links
    t0 = np.repeat(timing.msg_start, width)[keep]
    t1 = np.repeat(timing.msg_end, width)[keep]
    nbytes = np.repeat(timing.msg_bytes, width)[keep]
    link = link[keep]
    moving = (nbytes > 0) & (t1 > t0)
    link, t0, t1, nbytes = link[moving], t0[moving], t1[moving], nbytes[moving]
    rate = nbytes / (t1 - t0)
    # bytes carried by time e: sum over t0 < e of rate (e - t0) minus sum over t1 < e of rate (e - t1)
    for k in np.unique(link):
        mine = link == k
        carried = _ramp(edges, t0[mine], rate[mine]) - _ramp(edges, t1[mine], rate[mine])
        out[k] = np.diff(carried) / (topology.capacity[k] * np.diff(edges))
    return edges, out


def _ramp(edges: np.ndarray, starts: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """sum over i with starts[i] < e of rates[i] (e - starts[i]), at every edge e."""
    order = np.argsort(starts)
    starts, rates = starts[order], rates[order]
    cum_rate = np.concatenate([[0.0], np.cumsum(rates)])
    cum_moment = np.concatenate([[0.0], np.cumsum(rates * starts)])
    i = np.searchsorted(starts, edges, side="left")
    return edges * cum_rate[i] - cum_moment[i]


def counter_events(pid: int, label: str, timing: Timing, topology: Topology, bins: int = BINS) -> list[dict[str, Any]]:
    """A process `pid` named '<label>: link utilization' with one counter track per link that carried bytes."""
    edges, util = link_utilization(timing, topology, bins)
    events: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                                     "args": {"name": f"{label}: link utilization"}}]
    for k in np.flatnonzero(util.any(axis=1)):
        name = topology.names[k]
        events += [{"name": name, "ph": "C", "pid": pid, "tid": 0, "ts": float(t) * US,
                    "args": {"utilization": round(float(u), 6)}} for t, u in zip(edges[:-1], util[k])]
        events.append({"name": name, "ph": "C", "pid": pid, "tid": 0, "ts": float(edges[-1]) * US,
                       "args": {"utilization": 0.0}})
    return events


def chrome_trace(tracks: Sequence[Track], bins: int = BINS) -> dict[str, Any]:
    """The trace-event document of several runs: per run a process of rank tracks with a flow per
    message and, with a topology, a process of link-utilization counters."""
    events: list[dict[str, Any]] = []
    first_id = 0
    for i, track in enumerate(tracks):
        events += timeline_events(2 * i, track) + flow_events(2 * i, track, first_id)
        first_id += len(track.log.src)
        if track.topology is not None:
            events += counter_events(2 * i + 1, track.label, track.timing, track.topology, bins)
    return {"traceEvents": events, "displayTimeUnit": "ms"}
