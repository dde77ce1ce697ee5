"""Fold the ranks' JSON outputs of one emulation into one record per scheme or peer.

A run's time is the longest rank's wall time from the common barrier to its last stage (what the
simulator calls the makespan); a record gives the median over repeats and the spread (min, max).
Bytes are per rank, from the first repeat (every repeat moves the same bytes).
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from zensim.report.table import format_table


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
            "wire_tx": [r.get("wire_tx") for r in first], "correct": not errors, "errors": errors,
        }
        if kind == "scheme":
            rec["control_sent"] = [r["control_sent"] for r in first]
            rec["stages"] = len(first[0]["stages"])
            rec["replicas_identical"] = len({r.get("digest") for r in first}) == 1
        records.append(rec)
    return records


def emulate_table(records: list[dict]) -> str:
    """Human-readable table of `summarize` records."""
    rows = []
    for r in records:
        payload = max(r["sent"]) if r["kind"] == "scheme" else None
        wire = max(r["wire_tx"]) if all(w is not None for w in r["wire_tx"]) else None
        rows.append([r["name"] + (" (torch)" if r["kind"] == "peer" else ""), r["ranks"], r["time_s"] * 1e3,
                     r["min_s"] * 1e3, r["max_s"] * 1e3, payload, wire, "yes" if r["correct"] else "NO"])
    return format_table(rows, ["scheme", "ranks", "time ms", "min ms", "max ms", "max sent B/rank",
                               "max wire tx B/rank", "correct"])
