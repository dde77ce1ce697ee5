"""Clocks for the layer recorder: wall time on a CPU, CUDA events on a GPU, a modelled clock for estimates.

A clock hands out opaque marks (`mark(label)`, the label naming the event) at points of a training step and turns two of them into
seconds once the step is over (`seconds(a, b)`, after `settle()`). CUDA marks are events recorded on
the current stream, so a mark costs no synchronization and the seconds are the GPU's own; CPU marks are
`time.perf_counter()`; a ModelClock's are modelled seconds that `zensim.train.roofline` advances.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import torch

from zensim.errors import ConfigError


class Clock(Protocol):
    """Marks now; seconds between two marks once settled."""

    def mark(self, label: str) -> Any:
        """An opaque mark of the current point of the computation (`label` names the event)."""

    def settle(self) -> None:
        """Wait until every mark handed out so far has a time (a GPU synchronization)."""

    def seconds(self, start: Any, end: Any) -> float:
        """Seconds from mark `start` to mark `end`."""


class WallClock:
    """Wall time (`time.perf_counter`): right for CPU training, where every operation is synchronous."""

    def mark(self, label: str = "") -> float:
        """Now."""
        return time.perf_counter()

    def settle(self) -> None:
        """Nothing to wait for."""

    def seconds(self, start: float, end: float) -> float:
        """end - start."""
        return end - start


class CudaClock:
    """CUDA events on the current stream: the GPU's time, without synchronizing at every mark."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def mark(self, label: str = "") -> torch.cuda.Event:
        """An event recorded on the current stream of the device."""
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self.device))
        return event

    def settle(self) -> None:
        """Synchronize the device."""
        torch.cuda.synchronize(self.device)

    def seconds(self, start: torch.cuda.Event, end: torch.cuda.Event) -> float:
        """Elapsed GPU time between the two events."""
        return start.elapsed_time(end) / 1e3


class ModelClock(WallClock):
    """Modelled seconds: `now` is advanced by a RooflineMode, marks read it."""

    def __init__(self) -> None:
        self.now = 0.0

    def mark(self, label: str = "") -> float:
        """The modelled time so far."""
        return self.now


def torch_device(spec: str, what: str = "--device") -> torch.device:
    """The torch device `spec` names, checked against this machine: one-line ConfigError for a name
    torch does not parse, CUDA where none is, or a GPU index beyond the machine's count."""
    try:
        device = torch.device(spec)
    except RuntimeError:
        raise ConfigError(f"{what} {spec}: not a torch device") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"{what} {spec}: CUDA is not available on this machine")
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise ConfigError(f"{what} {spec}: this machine has {count} CUDA device(s)")
    elif device.type != "cpu":
        raise ConfigError(f"{what} {spec}: only cpu and cuda devices are supported")
    return device


def clock_for(device: torch.device) -> Clock:
    """The clock that times work on `device`: CUDA events for a GPU, wall time otherwise."""
    return CudaClock(device) if device.type == "cuda" else WallClock()


def describe_device(device: torch.device) -> str:
    """A line naming the device the profile was measured on (GPU name, or CPU and its threads)."""
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (torch {torch.__version__})"
    import platform

    return f"cpu: {platform.machine()} {platform.processor() or ''}".strip() + \
        f", {torch.get_num_threads()} threads (torch {torch.__version__})"
