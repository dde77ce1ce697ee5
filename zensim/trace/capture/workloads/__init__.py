"""Built-in workloads for `zensim capture`, by name (the registry is zensim.trace.capture.names.WORKLOADS)."""

from __future__ import annotations

import importlib

from zensim.errors import ConfigError
from zensim.trace.capture.names import WORKLOADS
from zensim.trace.capture.workloads.base import Workload


def workload_class(name: str) -> type[Workload]:
    """The Workload subclass registered as `name`; ConfigError naming the choices if unknown."""
    if name not in WORKLOADS:
        raise ConfigError(f"--workload {name}: unknown (choose from {', '.join(WORKLOADS)})")
    module, cls = WORKLOADS[name].rsplit(".", 1)
    return getattr(importlib.import_module(f"zensim.trace.capture.workloads.{module}"), cls)


def make_workload(name: str, batch_size: int | None, seed: int, corpus: str | None = None) -> Workload:
    """Build a built-in workload (`Workload.create`): the language models load their corpus."""
    return workload_class(name).create(batch_size, seed, corpus)


__all__ = ["WORKLOADS", "Workload", "make_workload", "workload_class"]
