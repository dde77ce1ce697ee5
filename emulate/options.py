"""Option parsers shared by `zensim emulate` and the rank program: --peers and --options."""

from __future__ import annotations

import json

from zensim.errors import ConfigError


def parse_peers(text: str) -> list[str]:
    """--peers (here and in the rank program): a comma list of dense and sparse, or both, or none."""
    if text in ("both", "none"):
        return ["dense", "sparse"] if text == "both" else []
    names = [p for p in text.split(",") if p]
    if not names or any(p not in ("dense", "sparse") for p in names):
        raise ConfigError(f"--peers: expected dense, sparse, both or none (comma list), got {text!r}")
    return list(dict.fromkeys(names))


def parse_options(text: str) -> dict:
    """--options (here and in the rank program): a JSON object of scheme options."""
    try:
        opts = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--options: not JSON ({exc.msg})") from None
    if not isinstance(opts, dict):
        raise ConfigError("--options: expected a JSON object such as '{\"pull\": \"hash_bitmap\"}'")
    return opts
