"""Records grouped into runs (one simulate() call, one sweep point, one emulation) and runs into sweeps;
which schemes of a run are the same program; which are lossy; which parameters differ between runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zensim.report.record import RunRecord, flatten

DENSE = "dense-allreduce"
# context keys that always differ between runs and say nothing about what was compared
NOT_COMPARED = ("provenance.created", "provenance.command", "provenance.scenario", "cluster.description")
LOSSY_NOTE = ("yes: the scheme does not end with the dense sum of the gradients (its capabilities say "
              "lossless=False: it drops or approximates values), so its time is not comparable with a lossless "
              "scheme's as it is; listed after them")


@dataclass
class Run:
    """The records of one run (every scheme on one cluster, trace, iteration and model)."""

    label: str
    records: list[RunRecord]

    @property
    def sweep(self) -> dict[str, Any]:
        """The swept values of the run's point (empty outside a sweep)."""
        return self.records[0].sweep

    def by_scheme(self) -> dict[str, RunRecord]:
        """Records by scheme name (a peer's name marked '(torch)')."""
        return {r.scheme + (" (torch)" if r.kind == "peer" else ""): r for r in self.records}

    def dense_time(self) -> float | None:
        """Dense ring all-reduce's time in this run (from its record, or from any record's ratio)."""
        dense = self.by_scheme().get(DENSE)
        if dense is not None and dense.time_s is not None:
            return dense.time_s
        return next((r.time_s / r.vs_dense for r in self.records if r.vs_dense and r.time_s is not None), None)

    def context(self) -> dict[str, Any]:
        """Everything that defines the run, flattened: model, source, layout, trace.*, cluster.*, sweep.*,
        provenance.*."""
        rec = self.records[0]
        return flatten({"source": rec.source, "model": rec.model, "layout": rec.layout, "trace": rec.trace,
                        "cluster": rec.cluster, "sweep": rec.sweep, "provenance": rec.provenance})


def run_key(rec: RunRecord) -> tuple:
    """What records of one run share."""
    return (rec.point, rec.source, rec.model, rec.layout, rec.cluster_name, rec.trace.get("sha256"),
            rec.trace.get("iteration"), rec.provenance.get("created"), rec.provenance.get("commit"),
            rec.provenance.get("command"))


def split_runs(records: Sequence[RunRecord], prefix: str = "") -> list[Run]:
    """Records grouped into runs, in first-seen order; labels '<prefix>: <point or cluster>, <model>'."""
    groups: dict[tuple, list[RunRecord]] = {}
    for rec in records:
        groups.setdefault(run_key(rec), []).append(rec)
    return [Run(f"{prefix}: {recs[0].run_label()}" if prefix else recs[0].run_label(), recs) for recs in groups.values()]


def group_sweep(records: Sequence[RunRecord]) -> list[tuple[str, str, list[Run]]]:
    """A sweep's runs as (group label, x key, runs along x): x is the first swept key, a group is one
    combination of the other swept keys ('model=fifo'), both in sweep order."""
    runs = split_runs(records)
    x_key = next(iter(runs[0].sweep))
    groups: dict[str, list[Run]] = {}
    for run in runs:
        label = ", ".join(f"{k}={v}" for k, v in run.sweep.items() if k != x_key)
        groups.setdefault(label, []).append(run)
    return [(label, x_key, members) for label, members in groups.items()]


def same_program(records: Sequence[RunRecord]) -> dict[str, str]:
    """{scheme: the first earlier scheme of these records that ran the same program} (equal message-log
    digests: every message and all local work identical)."""
    return _first_equal([(rec.scheme, rec.program) for rec in records])


def same_program_in(runs: Sequence[Run]) -> dict[str, str]:
    """As `same_program`, for series across runs (a sweep): the same program at every point (at 2 ranks
    most schemes coincide; a series is marked only where they all do)."""
    schemes = list(dict.fromkeys(r.scheme for run in runs for r in run.records))
    tables = [{r.scheme: r.program for r in run.records} for run in runs]
    keys = [(s, tuple(t.get(s, "") for t in tables)) for s in schemes]
    return _first_equal([(s, key if all(key) else "") for s, key in keys])


def _first_equal(items: Sequence[tuple[str, Any]]) -> dict[str, str]:
    """{name: the first earlier name with an equal, non-empty key}."""
    first: dict[Any, str] = {}
    out = {}
    for name, key in items:
        if not key:
            continue
        if key in first and first[key] != name:
            out[name] = first[key]
        first.setdefault(key, name)
    return out


def lossy_schemes(records: Sequence[RunRecord]) -> set[str]:
    """Names of the lossy schemes among `records`, as their capabilities say (lossless=False). A record
    that does not say (a file written before it was recorded) counts as lossless here: `zensim report`
    fills it in from the scheme registry first (zensim.schemes.registry.with_lossless)."""
    return {r.scheme for r in records if r.lossless is False}


def lossless_first(names: Sequence[str], lossy: set[str]) -> list[str]:
    """`names` with those in `lossy` moved after the others, each group in its own order."""
    return [n for n in names if n not in lossy] + [n for n in names if n in lossy]


def run_letters(count: int) -> list[str]:
    """Short names of compared runs: A, B, ..., Z, then R26, R27, ..."""
    return [chr(ord("A") + i) if i < 26 else f"R{i}" for i in range(count)]


def differing(runs: Sequence[Run]) -> dict[str, list[Any]]:
    """The context keys whose values differ between runs: {key: [value per run]} (missing = None)."""
    contexts = [run.context() for run in runs]
    keys = list(dict.fromkeys(k for c in contexts for k in c if k not in NOT_COMPARED))
    return {k: [c.get(k) for c in contexts] for k in keys if len({repr(c.get(k)) for c in contexts}) > 1}
