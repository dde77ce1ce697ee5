"""Layer profiles from torch.profiler traces: annotate the model, profile training anywhere, import the trace.

On the machine with the GPU (any training loop; torch only, no other zensim code runs there):

    from zensim.train.kineto import annotate
    marks = annotate(model, optimizer)             # named annotations at the recorder's events
    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for step in range(8):
            ...one training step...
    prof.export_chrome_trace("steps.json")

Then `zensim layers import steps.json --warmup 3 -o model.layers.json`. The annotations are the
events of `LayerRecorder` (`zensim::step`, `zensim::enter::<module>::<param>:<numel>,...`,
`zensim::leave`, `zensim::forward_end`, `zensim::backward`, `zensim::ready::<param>::<numel>::<index>::
<dtype>`, `zensim::backward_end`, `zensim::optimizer`, `zensim::optimizer_end`), so the trace carries
the parameter table too. An annotation is a CPU-side instant; on a GPU its time is when the device
had finished everything launched before it (the latest end of a kernel, copy or memset whose launch
came earlier), or its CPU time if the device was idle by then: what a CUDA event recorded at that
point would read. All streams count as one (the usual single-stream training step).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from zensim.errors import ConfigError
from zensim.train.clocks import WallClock
from zensim.train.hooks import LayerRecorder, ParamInfo, StepEvents
from zensim.train.layers import LayerProfile, read_json

PREFIX = "zensim::"
_GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
_LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}


class ProfilerMarks:
    """A Clock that writes every mark as a torch.profiler annotation; times come from the exported trace."""

    def mark(self, label: str) -> None:
        """A zero-length `zensim::<label>` range at this point."""
        with torch.profiler.record_function(PREFIX + label):
            pass

    def settle(self) -> None:
        """Annotations are timed by the profiler: import the exported trace."""
        raise TypeError("annotate() marks are timed by torch.profiler: export the trace and import it")

    seconds = settle


def annotate(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None) -> LayerRecorder:
    """Hooks that write the recorder's events into a running torch.profiler trace; `.detach()` removes them."""
    return LayerRecorder(model, optimizer, clock=ProfilerMarks())


def _load(path: str | Path) -> tuple[list[dict[str, Any]], str]:
    """The trace events of a Chrome trace file ({"traceEvents": [...]} or a bare list) and the device
    the steps ran on: the GPU deviceProperties names when the trace holds device work, else 'cpu'
    (torch.profiler lists the machine's GPUs even for a CPU-only run)."""
    raw = read_json(path, "Chrome trace")
    events = raw.get("traceEvents") if isinstance(raw, dict) else raw
    if not isinstance(events, list):
        raise ConfigError(f"{path}: not a Chrome trace (no traceEvents list)")
    events = [e for e in events if isinstance(e, dict)]
    props = raw.get("deviceProperties") if isinstance(raw, dict) else None
    on_gpu = any(e.get("cat") in _GPU_CATS for e in events)
    named = isinstance(props, list) and props and isinstance(props[0], dict)
    device = str(props[0].get("name", "gpu")) if on_gpu and named else "gpu" if on_gpu else "cpu"
    return events, device


def device_times(events: list[dict[str, Any]], marks: np.ndarray) -> np.ndarray:
    """Seconds of each CPU mark time (µs) on the device: the latest end of device work launched before
    it, or the mark itself when the device was idle; CPU times unchanged without device work."""
    by_corr = {}
    for e in events:
        if e.get("cat") in _GPU_CATS and "correlation" in e.get("args", {}):
            end = float(e["ts"]) + float(e.get("dur", 0.0))
            corr = e["args"]["correlation"]
            by_corr[corr] = max(by_corr.get(corr, end), end)
    launches = sorted((float(e["ts"]), by_corr[e["args"]["correlation"]]) for e in events
                      if e.get("cat") in _LAUNCH_CATS and e.get("args", {}).get("correlation") in by_corr)
    if not launches:
        return marks / 1e6
    launch_ts = np.array([t for t, _ in launches])
    done = np.maximum.accumulate(np.array([end for _, end in launches]))
    before = np.searchsorted(launch_ts, marks, side="right")
    finished = np.where(before > 0, done[np.maximum(before - 1, 0)], -np.inf)
    return np.maximum(marks, finished) / 1e6


def import_trace(path: str | Path, warmup: int = 0, **meta: Any) -> LayerProfile:
    """The layer profile of the annotated steps of a torch.profiler trace (medians after `warmup`)."""
    events, device = _load(path)
    marks = sorted((float(e["ts"]), e["name"][len(PREFIX):]) for e in events
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith(PREFIX) and "ts" in e)
    if not marks:
        raise ConfigError(f"{path}: no zensim annotations (call zensim.train.kineto.annotate(model) before profiling)")
    try:
        params, owned = _tables(label for _, label in marks)
    except ValueError:
        raise ConfigError(f"{path}: malformed zensim annotation") from None
    state = StepEvents(params, owned, any(label == "optimizer" for _, label in marks), WallClock())
    handlers = {
        "step": lambda t, _: state.forward_start(t),
        "enter": lambda t, rest: state.enter(rest.rpartition("::")[0], t),
        "leave": lambda t, _: state.leave(t),
        "forward_end": lambda t, _: state.forward_end(t),
        "backward": lambda t, _: state.backward_start(t),
        "ready": lambda t, rest: state.ready(rest.rsplit("::", 3)[0], t),
        "backward_end": lambda t, _: state.backward_end(t),
        "optimizer": lambda t, _: state.optimizer_start(t),
        "optimizer_end": lambda t, _: state.optimizer_end(t),
    }
    for t, (_, label) in zip(device_times(events, np.array([t for t, _ in marks])).tolist(), marks):
        kind, _, rest = label.partition("::")
        if kind in handlers:
            handlers[kind](t, rest)
    meta.setdefault("device", device)
    meta.setdefault("source", f"torch.profiler trace {path}")
    return state.profile(warmup, kind="imported", **meta)


def _tables(labels: Any) -> tuple[dict[str, ParamInfo], dict[str, list[tuple[str, int]]]]:
    """The parameter table (from `ready` annotations) and module ownership (from `enter` ones)."""
    params: dict[str, ParamInfo] = {}
    owned: dict[str, list[tuple[str, int]]] = {}
    for label in labels:
        kind, _, rest = label.partition("::")
        if kind == "ready":
            name, numel, index, dtype = rest.rsplit("::", 3)
            params[name] = ParamInfo(int(numel), int(index), dtype)
        elif kind == "enter":
            module, _, own = rest.rpartition("::")
            owned[module] = [(n, int(k)) for n, k in (item.rsplit(":", 1) for item in own.split(","))]
    return params, owned
