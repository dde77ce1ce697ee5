"""Measure a layer profile by training on the device at hand with the recorder's hooks: a built-in
workload (`record_workload`), or the first DDP model of any training script (`record_script`).

Both record the host's figures beside the times (`extra["host"]`): the load average before and after
(os.getloadavg), the number of CPUs, and the wall and CPU seconds of the timed steps (of the thread
running them: marks of a HostClock, taken with the recorder's). The median step's CPU time well below
its wall time (under BUSY_BELOW of it) means the steps waited: for a processor on a busy machine (other processes runnable), or for
something else (a sleep, I/O, a GPU), so the profile is slower than the model on a quiet machine;
the profile then carries a `warning` and the command prints it on stderr.

`record_script` also measures what a script's step does beside the model and what `zensim_hook` would
do on its buckets (docs/iteration.md): `step_other_s`, the median wall time from a step's end (its
optimizer's) to the next step's forward (`step_other`); and the hook's own work on a bucket, fitted
over buckets of the model's last gradient (`hook_work`).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from zensim.ddp.hook import natural_select, write_back
from zensim.errors import ConfigError
from zensim.script import batch_size_of, check_script, one_rank_world, run_script
from zensim.torchcache import optimizer_of
from zensim.train.clocks import Clock, clock_for, describe_device
from zensim.train.hooks import LayerRecorder, StepEvents
from zensim.train.layers import LayerProfile

BUSY_BELOW = 0.8  # CPU seconds per wall second of the timed steps below which the machine is called busy
HOOK_FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # the buckets `hook_work` times: these shares of the model's gradient
HOOK_REPEATS = 21  # runs per bucket, the median kept
MARKS = "hooks around real training (forward pre/post, post-accumulate-grad, optimizer step hooks)"


class HostClock:
    """Another clock's marks with the host's wall and process CPU time beside them: seconds are the
    wrapped clock's (CUDA events on a GPU), the host figures come from the pairs (`host_figures`)."""

    def __init__(self, inner: Clock) -> None:
        self.inner = inner

    def mark(self, label: str = "") -> tuple[Any, float, float]:
        """(the wrapped clock's mark, wall seconds, CPU seconds of this thread)."""
        return self.inner.mark(label), time.perf_counter(), time.thread_time()

    def settle(self) -> None:
        """The wrapped clock's."""
        self.inner.settle()

    def seconds(self, start: tuple, end: tuple) -> float:
        """The wrapped clock's seconds between the two marks."""
        return self.inner.seconds(start[0], end[0])


def host_figures(events: StepEvents, warmup: int, load_before: tuple[float, ...]) -> dict[str, Any]:
    """The load and the host's wall and CPU seconds of the steps after `warmup` (HostClock marks, from
    the step's start to its optimizer's end, or backward's): totals, the median step's, and a warning
    when the median step's CPU / wall is below BUSY_BELOW."""
    steps = events.steps[warmup:]
    ends = [s.optimizer_end if s.optimizer_end is not None else s.backward_end for s in steps]
    wall = np.array([end[1] - s.forward_start[1] for s, end in zip(steps, ends)])
    cpu = np.array([end[2] - s.forward_start[2] for s, end in zip(steps, ends)])
    load_after = os.getloadavg()
    ratio = float(np.median(cpu / np.maximum(wall, 1e-12)))  # the median step's, as the profile's times are medians
    out: dict[str, Any] = {"load_before": list(load_before), "load_after": list(load_after), "cpus": os.cpu_count(),
                           "steps": len(steps), "wall_s": float(wall.sum()), "cpu_s": float(cpu.sum()),
                           "step_wall_s": float(np.median(wall)), "step_cpu_s": float(np.median(cpu)),
                           "cpu_per_wall": ratio, "busy": ratio < BUSY_BELOW}
    if out["busy"]:
        out["warning"] = (f"the median timed step took {np.median(wall) * 1e3:.3g} ms of wall time and "
                          f"{np.median(cpu) * 1e3:.3g} ms of CPU ({ratio:.0%}; load average {load_before[0]:.1f} -> "
                          f"{load_after[0]:.1f} on {os.cpu_count()} CPUs): the machine was busy or the steps waited, "
                          "so this profile is slower than the model; record it on a quiet machine")
    return out


def step_other(events: StepEvents, warmup: int) -> float:
    """The median wall seconds (HostClock marks) from a step's end (its optimizer's, or backward's) to the
    next step's forward, over the steps after `warmup` (the first step's has none before it)."""
    steps = events.steps
    ends = [s.optimizer_end if s.optimizer_end is not None else s.backward_end for s in steps]
    gaps = [steps[k].forward_start[1] - ends[k - 1][1] for k in range(max(warmup, 1), len(steps))]
    return float(np.median(gaps)) if gaps else 0.0


