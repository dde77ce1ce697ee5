"""Capture a trace from a workload trained with virtual workers: warm-up steps, then recorded ones."""

from __future__ import annotations

import platform
import sys
from typing import Any

import torch
from tqdm import tqdm

from zensim.request import at_least
from zensim.torchcache import optimizer_of
from zensim.trace.capture.record import tensor_specs, write_chunks
from zensim.trace.capture.sparsify import make_sparsifier
from zensim.trace.capture.virtual import VirtualWorkers
from zensim.trace.capture.workloads import Workload
from zensim.trace.format import TraceWriter


def virtual_runner(workload: Workload, workers: int, sparsifier: str | None, density: float | None,
                   dense: bool = False) -> VirtualWorkers:
    """Virtual workers training `workload`, each with its own sparsifier (workload defaults if None);
    `dense` records whole gradients before selection."""
    at_least("--ranks", workers, 1)
    kind = sparsifier or workload.sparsifier
    density = workload.density if density is None and kind != "natural" else density
    sparsifiers = [make_sparsifier(kind, density, workload.seed + w) for w in range(workers)]
    return VirtualWorkers(workload.model, optimizer_of(workload), workload.loss, sparsifiers, workload.recorded(), dense)


def check_steps(iterations: int, warmup: int) -> None:
    """ConfigError unless at least one iteration is recorded after a non-negative warm-up."""
    at_least("--iterations", iterations, 1)
    at_least("--warmup", warmup, 0)


def step_batches(workload: Workload, step: int, workers: int) -> list[Any]:
    """Every worker's micro-batch of one training step."""
    return [workload.batch(step, w, workers) for w in range(workers)]


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
    dense: bool = False,
    value_dtype: str = "float32",
) -> None:
    """Train `workload` with `workers` virtual workers for warmup + iterations steps, recording the last
    ones: what each worker sent (indices, and values if `values`), or with `dense` each worker's whole
    gradient before selection, in `value_dtype`."""
    check_steps(iterations, warmup)
    runner = virtual_runner(workload, workers, sparsifier, density, dense)
    specs = tensor_specs(workload.model, workload.recorded(), workload.layers())
    provenance = {**provenance_of(workload, runner, warmup), "gradients": "dense" if dense else "sent"}
    with TraceWriter(output, specs, workers=workers, iterations=iterations,
                     value_dtype=value_dtype if values or dense else None, batch_size=workload.batch_size,
                     workload=workload.name, provenance=provenance) as writer:
        bar = tqdm(range(warmup + iterations), desc=f"capture {workload.name} x{workers}", unit="it",
                   disable=None if progress else True, file=sys.stderr)
        for step in bar:
            bar.set_postfix_str("warm-up" if step < warmup else "recording")
            chunks = runner.step(step_batches(workload, step, workers))
            if step >= warmup:
                for w, mine in enumerate(chunks):
                    write_chunks(writer, step - warmup, w, mine, values)


def provenance_of(workload: Workload, runner: VirtualWorkers, warmup: int) -> dict[str, Any]:
    """How a trace was made: workload, data, sparsity source, training before the first recorded step."""
    first = runner.sparsifiers[0]
    return {
        "capture": "virtual workers",
        "model": workload.meta(),
        "sparsifier": first.name,
        "density": first.density,
        "seed": workload.seed,
        "warmup_steps": warmup,
        "optimizer": type(runner.optimizer).__name__,
        "lr": runner.optimizer.param_groups[0]["lr"],
        "torch": torch.__version__,
        "python": platform.python_version(),
        "command": " ".join(sys.argv),
    }
