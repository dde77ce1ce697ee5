"""One record type for every run of a scheme, simulated (a network model) or emulated (measured), and
the results file that holds records (JSON or CSV, read back by `zensim report`).

A record is one scheme on one cluster under one model (or emulated), with what it measured and what
made it: the trace (path, content hash, iteration), every cluster parameter, the sweep point, and the
provenance (zensim version and commit, command or scenario). JSON keeps the nesting; CSV and pandas
flatten it into dotted columns (`cluster.nic_bandwidth`, `trace.sha256`, `sweep.machines`).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zensim.errors import ConfigError
from zensim.inputs import read_text
from zensim.report.export import to_csv

SCHEMA = "zensim-results/1"
SOURCES = ("simulated", "emulated")


@dataclass
class Simulated:
    """What only a simulated record has: the network model's per-link and per-stage figures and how the
    run was made; the raw timing and message log are kept in memory only (not saved)."""

    stage_phases: list[str] = field(default_factory=list)  # per stage, its phase (zensim.layout.PHASES)
    link_bytes: list[int] = field(default_factory=list)  # bytes per link of the cluster (link id order)
    traffic: list[list[int]] = field(default_factory=list)  # [src machine, dst machine, bytes], non-zero
    events: int = 0  # simulated events
    driver_s: float = 0.0  # the part of wall_s in the stage-program driver (or loading its cached log)
    log_cached: bool = False  # the message log came from the cache (zensim.sim.logcache)
    timing: Any = field(default=None, repr=False, compare=False)  # zensim.net.engine.Timing (not saved)
    log: Any = field(default=None, repr=False, compare=False)  # the message log (not saved)


@dataclass
class Emulated:
    """What only an emulated record has: each repeat's time, the check of the result, the wire's figures."""

    times_s: list[float] = field(default_factory=list)  # each repeat's time
    correct: bool | None = None  # every rank's result equals the dense sum
    measured: dict[str, Any] = field(default_factory=dict)  # wire bytes, control bytes, ...


PARTS = {"simulated": Simulated, "emulated": Emulated}
UNSAVED = ("timing", "log")
# the saved fields in the order of the results file (a record's own fields and its part's, interleaved as
# they always were: the file format is unchanged by the split)
ORDER = ("scheme", "source", "model", "layout", "gpus", "time_s", "vs_dense", "bytes_sent", "bytes_received",
         "push_imbalance", "pull_imbalance", "recv_imbalance", "busiest_link", "busiest_link_util", "stage_times_s",
         "stage_phases", "link_bytes", "traffic", "events", "wall_s", "driver_s", "log_cached", "values_flushed",
         "program", "options", "values", "lossless", "kind", "repeats", "times_s", "correct", "errors", "trace",
         "cluster", "point", "sweep", "measured", "provenance")


@dataclass
class RunRecord:
    """One scheme's run: times (s), bytes per rank, balance, stages, and what made it; what only a
    simulated or only an emulated run has is its part (`simulated`, `emulated`: the one of its source)."""

    scheme: str
    source: str  # simulated | emulated
    model: str  # the sharing model (fifo, maxmin, analytic) or 'emulated'
    layout: str  # zen | flat (the multi-GPU layout the scheme ran in)
    gpus: int
    time_s: float | None = None  # simulated: the makespan; emulated: the median over repeats of the slowest rank
    vs_dense: float | None = None  # time / dense ring all-reduce's time in the same run
    bytes_sent: list[int] = field(default_factory=list)  # per rank (payload bytes)
    bytes_received: list[int] = field(default_factory=list)
    push_imbalance: float | None = None  # ZEN's: max over workers i, servers j of n |I_i^j| / |I_i| (Parallelism)
    pull_imbalance: float | None = None  # ZEN's: max over servers j of n |𝕀_j| / |I| (Parallelism)
    recv_imbalance: float | None = None  # max / mean over ranks of the bytes received before the pull
    busiest_link: str | None = None
    busiest_link_util: float | None = None
    stage_times_s: list[float] = field(default_factory=list)  # per stage, the longest any rank spent in it
    wall_s: float = 0.0  # seconds this record took to compute (simulated) or the emulation's wall time
    values_flushed: int = 0  # non-zero values the wire's value dtype rounded to zero
    program: str = ""  # digest of the message log; two schemes with equal digests ran the same program
    options: dict[str, Any] = field(default_factory=dict)  # the scheme's options (value_dtype, pull, ...)
    values: bool = False  # whether values were carried through the scheme (else indices only)
    lossless: bool | None = None  # the scheme's capabilities: every rank ends with the dense sum (None: not recorded)
    kind: str = "scheme"  # scheme | peer (emulation: torch's own collective, measured alongside)
    repeats: int = 1
    errors: list[str] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)  # path, sha256, iteration, workers, numel
    cluster: dict[str, Any] = field(default_factory=dict)  # description and every parameter (SI units)
    point: int | None = None  # index of the sweep point (None outside a sweep)
    sweep: dict[str, Any] = field(default_factory=dict)  # the swept values of that point, as written
    provenance: dict[str, Any] = field(default_factory=dict)  # zensim, commit, command, scenario, created
    simulated: Simulated | None = None  # a simulated record's part (made empty when not given)
    emulated: Emulated | None = None  # an emulated record's part (made empty when not given)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {self.source!r}")
        other = "emulated" if self.source == "simulated" else "simulated"
        if getattr(self, other) is not None:
            raise ValueError(f"a {self.source} record has no {other} part")
        if getattr(self, self.source) is None:
            setattr(self, self.source, PARTS[self.source]())

    @property
    def part(self) -> Simulated | Emulated:
        """The part of the record's source."""
        return self.simulated if self.source == "simulated" else self.emulated  # type: ignore[return-value]

    @property
    def cluster_name(self) -> str:
        """The one-line cluster description ('16x8 GPUs, NIC 25Gbps, ...')."""
        return str(self.cluster.get("description", ""))

    def run_label(self) -> str:
        """What distinguishes this record's run from others of the same scheme: point, cluster, model."""
        where = ", ".join(f"{k}={v}" for k, v in self.sweep.items()) or self.cluster_name
        return f"{where}, {self.model}" if self.source == "simulated" else f"{where}, emulated"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields, flat and nested as the results file has them (the other source's part as
        its defaults; the raw timing and message log left out)."""
        parts = {name: getattr(self, name) or cls() for name, cls in PARTS.items()}
        owner = {f.name: parts[name] for name, cls in PARTS.items() for f in dataclasses.fields(cls)}
        out = {name: getattr(owner.get(name, self), name) for name in ORDER}
        return json.loads(json.dumps(out, default=_jsonable))

    def to_row(self) -> dict[str, Any]:
        """The record flattened into dotted columns (CSV, DataFrame)."""
        return flatten(self.to_dict())

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str = "record") -> "RunRecord":
        """A record from `to_dict()` or `to_row()` output (nested or dotted keys); unknown keys are an error,
        and so are figures of the other source's part (an emulated record with link bytes)."""
        data = unflatten(raw)
        unknown = sorted(set(data) - set(ORDER))
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)} (not a {SCHEMA} record)")
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in data
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ConfigError(f"{where}: missing field(s) {', '.join(missing)} (not a {SCHEMA} record)")
        parts = {}
        for name, part in PARTS.items():
            own = {f.name: data.pop(f.name) for f in dataclasses.fields(part) if f.name in data}
            if name == data.get("source"):
                parts[name] = part(**own)
                continue
            empty = part()  # the other source's figures: absent (None in a CSV row) or the defaults
            extra = sorted(k for k, v in own.items() if v is not None and v != getattr(empty, k))
            if extra:
                raise ConfigError(f"{where}: {', '.join(extra)}: only a {name} record has it")
        try:
            return cls(**data, **parts)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: {exc}") from None


