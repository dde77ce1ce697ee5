"""Local-work cost model and the calibration profile (JSON) that overrides links and per-element costs.

Profile schema (`zensim-profile/1`), every key but `schema` optional:

    {
      "schema": "zensim-profile/1",
      "nic_bandwidth": "200Mbps",          # or a number of bytes/s; effective NIC bandwidth
      "nic_latency": "60us",               # or seconds; per-message one-way latency across machines
      "nvlink_bandwidth": "300GB/s",       # intra-machine link
      "nvlink_latency": "2us",
      "work_seconds_per_element": {"hash": 3e-9, "merge": 8e-9, "encode": 2e-9, "decode": 2e-9, "copy": 1e-9},
      "source": "free text: how it was measured"
    }

A profile is a measurement, so its values win over the defaults; explicit command-line link options
win over the profile.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from zensim.errors import ConfigError
from zensim.net.units import parse_bandwidth, parse_latency

SCHEMA = "zensim-profile/1"
WORK_KINDS = ("hash", "merge", "encode", "decode", "copy")
# GPU-class placeholders (seconds per element) until a calibration says otherwise: a few GB/s of
# effective random-access throughput for hashing/merging, streaming speed for copies.
DEFAULT_WORK_COST = {"hash": 1e-10, "merge": 2e-10, "encode": 5e-11, "decode": 5e-11, "copy": 2e-11}
_LINK_KEYS = {"nic_bandwidth": parse_bandwidth, "nic_latency": parse_latency,
              "nvlink_bandwidth": parse_bandwidth, "nvlink_latency": parse_latency}


@dataclass(frozen=True)
class WorkCost:
    """Seconds per element for each kind of local work."""

    per_element: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WORK_COST))

    @classmethod
    def zero(cls) -> "WorkCost":
        """Free local work: the communication-only model of the closed forms."""
        return cls({kind: 0.0 for kind in WORK_KINDS})

    def vector(self) -> np.ndarray:
        """Costs in WORK_KINDS order, for vectorized timing."""
        return np.array([self.per_element[k] for k in WORK_KINDS], dtype=np.float64)


@dataclass(frozen=True)
class Profile:
    """A parsed calibration profile: link overrides (bytes/s, seconds) and the work cost model."""

    links: dict[str, float]
    work: WorkCost
    source: str = ""


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile JSON file; any problem is a one-line ConfigError naming the file."""
    try:
        raw = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: profile not found") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON profile ({str(exc).splitlines()[0]})") from None
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise ConfigError(f"{path}: not a profile (expected \"schema\": \"{SCHEMA}\")")
    unknown = set(raw) - set(_LINK_KEYS) - {"schema", "work_seconds_per_element", "source"}
    if unknown:
        raise ConfigError(f"{path}: unknown profile key(s) {', '.join(sorted(unknown))}")
    links = {key: parse(raw[key], f"{path}: {key}") for key, parse in _LINK_KEYS.items() if key in raw}
    costs = dict(DEFAULT_WORK_COST)
    work = raw.get("work_seconds_per_element", {})
    if not isinstance(work, dict):
        raise ConfigError(f"{path}: work_seconds_per_element must be an object")
    for kind, value in work.items():
        if kind not in costs:
            raise ConfigError(f"{path}: unknown work kind {kind!r} (known: {', '.join(WORK_KINDS)})")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < float("inf"):
            raise ConfigError(f"{path}: work cost of {kind!r} must be a non-negative number of seconds, got {value!r}")
        costs[kind] = float(value)
    return Profile(links, WorkCost(costs), str(raw.get("source", "")))
