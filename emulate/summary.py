"""Fold the ranks' JSON outputs of one emulation into one record per scheme or peer.

A run's time is the longest rank's wall time from the common barrier to its last stage (what the
simulator calls the makespan); a record gives the median over repeats and the spread (min, max).
A scheme's record also has its communication part (`comm_part`), median over repeats.
Bytes are per rank, from the first repeat (every repeat moves the same bytes).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

import numpy as np

from zensim.net.units import format_bandwidth
from zensim.report.record import Emulated, RunRecord
from zensim.schemes.registry import with_lossless


def comm_part(wait) -> tuple[float, list[float]]:
    """The communication part of one run from its (ranks x stages) seconds of waiting for messages
    (from posting a stage's sends to its last message; the emulator's `comm_s`, the simulator's
    `Timing.comm_wait`): (the longest any rank waited over the run, per stage the longest wait)."""
    wait = np.asarray(wait, dtype=float)
    if not wait.size:
        return 0.0, []
    return float(wait.sum(axis=1).max()), wait.max(axis=0).tolist()


def _comm_of(ranks: list[dict]) -> tuple[float, list[float]]:
    """comm_part of one emulated run (every rank's record of one repeat)."""
    return comm_part([[st["comm_s"] for st in r["stages"]] for r in ranks])


def summarize(rank_outputs: list[dict]) -> list[dict]:
    """One record per (kind, name), in the order they ran."""
    n = len(rank_outputs)
    by_key: dict[tuple[str, str], dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for out in sorted(rank_outputs, key=lambda o: o["rank"]):
        for run in out["runs"]:
            by_key[(run["kind"], run["name"])][run["repeat"]].append(run)
    records = []
    for (kind, name), repeats in by_key.items():
        times = [max(r["seconds"] for r in ranks) for _, ranks in sorted(repeats.items())]
        first = repeats[min(repeats)]
        errors = sorted({f"rank {i}: {r['error']}" for rep in repeats.values() for i, r in enumerate(rep) if r.get("error")})
        rec = {
            "kind": kind, "name": name, "ranks": n, "repeats": len(times),
            "time_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "times_s": times,
            "sent": [r.get("sent") for r in first], "received": [r.get("received") for r in first],
            "wire_tx": [r.get("wire_tx") for r in first], "wire_rx": [r.get("wire_rx") for r in first], "correct": not errors, "errors": errors,
        }
        if kind == "scheme":
            rec["control_sent"] = [r["control_sent"] for r in first]
            rec["stages"] = len(first[0]["stages"])
            rec["replicas_identical"] = len({r.get("digest") for r in first}) == 1
            comms = [_comm_of(ranks) for _, ranks in sorted(repeats.items())]
            rec["comm_s"] = statistics.median(c for c, _ in comms)
            rec["comm_stages_s"] = np.median([s for _, s in comms], axis=0).tolist()
        records.append(rec)
    return records


DENSE = "dense-allreduce"


def run_records(summaries: list[dict], trace: dict[str, Any], cluster: dict[str, Any],
                provenance: dict[str, Any]) -> list[RunRecord]:
    """The `summarize` records as zensim's one record type (zensim.report.record.RunRecord), so that an
    emulation goes through the same tables, CSV, JSON, plots and `zensim report` as a simulation.

    `trace`: the record's trace block (path, sha256, iteration, ...); `cluster`: the LocalCluster's
    `describe()`; time / dense is against the emulated dense-allreduce scheme when it ran."""
    ranks = cluster["ranks"]
    block = {"description": f"emulated {ranks} ranks x {format_bandwidth(cluster['rate_bps'] / 8)} NIC (tc tbf), one host",
             "machines": ranks, "gpus_per_machine": 1, "nic_bandwidth": cluster["rate_bps"] / 8, "fabric": "emulated",
             "emulation": dict(cluster)}
    dense = next((s["time_s"] for s in summaries if s["kind"] == "scheme" and s["name"] == DENSE), None)
    out = []
    for s in summaries:
        measured = {"wire_tx": s["wire_tx"]}
        if s["kind"] == "scheme":
            measured.update(control_sent=s["control_sent"], stages=s["stages"])
        out.append(RunRecord(
            s["name"], "emulated", "emulated", "flat", ranks, s["time_s"], s["time_s"] / dense if dense else None,
            [int(b) for b in s["sent"] if b is not None], [int(b) for b in s["received"] if b is not None],
            kind=s["kind"], repeats=s["repeats"], errors=list(s["errors"]), trace=dict(trace), cluster=block,
            provenance=provenance, emulated=Emulated(list(s["times_s"]), s["correct"], measured)))
    return with_lossless(out)