def _jsonable(value: Any) -> Any:
    """numpy scalars and arrays, paths: to JSON types."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def flatten(nested: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists stay values."""
    out: dict[str, Any] = {}
    for key, value in nested.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    """{'a.b': 1} -> {'a': {'b': 1}} (keys without a dot and nested dicts pass through)."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"column {key!r} clashes with column {part!r}")
        node[parts[-1]] = value
    return out


# ---- results files -------------------------------------------------------------------------------

def results_json(records: Iterable[RunRecord]) -> str:
    """The JSON results document: {"schema": "zensim-results/1", "records": [...]}."""
    return json.dumps({"schema": SCHEMA, "records": [r.to_dict() for r in records]}, indent=2)


# CSV cells of these fields are ';'-joined numbers; other lists and dicts are JSON text; a nested field
# whose value is None is 'null' (pandas reads it as NaN), an empty cell a field the record does not have
NULL = "null"
NUMBER_LISTS = {"bytes_sent": int, "bytes_received": int, "stage_times_s": float, "times_s": float, "link_bytes": int}


def results_csv(records: Iterable[RunRecord]) -> str:
    """One row per record, dotted columns (the union over records, in first-seen order)."""
    return to_csv([{k: _csv_cell(k, v) for k, v in r.to_row().items()} for r in records])


def _csv_cell(key: str, value: Any) -> Any:
    if value is None and "." in key:
        return NULL  # a nested field that is there with no value: not an empty cell (a field of other records)
    if key in NUMBER_LISTS:
        return ";".join(repr(v) if isinstance(v, float) else str(v) for v in value)
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value)
    return value


def _parse_cell(key: str, text: str) -> Any:
    """A CSV cell back to its value: empty = None, lists, JSON, numbers, booleans, else the text."""
    if key in NUMBER_LISTS:
        return [NUMBER_LISTS[key](v) for v in text.split(";")] if text else []
    if text in ("", NULL):
        return None
    if text[0] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            return text
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return value if kind is int or not math.isnan(value) else None
    return text


def load_results(path: str | Path) -> list[RunRecord]:
    """Records of a results file (JSON document or CSV written by zensim); one-line ConfigError otherwise."""
    path = Path(path)
    text = read_text(path, "results file")
    if text.lstrip()[:1] in ("{", "["):
        return _records_from_json(path, text)
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or "scheme" not in rows[0] or "source" not in rows[0]:
        raise ConfigError(f"{path}: not a results file (neither {SCHEMA} JSON nor a zensim results CSV)")
    return [RunRecord.from_dict(_row_values(row), f"{path}: row {i + 2}") for i, row in enumerate(rows)]


def _row_values(row: Mapping[str, str]) -> dict[str, Any]:
    """A CSV row's values; an empty cell is a field this record does not have (a column of other records)."""
    return {k: _parse_cell(k, v) for k, v in row.items() if v != "" or k in NUMBER_LISTS}


def _records_from_json(path: Path, text: str) -> list[RunRecord]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("records"), list):
        raise ConfigError(f"{path}: not a results file (expected a {SCHEMA} document with 'records')")
    records = []
    for i, raw in enumerate(doc["records"]):
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: record {i} is not a JSON object")
        records.append(RunRecord.from_dict(raw, f"{path}: record {i}"))
    return records


def to_dataframe(records: Sequence[RunRecord]) -> Any:
    """The records as a pandas DataFrame, one row per record, dotted columns (pandas must be installed:
    it is an optional dependency, `pip install pandas`)."""
    try:
        import pandas as pd
    except ImportError:
        raise ConfigError("to_dataframe: pandas is not installed (pip install pandas)") from None
    return pd.DataFrame([r.to_row() for r in records])
