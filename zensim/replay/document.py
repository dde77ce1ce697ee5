"""Replay, training and partition results as JSON documents that say what made them: `zensim simulate
--replay` writes a zensim-replay/1 document, `zensim converge` a zensim-training/1 document,
`zensim partition` a zensim-partition/1 document (its rows are plain dicts), each with the provenance (zensim version, commit, command, time), the trace (path, SHA-256) or the
workload, and the cluster (every link and cost parameter), beside the summary and every record;
`zensim report` reads them back (docs/reports.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from zensim.errors import ConfigError
from zensim.report.record import flatten

REPLAY_SCHEMA = "zensim-replay/1"  # zensim.replay.ReplayIterationRecord
TRAINING_SCHEMA = "zensim-training/1"  # zensim.replay.training.TrainingRecord
PARTITION_SCHEMA = "zensim-partition/1"  # zensim partition's rows (dicts)
CONTEXT_KEYS = ("provenance", "trace", "workload", "cluster", "partitioners")


def document(schema: str, records: Sequence[Any], summary: Sequence[Mapping[str, Any]],
             context: Mapping[str, Any]) -> str:
    """The document as JSON text: schema, the context blocks (CONTEXT_KEYS), summary, records."""
    unknown = set(context) - set(CONTEXT_KEYS)
    assert not unknown, f"not a context block: {unknown}"
    return json.dumps({"schema": schema, **context, "summary": list(summary),
                       "records": [_fields(r) for r in records]}, indent=1)


def _fields(record: Any) -> dict[str, Any]:
    """A record's fields: a dict as it is, else its to_dict()."""
    return dict(record) if isinstance(record, Mapping) else record.to_dict()


def csv_rows(records: Sequence[Any], context: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every record's fields, then the context flattened into dotted columns (provenance.commit,
    trace.sha256, cluster.nic_bandwidth, ...), the same on every row."""
    columns = flatten(dict(context))
    return [{**_fields(r), **columns} for r in records]


def read_document(doc: object, path: str) -> tuple[str, list[Any], list[dict], dict[str, Any]] | None:
    """(schema, records, summary, context) of a replay or training document; None for any other JSON;
    a one-line ConfigError naming `path` for a malformed one."""
    if not isinstance(doc, dict) or doc.get("schema") not in (REPLAY_SCHEMA, TRAINING_SCHEMA, PARTITION_SCHEMA):
        return None
    schema = doc["schema"]
    if schema == REPLAY_SCHEMA:
        from zensim.replay.iterations import ReplayIterationRecord as Record
    elif schema == TRAINING_SCHEMA:
        from zensim.replay.training import TrainingRecord as Record  # type: ignore[assignment]
    else:
        Record = dict  # type: ignore[assignment,misc]
    try:
        records = [Record(**r) for r in doc["records"]]
        summary = list(doc["summary"])
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: malformed {schema} document ({str(exc).splitlines()[0]})") from None
    return schema, records, summary, {k: doc[k] for k in CONTEXT_KEYS if k in doc}
