"""The per-layer profile: every parameter's compute time and the order in which gradients become ready.

A `LayerProfile` is what the iteration timeline needs of a model on one device (one GPU's share of a
data-parallel step): the forward time, then for each parameter tensor in the order its gradient
becomes ready during backward, the backward compute since the previous gradient was ready, the
backward left after the last one, and the optimizer step. It is made three ways (docs/iteration.md):
measured by hooks around real training (`zensim.train.record`), estimated from layer shapes and a
device's datasheet (`zensim.train.roofline`), or imported from a torch.profiler trace taken elsewhere
(`zensim.train.kineto`). All three give the same JSON file (schema `zensim-layers/1`):

    {"schema": "zensim-layers/1", "kind": "measured" | "estimate" | "imported",
     "workload": "lstm-lm", "device": "cpu: ...", "batch_size": 20, "iterations": 10,
     "forward_s": 0.0123,          # model forward start -> its backward start (loss and its backward included)
     "backward_tail_s": 0.0001,    # backward after the last gradient was ready
     "optimizer_s": 0.002,         # optimizer step (0 when none was recorded)
     "step_other_s": 0.003,        # the step's time outside forward, backward and optimizer (optional, 0)
     "hook_before_s": 0.0002, "hook_before_element_s": 1e-9,   # zensim_hook's host work per bucket a
     "hook_after_s": 0.0001, "hook_after_element_s": 1e-9,     # scheme synchronizes (optional, 0)
     "source": "how it was made",
     "params": [                   # gradient-ready order: the first ready first
       {"name": "decoder.head.weight", "numel": 4160, "dtype": "float32", "index": 5,
        "forward_s": 0.0002, "backward_s": 0.0031}, ...]}

`index` is the parameter's position in `model.parameters()` (definition order); `forward_s` is the
forward time of the module owning it (exclusive of child modules, shared among the module's
parameters by size); `backward_s` is the backward compute between the previous gradient being ready
(or backward starting) and this one. Times are medians over the recorded iterations.

`step_other_s` is the rest of a training step, from the optimizer's end to the next forward (the data
loader's batch, zero_grad, DDP's forward bookkeeping): the timeline runs it before the forward. The
`hook_*` fields are `zensim_hook`'s own work on a bucket it synchronizes with a scheme, as a fixed
part plus a part per bucket element: before the scheme's run (selecting the bucket's non-zeros) and
after it (writing the sum back into the bucket); the timeline runs them around the scheme's run of
every bucket synchronized by a scheme. `zensim layers record --script` measures all five; profiles
without them (older ones, the estimate and imported kinds) have 0: nothing priced.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from zensim.atomic import write_atomic
from zensim.errors import ConfigError

SCHEMA = "zensim-layers/1"
KINDS = ("measured", "estimate", "imported")
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
_TIME_KEYS = ("forward_s", "backward_tail_s", "optimizer_s", "step_other_s", "hook_before_s", "hook_before_element_s",
              "hook_after_s", "hook_after_element_s")


@dataclass(frozen=True)
class ParamTime:
    """One parameter tensor: size, element type, definition position, forward and backward seconds."""

    name: str
    numel: int
    index: int
    forward_s: float
    backward_s: float
    dtype: str = "float32"

    @property
    def nbytes(self) -> int:
        """Bytes of its gradient (what a dense all-reduce of it carries)."""
        return self.numel * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class LayerProfile:
    """A model's per-parameter compute on one device; `params` in gradient-ready order."""

    params: tuple[ParamTime, ...]
    forward_s: float
    backward_tail_s: float = 0.0
    optimizer_s: float = 0.0
    step_other_s: float = 0.0
    hook_before_s: float = 0.0
    hook_before_element_s: float = 0.0
    hook_after_s: float = 0.0
    hook_after_element_s: float = 0.0
    kind: str = "measured"
    device: str = ""
    workload: str = ""
    batch_size: int | None = None
    iterations: int = 1
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def backward_s(self) -> float:
        """The whole backward pass: every parameter's share plus the tail."""
        return float(sum(p.backward_s for p in self.params)) + self.backward_tail_s

    @property
    def compute_s(self) -> float:
        """Forward + backward + optimizer + the step's other time: the iteration time with free
        communication (and no hook)."""
        return self.forward_s + self.backward_s + self.optimizer_s + self.step_other_s

    def hook_work_s(self, numel: int) -> tuple[float, float]:
        """zensim_hook's host seconds on a bucket of `numel` elements it synchronizes with a scheme:
        (before the scheme's run, after it)."""
        return (self.hook_before_s + self.hook_before_element_s * numel,
                self.hook_after_s + self.hook_after_element_s * numel)

    @property
    def ready_s(self) -> np.ndarray:
        """Per parameter (ready order), seconds from backward start until its gradient is ready."""
        return np.cumsum([p.backward_s for p in self.params], dtype=np.float64)

    @property
    def numel(self) -> int:
        """Elements over all parameters."""
        return sum(p.numel for p in self.params)

    def by_name(self) -> dict[str, ParamTime]:
        """Parameters by name."""
        return {p.name: p for p in self.params}

    def scaled(self, factor: float) -> "LayerProfile":
        """Every time multiplied by `factor` (a slower or faster device of the same shape)."""
        params = tuple(replace(p, forward_s=p.forward_s * factor, backward_s=p.backward_s * factor) for p in self.params)
        return replace(self, params=params, **{key: getattr(self, key) * factor for key in _TIME_KEYS})

    def to_json(self) -> dict[str, Any]:
        """The file form (schema zensim-layers/1)."""
        out: dict[str, Any] = {"schema": SCHEMA, "kind": self.kind, "workload": self.workload, "device": self.device,
                               "batch_size": self.batch_size, "iterations": self.iterations}
        out.update({key: getattr(self, key) for key in _TIME_KEYS if key in _TIME_KEYS[:3] or getattr(self, key)})
        out["source"] = self.source
        if self.extra:
            out["extra"] = self.extra
        out["params"] = [asdict(p) for p in self.params]
        return out

    def save(self, path: str | Path) -> None:
        """Write the JSON file atomically."""
        write_atomic(path, json.dumps(self.to_json(), indent=1) + "\n")


