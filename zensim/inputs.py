"""Input text files (scenarios, results files): read whole, every problem a one-line ConfigError."""

from __future__ import annotations

import os

from zensim.errors import ConfigError


def read_text(path: str | os.PathLike[str], what: str) -> str:
    """The UTF-8 text of `path` (`what` it is names it in errors: 'scenario', 'results file')."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, expected a {what}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what} ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
