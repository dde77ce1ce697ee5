"""Bandwidth and latency strings to SI numbers (bytes/s, seconds), with the Gbps vs GB/s trap spelled out.

Bits and bytes are told apart by the case of the `b`: `b`/`bit`/`bps` are bits, `B`/`Byte` are bytes.
Prefixes are decimal (k = 1e3, M = 1e6, G = 1e9, T = 1e12), as on every link-speed label.
`25Gbps` = `25Gbit/s` = 3.125e9 bytes/s; `300GB/s` = 3e11 bytes/s; `200mbit` = 2.5e7 bytes/s (a lone
lower-case `m` before `bit` means mega: nobody ships millibit links).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from zensim.errors import ConfigError

_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_BANDWIDTH = re.compile(
    r"^\s*(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<prefix>[kKmMgGtT]?)"
    r"(?P<unit>bps|bit/s|bits/s|bit|bits|b/s|b|Bps|B/s|B|byte/s|bytes/s|Byte/s|Bytes/s)\s*$"
)
_LATENCY = re.compile(r"^\s*(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>ns|us|µs|ms|s)\s*$")
_PER_SECOND = {"ns": 1e9, "us": 1e6, "µs": 1e6, "ms": 1e3, "s": 1.0}
# Beyond these a number is a typo (1e30Gbps, 1e9s), not a link: refused rather than simulated.
MAX_BANDWIDTH = 1e15 / 8  # bytes/s: 1 Pbit/s, over a hundred times the fastest NIC or NVLink
MAX_LATENCY = 10.0  # seconds per message: over ten times a geostationary satellite hop (0.6 s)


def _number(text: str | float | int, what: str, kind: str, pattern: re.Pattern[str], examples: str,
            convert: Callable[[re.Match[str]], float]) -> float:
    """A bare number as is; else `text` matched by `pattern` and converted, or a ConfigError naming `what`."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    match = pattern.match(str(text))
    if not match:
        raise ConfigError(f"{what}: cannot parse {text!r} as a {kind} (examples: {examples})")
    return convert(match)


def parse_bandwidth(text: str | float | int, what: str = "bandwidth") -> float:
    """Parse `25Gbps`, `300GB/s`, `200mbit`, `1.5Gbit/s`, `10MB/s` (or a bare number of bytes/s) to bytes/s."""
    value = _number(text, what, "bandwidth", _BANDWIDTH, "25Gbps, 300GB/s, 200mbit, 10MB/s",
                    lambda m: float(m["num"]) * _PREFIX[m["prefix"].lower()] / (1.0 if m["unit"][0] == "B" else 8.0))
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{what}: bandwidth must be positive and finite, got {text!r}")
    if value > MAX_BANDWIDTH:
        raise ConfigError(f"{what}: {text!r} is above {format_bandwidth(MAX_BANDWIDTH)}, faster than any link")
    return value


def parse_latency(text: str | float | int, what: str = "latency") -> float:
    """Parse `5us`, `1ms`, `200ns`, `0s` (or a bare number of seconds) to seconds."""
    value = _number(text, what, "latency", _LATENCY, "5us, 1ms, 0s",
                    lambda m: float(m["num"]) / _PER_SECOND[m["unit"]])
    if not value >= 0 or value == float("inf"):
        raise ConfigError(f"{what}: latency must be non-negative and finite, got {text!r}")
    if value > MAX_LATENCY:
        raise ConfigError(f"{what}: {text!r} is above {MAX_LATENCY:g} s, longer than any link's per-message latency")
    return value


def format_bandwidth(bytes_per_s: float) -> str:
    """Human form in bits per second, the way link speeds are labelled (3.125e9 -> '25Gbps')."""
    bits = bytes_per_s * 8
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if bits >= scale:
            return f"{bits / scale:g}{prefix}bps"
    return f"{bits:g}bps"