def read_json(path: str | Path, what: str) -> Any:
    """The JSON document in `path`; a missing or unreadable file is a one-line ConfigError naming it as `what`."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON {what} ({str(exc).splitlines()[0]})") from None


def load_layers(path: str | Path) -> LayerProfile:
    """Read and validate a layer profile; any problem is a one-line ConfigError naming the file."""
    return parse_layers(read_json(path, "layer profile"), path)


def parse_layers(raw: object, where: str | Path) -> LayerProfile:
    """Validate a layer profile already read as JSON; errors name `where`."""
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise ConfigError(f"{where}: not a layer profile (expected \"schema\": \"{SCHEMA}\")")
    known = {"schema", "kind", "workload", "device", "batch_size", "iterations", "source", "extra", "params", *_TIME_KEYS}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    kind = raw.get("kind", "measured")
    if kind not in KINDS:
        raise ConfigError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    times = {key: _seconds(raw.get(key, 0.0), f"{where}: {key}") for key in _TIME_KEYS}
    if "forward_s" not in raw:
        raise ConfigError(f"{where}: forward_s missing")
    batch = raw.get("batch_size")
    if batch is not None and (not _is_int(batch) or batch < 1):
        raise ConfigError(f"{where}: batch_size must be a positive integer or null, got {batch!r}")
    iterations = raw.get("iterations", 1)
    if not _is_int(iterations) or iterations < 1:
        raise ConfigError(f"{where}: iterations must be a positive integer, got {iterations!r}")
    params = raw.get("params")
    if not isinstance(params, list) or not params:
        raise ConfigError(f"{where}: params must be a non-empty list")
    parsed = tuple(_param(p, f"{where}: params[{i}]") for i, p in enumerate(params))
    check_params(parsed, where)
    extra = raw.get("extra", {})
    if not isinstance(extra, dict):
        raise ConfigError(f"{where}: extra must be an object")
    return LayerProfile(parsed, kind=kind, device=str(raw.get("device", "")), workload=str(raw.get("workload", "")),
                        batch_size=batch, iterations=iterations, source=str(raw.get("source", "")), extra=extra,
                        **times)


def check_params(params: Sequence[ParamTime], where: str | Path) -> None:
    """ConfigError on duplicate names or definition indices."""
    for label, values in (("name", [p.name for p in params]), ("index", [p.index for p in params])):
        seen: set = set()
        for v in values:
            if v in seen:
                raise ConfigError(f"{where}: parameter {label} {v!r} appears twice")
            seen.add(v)


def _param(raw: object, where: str) -> ParamTime:
    """One entry of `params`."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be an object")
    unknown = sorted(set(raw) - {"name", "numel", "dtype", "index", "forward_s", "backward_s"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: name must be a non-empty string")
    numel, index = raw.get("numel"), raw.get("index")
    if not _is_int(numel) or numel < 1:
        raise ConfigError(f"{where} ({name}): numel must be a positive integer, got {numel!r}")
    if not _is_int(index) or index < 0:
        raise ConfigError(f"{where} ({name}): index must be a non-negative integer, got {index!r}")
    dtype = raw.get("dtype", "float32")
    if dtype not in DTYPE_BYTES:
        raise ConfigError(f"{where} ({name}): dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}")
    return ParamTime(name, numel, index, _seconds(raw.get("forward_s", 0.0), f"{where} ({name}): forward_s"),
                     _seconds(raw.get("backward_s"), f"{where} ({name}): backward_s"), dtype)


def _seconds(value: object, where: str) -> float:
    """A finite non-negative number of seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ConfigError(f"{where} must be a finite non-negative number of seconds, got {value!r}")
    return float(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def median_profile(runs: Iterable[LayerProfile]) -> LayerProfile:
    """Per-field medians of several profiles of the same parameters in the same ready order."""
    runs = list(runs)
    first = runs[0]
    for other in runs[1:]:
        if [p.name for p in other.params] != [p.name for p in first.params]:
            raise ValueError("profiles with different parameters or ready orders cannot be combined")

    def med(values: Iterable[float]) -> float:
        return float(np.median(np.fromiter(values, dtype=np.float64)))

    params = tuple(replace(p, forward_s=med(r.params[i].forward_s for r in runs),
                           backward_s=med(r.params[i].backward_s for r in runs)) for i, p in enumerate(first.params))
    return replace(first, params=params, iterations=len(runs),
                   **{key: med(getattr(r, key) for r in runs) for key in _TIME_KEYS})
