"""Result records to files: JSON, CSV and Parquet, written to a temporary file then renamed (never
half-written)."""

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


def to_parquet(csv_text: str) -> bytes:
    """The table of `csv_text` (a `to_csv` output) as Parquet file bytes: read back by pandas as `--csv`'s
    file is (floats exactly, `null` and empty cells as missing), so both files hold the same columns and
    values, provenance columns included. Needs the `parquet` extra (pandas, pyarrow)."""
    import pandas as pd

    frame = pd.read_csv(io.StringIO(csv_text), low_memory=False)
    out = io.BytesIO()
    frame.to_parquet(out, engine="pyarrow", index=False)
    return out.getvalue()
