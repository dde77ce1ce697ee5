"""Capture a trace from a workload trained with virtual workers: warm-up steps, then recorded ones."""

from __future__ import annotations

import platform
import sys
from typing import Any

import torch
from tqdm import tqdm

from zensim.errors import ConfigError
from zensim.trace.capture.record import tensor_specs, write_chunks
from zensim.trace.capture.sparsify import make_sparsifier
from zensim.trace.capture.virtual import VirtualWorkers
from zensim.trace.capture.workloads import Workload
from zensim.trace.format import TraceWriter


def capture(
    workload: Workload,
    output: str,
    workers: int,
    iterations: int,
    warmup: int = 0,
    sparsifier: str | None = None,
    density: float | None = None,
    values: bool = False,
    progress: bool = True,
) -> None:
    """Train `workload` with `workers` virtual workers for warmup + iterations steps, recording the last ones."""
    for name, value, low in (("--workers", workers, 1), ("--iterations", iterations, 1), ("--warmup", warmup, 0)):
        if value < low:
            raise ConfigError(f"{name} {value}: must be at least {low}")
    kind = sparsifier or workload.sparsifier
    if kind == "natural" and density is not None:
        raise ConfigError(f"--density {density}: only for --sparsifier topk or dgc")
    density = workload.density if density is None and kind != "natural" else density
    sparsifiers = [make_sparsifier(kind, density, workload.seed + w) for w in range(workers)]
    recorded = workload.recorded()
    specs = tensor_specs(workload.model, recorded, workload.layers())
    optimizer = workload.optimizer()
    runner = VirtualWorkers(workload.model, optimizer, workload.loss, sparsifiers, recorded)
    provenance = provenance_of(workload, optimizer, kind, density, warmup, "virtual workers")
    with TraceWriter(output, specs, workers=workers, iterations=iterations,
                     value_dtype="float32" if values else None, batch_size=workload.batch_size,
                     workload=workload.name, provenance=provenance) as writer:
        bar = tqdm(range(warmup + iterations), desc=f"capture {workload.name} x{workers}", unit="it",
                   disable=not progress, file=sys.stderr)
        for step in bar:
            bar.set_postfix_str("warm-up" if step < warmup else "recording")
            chunks = runner.step([workload.batch(step, w, workers) for w in range(workers)])
            if step >= warmup:
                for w, mine in enumerate(chunks):
                    write_chunks(writer, step - warmup, w, mine, values)


def provenance_of(
    workload: Workload, optimizer: torch.optim.Optimizer, kind: str, density: float | None, warmup: int, path: str
) -> dict[str, Any]:
    """How a trace was made: workload, data, sparsity source, training before the first recorded step."""
    return {
        "capture": path,
        "model": workload.meta(),
        "sparsifier": kind,
        "density": density,
        "seed": workload.seed,
        "warmup_steps": warmup,
        "optimizer": type(optimizer).__name__,
        "lr": optimizer.param_groups[0]["lr"],
        "torch": torch.__version__,
        "python": platform.python_version(),
        "command": " ".join(sys.argv),
    }
