"""Result records to files: JSON and CSV, written to a temporary file then renamed (never half-written)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from zensim.atomic import write_atomic  # noqa: F401  (re-exported: outputs import it from here)


def to_json(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows as an indented JSON array."""
    return json.dumps(list(rows), indent=2)


def to_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows as CSV with the union of keys as header; list values become ';'-joined cells."""
    header = list(dict.fromkeys(k for row in rows for k in row))
    out = io.StringIO()
    writer = csv.DictWriter(out, header, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ";".join(map(str, v)) if isinstance(v, (list, tuple)) else v for k, v in row.items()})
    return out.getvalue()