def hook_work(flat: torch.Tensor, repeats: int = HOOK_REPEATS) -> dict[str, float]:
    """zensim_hook's own work on buckets of gradient `flat` (a model's gradients laid end to end, as DDP's
    buckets hold them) without the scheme's run, fitted as seconds = fixed + per element x elements
    (least squares, each part at least 0): before the run, the bucket's non-zeros selected
    (`natural_select`) and divided by the world size; after it, the selection written back into the
    bucket (`write_back`). Buckets of HOOK_FRACTIONS of `flat`'s elements, each the median wall time of
    `repeats` runs. Profile fields hook_{before,after}_s and hook_{before,after}_element_s."""
    sizes, before, after = [], [], []
    for share in HOOK_FRACTIONS:
        bucket = flat[:max(1, round(flat.numel() * share))].clone()
        runs = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            chunk = natural_select(bucket)
            _ = chunk.values / 2  # the division by the world size
            t1 = time.perf_counter()
            write_back(bucket, chunk)  # the bucket unchanged, for the next run
            t2 = time.perf_counter()
            runs.append((t1 - t0, t2 - t1))
        sizes.append(bucket.numel())
        before.append(float(np.median([r[0] for r in runs])))
        after.append(float(np.median([r[1] for r in runs])))
    out = {}
    for name, seconds in (("before", before), ("after", after)):
        slope, fixed = np.polyfit(np.array(sizes, np.float64), np.array(seconds), 1) if len(set(sizes)) > 1 else (
            0.0, seconds[-1])
        out[f"hook_{name}_s"] = max(float(fixed), 0.0)
        out[f"hook_{name}_element_s"] = max(float(slope), 0.0)
    return out


def to_device(batch: Any, device: torch.device) -> Any:
    """A micro-batch (tensors, possibly nested in tuples/lists/dicts) moved to `device`."""
    return torch.utils._pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, batch)


def train_steps(workload: Any, steps: int, device: torch.device, clock: Clock, progress: bool = False,
                desc: str = "layers", foreach: bool | None = None) -> LayerRecorder:
    """Train `workload` (one worker's micro-batches) for `steps` steps on `device` under a recorder;
    `foreach` sets the optimizer's multi-tensor mode (None: torch's default for the device)."""
    model = workload.model.to(device)
    optimizer = optimizer_of(workload)
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
    load = os.getloadavg()
    recorder = train_steps(workload, warmup + iterations, device, HostClock(clock_for(device)), progress)
    return recorder.profile(
        warmup, kind="measured", device=describe_device(device), workload=workload.name,
        batch_size=workload.batch_size, extra={"host": host_figures(recorder, warmup, load)},
        source=f"zensim layers record: {workload.name}, batch {workload.batch_size}, medians of {iterations} steps "
               f"after {warmup} warm-up steps, {MARKS}")


def record_script(script: str, script_args: list[str], iterations: int = 10, warmup: int = 3,
                  batch_size: int | None = None) -> LayerProfile:
    """The measured layer profile of the first DistributedDataParallel model `script` builds, run here as
    __main__ with `script_args` (zensim.script): `warmup` untimed steps, medians of the next `iterations`.

    One process: a world of 1 (torchrun's variables are set for it when absent; a larger world is
    refused, its communication would enter backward). The device is the model's, the optimizer any
    whose step follows backward; the batch size the one given, else the script's DataLoaders'."""
    check_script(script, "--script")
    if iterations < 1 or warmup < 0:
        raise ConfigError(f"--iterations {iterations} / --warmup {warmup}: need at least 1 timed step and warmup >= 0")
    found: list[tuple[LayerRecorder, torch.device, torch.nn.Module]] = []
    loaders: list[int | None] = []

    def on_ddp(model: torch.nn.parallel.DistributedDataParallel) -> None:
        if not found:
            device = next(model.module.parameters()).device
            found.append((LayerRecorder(model.module, clock=HostClock(clock_for(device)), every_optimizer=True), device,
                          model.module))

    load = os.getloadavg()
    try:
        with one_rank_world("record a layer profile in one process (no torchrun): several ranks' "
                            "communication would enter backward"):
            run_script(script, script_args, on_ddp, loaders.append)
    finally:
        for recorder, _, _ in found:
            recorder.detach()
    if not found:
        raise ConfigError(f"--script {script}: the script built no DistributedDataParallel model")
    recorder, device, module = found[0]
    if len(recorder.steps) < warmup + iterations:
        raise ConfigError(f"--script {script}: training ran {len(recorder.steps)} complete steps, fewer than "
                          f"--warmup {warmup} + --iterations {iterations}")
    del recorder.steps[warmup + iterations:]
    batch, batch_source = batch_size_of(batch_size, loaders)
    name = Path(script).stem
    profile = recorder.profile(
        warmup, kind="measured", device=describe_device(device), workload=name, batch_size=batch,
        extra={"host": host_figures(recorder, warmup, load), "script": script, "script_args": list(script_args),
               "batch_size_source": batch_source},
        source=f"zensim layers record --script {script}: its first DDP model, medians of {iterations} steps after "
               f"{warmup} warm-up steps, {MARKS}; the step's other time between steps; zensim_hook's selection and "
               f"write-back timed on {len(HOOK_FRACTIONS)} buckets of the last gradient, medians of {HOOK_REPEATS}, "
               "fitted per element")
    params = dict(module.named_parameters())
    grads = [params[p.name].grad for p in profile.params]
    if any(g is None for g in grads):  # the script let go of its gradients: nothing to time the hook on
        return replace(profile, step_other_s=step_other(recorder, warmup))
    with torch.no_grad():
        flat = torch.cat([g.reshape(-1) for g in grads])
    return replace(profile, step_other_s=step_other(recorder, warmup), **hook_work(flat))
