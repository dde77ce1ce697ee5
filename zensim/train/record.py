"""Measure a built-in workload's layer profile by training it on the device at hand with the recorder's hooks."""

from __future__ import annotations

import sys
from typing import Any

import torch
from tqdm import tqdm

from zensim.errors import ConfigError
from zensim.train.clocks import Clock, clock_for, describe_device
from zensim.train.hooks import LayerRecorder
from zensim.train.layers import LayerProfile


def to_device(batch: Any, device: torch.device) -> Any:
    """A micro-batch (tensors, possibly nested in tuples/lists/dicts) moved to `device`."""
    return torch.utils._pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, batch)


def train_steps(workload: Any, steps: int, device: torch.device, clock: Clock, progress: bool = False,
                desc: str = "layers", foreach: bool | None = None) -> LayerRecorder:
    """Train `workload` (one worker's micro-batches) for `steps` steps on `device` under a recorder;
    `foreach` sets the optimizer's multi-tensor mode (None: torch's default for the device)."""
    model = workload.model.to(device)
    optimizer = workload.optimizer()
    if foreach is not None:
        for group in optimizer.param_groups:
            group["foreach"] = foreach
    recorder = LayerRecorder(model, optimizer, clock)
    try:
        for step in tqdm(range(steps), desc=desc, unit="step", disable=None if progress else True, file=sys.stderr, leave=False):
            batch = to_device(workload.batch(step, 0, 1), device)
            optimizer.zero_grad(set_to_none=True)
            workload.loss(model, batch).backward()
            optimizer.step()
    finally:
        recorder.detach()
    return recorder


def record_workload(workload: Any, device: str | torch.device = "cpu", iterations: int = 10, warmup: int = 3,
                    progress: bool = False) -> LayerProfile:
    """The measured layer profile of a built-in workload: `warmup` untimed steps, medians of `iterations`.

    On a GPU the marks are CUDA events (the GPU's own time); on a CPU wall time, so other load on the
    machine shows in the figures (the profile's source says which device and how many threads)."""
    if iterations < 1 or warmup < 0:
        raise ConfigError(f"--iterations {iterations} / --warmup {warmup}: need at least 1 timed step and warmup >= 0")
    device = torch.device(device)
    recorder = train_steps(workload, warmup + iterations, device, clock_for(device), progress)
    return recorder.profile(
        warmup, kind="measured", device=describe_device(device), workload=workload.name,
        batch_size=workload.batch_size,
        source=f"zensim layers record: {workload.name}, batch {workload.batch_size}, medians of {iterations} steps "
               f"after {warmup} warm-up steps, hooks around real training (forward pre/post, "
               f"post-accumulate-grad, optimizer step hooks)")
