"""Result records to files: JSON and CSV, written to a temporary file then renamed (never half-written)."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zensim.errors import ConfigError


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory and a rename."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write ({exc.strerror})") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; outputs get the usual permissions
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
