"""Local-work cost model and the calibration profile (JSON) that overrides links and per-element costs.

Profile schema (`zensim-profile/1`), every key but `schema` optional:

    {
      "schema": "zensim-profile/1",
      "nic_bandwidth": "200Mbps",          # or a number of bytes/s; effective NIC bandwidth
      "nic_latency": "60us",               # or seconds; per-message one-way latency across machines
      "nvlink_bandwidth": "300GB/s",       # intra-machine link
      "nvlink_latency": "2us",
      "work_seconds_per_element": {"hash": 3e-9, "merge": 8e-9, "encode": 2e-9, "decode": 2e-9, "copy": 1e-9},
      "work_fixed_seconds": {"hash": 1.5e-4, "merge": 2e-4},  # per piece of work (a kernel's launch;
                                           # a fused collective's pieces pay it once per rank)
      "nic_efficiency": {"1": 0.9, "15": 0.6}, # NIC rate factor by concurrent flows k (see NicEfficiency)
      "host_efficiency": {"1": 1.0, "240": 0.6}, # NIC rate factor by flows active at once network-wide
      "host_cores": 2,                     # local work of a host's ranks shares this many processors
      "cpu_slowdown": 1.4,                 # measured local work (one rank alone) runs this much slower
                                           # when all ranks share the host (replays of measured work)
      "rendezvous": true,                  # a message moves only once its receiver has posted the
                                           # stage's receives (gloo; NCCL's and MPI's large messages)
      "exchange_cpu": {"stage": 5e-4, "message": 3e-4, "byte": 3e-10},  # a rank's CPU in a stage's
                                           # exchange: per stage, per message and byte it sends
      "scaled": {"add": "as add.dense (x1)"},  # kinds not measured, priced from another: what and how
      "source": "free text: how it was measured"
    }

Without `nic_efficiency` a NIC carries its full bandwidth whatever the number of flows; without
`host_efficiency` it does whatever the other NICs do (on a real cluster NICs are independent; an
emulator that runs every NIC on one host is not); without `host_cores` (or null) every rank has a
processor of its own; without `rendezvous` (or false) a message moves as soon as its sender has
injected it. These defaults are the closed-form model.

A profile is a measurement, so its values win over the defaults; explicit command-line link options
win over the profile. Local work a profile does not price comes from the default work model, which
ships with the package (`DEFAULT_PROFILE`, zensim/net/profiles/; docs/simulator.md, "Default local
work"): per element, the schemes' own step code measured on an NVIDIA H200 with payloads on the
device; per piece of work, one kernel launch and synchronization measured there; every kind it could
not measure priced from the nearest measured one and listed under `scaled`. A profile that prices a
kind prices everything under it: `merge` in a profile also prices `merge.coo` (the default's refined
name is dropped), so a profile of bare operations is not shadowed by the default's finer kinds.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from zensim.errors import ConfigError
from zensim.net.units import parse_bandwidth, parse_latency

SCHEMA = "zensim-profile/1"
# The operations of local work. A work kind is an operation, optionally refined by what it works on,
# dot-separated (zensim.schemes.workkinds names them): `encode.coo.hash` is the encoding of COO
# pieces over a hash partition. Costs are looked up from the most refined name a profile prices.
# Operations on elements: hash (split by a hash partition), slice (split by ranges), search (a binary
# search per element: positions in a hash partition), merge (union of sorted pieces, summing values),
# select (a top-k re-selection), encode, decode (into / out of a wire format), copy. On positions of a domain (a dense or bitmap layout's every slot): add (a dense sum),
# scan (a pass over dense values), pack / unpack (a bitmap's bits).
WORK_KINDS = ("hash", "merge", "encode", "decode", "copy")
WORK_OPS = (*WORK_KINDS, "slice", "search", "select", "add", "scan", "pack", "unpack")
# The default work model (module docstring), shipped as package data.
DEFAULT_PROFILE = Path(__file__).parent / "profiles" / "h200.profile.json"
_LINK_KEYS = {"nic_bandwidth": parse_bandwidth, "nic_latency": parse_latency,
              "nvlink_bandwidth": parse_bandwidth, "nvlink_latency": parse_latency}


def work_op(kind: str) -> str:
    """The operation of a work kind (its first dot-separated part)."""
    return kind.split(".", 1)[0]


def _prefixes(kind: str) -> list[str]:
    """`kind` and its coarser names, most refined first: a.b.c, a.b, a."""
    parts = kind.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


@dataclass(frozen=True)
class WorkCost:
    """The time of one piece of local work of each kind: t(x) = fixed + per_element x for x elements
    (Cupcake's h(x) = alpha + beta x; a piece is one (rank, stage, phase, kind) entry of a message
    log). A kind is priced by its most refined name present in `per_element` (`encode.coo.hash`, else
    `encode.coo`, else `encode`), and `fixed` by that same name (0 if absent): the per-element model of
    the closed forms is the operations alone. `fixed` is a kernel launch: a piece pays it once per
    launch the log gives it (zensim.run.log.Work.launches: 1, and inside a fused collective, one
    collective kernel per rank, once per rank in all); `per_piece` makes every piece pay it, the fused
    collectives' too (the timeline's `--dense-work profile`). `source` says where the costs come from."""

    per_element: dict[str, float]
    fixed: dict[str, float] = field(default_factory=dict)
    source: str = ""
    per_piece: bool = False

    @classmethod
    def zero(cls) -> "WorkCost":
        """Free local work: the communication-only model of the closed forms."""
        return cls({op: 0.0 for op in WORK_OPS}, source="no local work")

    @classmethod
    def default(cls) -> "WorkCost":
        """The simulator's default work model, read from `DEFAULT_PROFILE` (module docstring)."""
        return _default_work()

    def priced_as(self, kind: str) -> str:
        """The name `kind` is priced by (ValueError for an unknown operation)."""
        for name in _prefixes(kind):
            if name in self.per_element:
                return name
        raise ValueError(f"unknown work kind {kind!r} (operations: {', '.join(WORK_OPS)})")

    def costs(self, kinds: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(fixed, per_element) arrays for `kinds`, for vectorized timing."""
        names = [self.priced_as(k) for k in kinds]
        return (np.array([self.fixed.get(k, 0.0) for k in names], np.float64),
                np.array([self.per_element[k] for k in names], np.float64))

    def seconds(self, kind: str, elements: int, launches: int = 1) -> float:
        """t(x) of one piece of `kind` on `elements` elements (0 for none) that pays `launches`
        launches (`per_piece`: one, whatever it is given)."""
        name = self.priced_as(kind)
        launches = 1 if self.per_piece else launches
        return self.fixed.get(name, 0.0) * launches + self.per_element[name] * elements if elements else 0.0


@dataclass(frozen=True)
class NicEfficiency:
    """Fraction of a NIC's bandwidth it delivers while carrying k concurrent flows, from measured points.

    `points` are (k, eff) with distinct k >= 1 and 0 < eff <= 1. Between two points the time per byte,
    1 / eff, is linear in k, i.e. eff(k) = 1 / (a + b k): a fixed per-flow overhead per byte, the curve
    two measured points (one flow, n-1 flows) determine exactly. Below the first and beyond the last
    point eff is held constant (no extrapolation). k = 0 (an idle link) counts as k = 1.
    """

    points: tuple[tuple[int, float], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "points", tuple(sorted((int(k), float(e)) for k, e in self.points)))
        ks = [k for k, _ in self.points]
        if not ks or ks[0] < 1 or len(set(ks)) != len(ks):
            raise ValueError("needs distinct flow counts k >= 1")
        if not all(0 < e <= 1 for _, e in self.points):
            raise ValueError("efficiency values must be in (0, 1]")

    def __call__(self, k: int) -> float:
        """eff(k) for k concurrent flows."""
        pts = self.points
        if k <= pts[0][0]:
            return pts[0][1]
        for (k0, e0), (k1, e1) in zip(pts, pts[1:]):
            if k <= k1:
                return 1.0 / (1.0 / e0 + (k - k0) * (1.0 / e1 - 1.0 / e0) / (k1 - k0))
        return pts[-1][1]

    def table(self, kmax: int) -> list[float]:
        """[eff(0), eff(1), ..., eff(kmax)] for lookups in the network models."""
        return [self(max(k, 1)) for k in range(kmax + 1)]

    def to_json(self) -> dict[str, float]:
        """The profile form: {"k": eff}."""
        return {str(k): e for k, e in self.points}


@dataclass(frozen=True)
class ExchangeCost:
    """The CPU a rank spends in a stage's exchange itself (posting its sends, copying bytes, receipts):
    `per_stage` in every stage it sends or receives in, `per_message` per message it sends, `per_byte`
    per byte it sends. It runs on the host's processors (shared like local work) after the stage's
    pre work, inside the wait for messages, and before the sends are injected (zensim.net.replay)."""

    per_stage: float = 0.0
    per_message: float = 0.0
    per_byte: float = 0.0

    def to_json(self) -> dict[str, float]:
        """The profile form: {"stage", "message", "byte"} in seconds."""
        return {"stage": self.per_stage, "message": self.per_message, "byte": self.per_byte}


@dataclass(frozen=True)
class Profile:
    """A parsed calibration profile: link overrides (bytes/s, seconds), work costs, NIC and CPU sharing."""

    links: dict[str, float]
    work: WorkCost
    source: str = ""
    nic_efficiency: NicEfficiency | None = None
    host_cores: int | None = None
    host_efficiency: NicEfficiency | None = None
    cpu_slowdown: float = 1.0
    rendezvous: bool = False
    exchange: ExchangeCost | None = None


def fit(sizes: Sequence[float], seconds: Sequence[float]) -> tuple[float, float]:
    """(alpha, beta) >= 0 minimizing sum(((alpha + beta x - t) / t)^2) over the measured (x, t)."""
    x, t = np.asarray(sizes, np.float64), np.asarray(seconds, np.float64)
    if len(x) < 2 or (t <= 0).any():
        raise ValueError("need at least two positive measurements")
    (alpha, beta), _ = nnls(np.stack([1 / t, x / t], axis=1), np.ones(len(t)))
    return float(alpha), float(beta)


def fit_error(sizes: Sequence[float], seconds: Sequence[float], alpha: float, beta: float) -> float:
    """Largest relative error of the fitted line over the measurements."""
    x, t = np.asarray(sizes, np.float64), np.asarray(seconds, np.float64)
    return float(np.abs((alpha + beta * x - t) / t).max())


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile JSON file; any problem is a one-line ConfigError naming the file."""
    try:
        raw = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: profile not found") from None
    except UnicodeDecodeError:  # a trace or an image given as the profile
        raise ConfigError(f"{path}: not a JSON profile (not UTF-8 text)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON profile ({str(exc).splitlines()[0]})") from None
    return parse_profile(raw, path)


def parse_profile(raw: object, path: str | Path, *, defaults: bool = True) -> Profile:
    """Validate a profile already read as JSON; errors name `path` (a file, or where the dict came from).
    `defaults`: the work it does not price from the default work model (else its own costs alone)."""
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise ConfigError(f"{path}: not a profile (expected \"schema\": \"{SCHEMA}\")")
    unknown = set(raw) - set(_LINK_KEYS) - {"schema", "work_seconds_per_element", "work_fixed_seconds", "source",
                                            "nic_efficiency", "host_cores", "host_efficiency", "cpu_slowdown",
                                            "rendezvous", "exchange_cpu", "scaled"}
    if unknown:
        raise ConfigError(f"{path}: unknown profile key(s) {', '.join(sorted(unknown))}")
    links = {key: parse(raw[key], f"{path}: {key}") for key, parse in _LINK_KEYS.items() if key in raw}
    source = str(raw.get("source", ""))
    work = _own_work(raw, path, source)
    return Profile(links, with_default(work) if defaults else work, source,
                   _efficiency(raw.get("nic_efficiency"), path, "nic_efficiency"), _cores(raw.get("host_cores"), path),
                   _efficiency(raw.get("host_efficiency"), path, "host_efficiency"), _slowdown(raw.get("cpu_slowdown", 1.0), path),
                   _flag(raw.get("rendezvous", False), path, "rendezvous"), _exchange(raw.get("exchange_cpu"), path))


def _own_work(raw: dict, path, source: str) -> WorkCost:
    """The work costs a profile states itself (its `scaled` entries checked: priced kinds, text)."""
    per_element = _work_seconds(raw, "work_seconds_per_element", path)
    scaled = raw.get("scaled", {})
    if not isinstance(scaled, dict) or not all(isinstance(v, str) for v in scaled.values()):
        raise ConfigError(f"{path}: scaled must be an object {{kind: how it was priced}}")
    if set(scaled) - set(per_element):
        raise ConfigError(f"{path}: scaled names kind(s) it does not price: {', '.join(sorted(set(scaled) - set(per_element)))}")
    return WorkCost(per_element, _work_seconds(raw, "work_fixed_seconds", path), source)


def with_default(work: WorkCost) -> WorkCost:
    """`work` with the default work model's costs for every kind it prices neither itself nor under a
    coarser name (module docstring); its own figures unchanged."""
    default = _default_work()
    kept = [k for k in default.per_element if not any(name in work.per_element for name in _prefixes(k))]
    if not kept:
        return work
    own = work.source or "the profile"
    return WorkCost({**{k: default.per_element[k] for k in kept}, **work.per_element},
                    {**{k: default.fixed[k] for k in kept if k in default.fixed}, **work.fixed},
                    f"{own}; {', '.join(kept)}: the default ({default.source})")


@functools.cache
def _default_work() -> WorkCost:
    """The default work model (`DEFAULT_PROFILE`), read once; it must price every operation."""
    raw = json.loads(DEFAULT_PROFILE.read_text())
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise ConfigError(f"{DEFAULT_PROFILE}: not a profile (expected \"schema\": \"{SCHEMA}\")")
    work = _own_work(raw, DEFAULT_PROFILE, str(raw.get("source", "")))
    if set(WORK_OPS) - set(work.per_element):
        raise ConfigError(f"{DEFAULT_PROFILE}: the default must price every operation "
                          f"(missing {', '.join(sorted(set(WORK_OPS) - set(work.per_element)))})")
    return work


def _exchange(value, path) -> ExchangeCost | None:
    """The profile's exchange_cpu {"stage", "message", "byte"} (seconds; each optional, >= 0) or null."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"stage", "message", "byte"}:
        raise ConfigError(f"{path}: exchange_cpu must be an object with keys stage, message, byte (seconds)")
    for key, x in value.items():
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x < float("inf"):
            raise ConfigError(f"{path}: exchange_cpu {key} must be a non-negative number of seconds, got {x!r}")
    return ExchangeCost(float(value.get("stage", 0.0)), float(value.get("message", 0.0)), float(value.get("byte", 0.0)))


def _work_seconds(raw: dict, key: str, path) -> dict[str, float]:
    """The profile's object `key` of seconds by work kind (absent: empty)."""
    work = raw.get(key, {})
    if not isinstance(work, dict):
        raise ConfigError(f"{path}: {key} must be an object")
    out = {}
    for kind, value in work.items():
        if not isinstance(kind, str) or work_op(kind) not in WORK_OPS or not all(kind.split(".")):
            raise ConfigError(f"{path}: unknown work kind {kind!r} (operations: {', '.join(WORK_OPS)}, "
                              "refined as op.what, e.g. encode.coo.hash)")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < float("inf"):
            raise ConfigError(f"{path}: work cost of {kind!r} must be a non-negative number of seconds, got {value!r}")
        out[kind] = float(value)
    return out


def _flag(value, path, key: str) -> bool:
    """A profile's true/false entry `key`."""
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: {key} must be true or false, got {value!r}")
    return value


def _slowdown(value, path) -> float:
    """The profile's cpu_slowdown (a finite number >= 1 is expected; any positive one is accepted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ConfigError(f"{path}: cpu_slowdown must be a positive number, got {value!r}")
    return float(value)


def _efficiency(value, path, key: str) -> NicEfficiency | None:
    """The profile's efficiency object `key` {"k": eff} (or null) as a NicEfficiency."""
    if value is None:
        return None
    try:
        if not isinstance(value, dict) or not value:
            raise ValueError("must be a non-empty object {\"k\": efficiency}")
        points = []
        for k, e in value.items():
            if not str(k).isdigit() or isinstance(e, bool) or not isinstance(e, (int, float)) or math.isnan(e):
                raise ValueError(f"bad entry {k!r}: {e!r}")
            points.append((int(k), float(e)))
        return NicEfficiency(tuple(points))
    except ValueError as exc:
        raise ConfigError(f"{path}: {key}: {exc}") from None


def _cores(value, path) -> int | None:
    """The profile's host_cores (a positive integer or null)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{path}: host_cores must be a positive integer or null, got {value!r}")
    return value
