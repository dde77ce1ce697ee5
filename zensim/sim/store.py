"""A content-addressed store of files under one folder: finished sweep points (resume) and message logs
(the cache), each under the SHA-256 of everything it depends on.

Writes go through a temporary file and a rename in the same folder (zensim.atomic), so concurrent
writers (Dask workers, two sweeps sharing a folder) never leave a torn file: two writers of one key
write the same content, and whichever rename comes last wins. A file that cannot be read back is
treated as missing and written again.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from zensim.atomic import write_atomic
from zensim.errors import ConfigError


def content_key(parts: Any) -> str:
    """SHA-256 (hex) of a JSON-able description (dataclasses and numpy values allowed), keys sorted."""
    text = json.dumps(parts, sort_keys=True, default=_plain, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (Path, tuple, set)):
        return str(value) if isinstance(value, Path) else sorted(value) if isinstance(value, set) else list(value)
    raise TypeError(f"cannot describe a {type(value).__name__} for a content key")


class Store:
    """Files `root/kind/ab/abcdef...` by content key."""

    def __init__(self, root: str | os.PathLike[str], kind: str) -> None:
        self.folder = Path(root) / kind

    def path(self, key: str) -> Path:
        """Where the entry of `key` lives."""
        return self.folder / key[:2] / key

    def get(self, key: str) -> bytes | None:
        """The entry's bytes, or None when there is none (or it cannot be read)."""
        try:
            return self.path(key).read_bytes()
        except OSError:
            return None

    def put(self, key: str, data: bytes | str) -> None:
        """Store the entry (atomically; an existing one is replaced by the same content)."""
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"{self.folder}: cannot create the store folder ({exc.strerror})") from None
        write_atomic(path, data)
