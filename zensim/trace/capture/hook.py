"""A DDP communication hook that records every rank's gradients, then all-reduces them as DDP would.

Two lines in any training script (after wrapping the model in DistributedDataParallel):

    from zensim.trace.capture import record_ddp
    record_ddp(ddp_model, "shard-{rank}.zt", iterations=5, warmup=100)

Each rank writes its own shard (an ordinary trace with one worker, its rank in the provenance);
`zensim trace merge shard-*.zt -o trace.zt` combines them. The hook maps every bucket back to
parameters through `bucket.parameters()` / `bucket.gradients()`, so DDP's bucket rebuild after
the first iteration (which reorders parameters) changes nothing. It sparsifies in place when a
top-k / DGC sparsifier is asked for, divides by the world size (a hook's result is not averaged
by DDP) and all-reduces the bucket: with natural sparsity, training is exactly as without it.
"""

from __future__ import annotations

import fnmatch
import platform
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from zensim.errors import ConfigError, TraceError
from zensim.trace.capture.record import Recorded, tensor_specs, to_chunk, to_dense, write_chunks
from zensim.trace.capture.sparsify import make_sparsifier
from zensim.trace.format import LayerSpec, TraceWriter


def select_params(names: Sequence[str], params: Sequence[str] | None = None, skip_params: Sequence[str] = ()) -> list[str]:
    """The parameter `names` to record, in model order: those matching a glob of `params` (all if None)
    and none of `skip_params` (fnmatch, case-sensitive: `embedding.*`, `*.bias`); a pattern that
    matches no parameter, or a selection left empty, is a ConfigError naming it."""
    for what, patterns in (("params", params or ()), ("skip_params", skip_params)):
        for pattern in patterns:
            if not fnmatch.filter(names, pattern):
                have = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
                raise ConfigError(f"{what}: {pattern!r} matches no trainable parameter of the model (it has {have})")
    chosen = [n for n in names if (params is None or any(fnmatch.fnmatchcase(n, p) for p in params))
              and not any(fnmatch.fnmatchcase(n, p) for p in skip_params)]
    if not chosen:
        raise ConfigError("params: no trainable parameter left to record (skip_params skips every one chosen)")
    return chosen


def check_shard_path(path: str, world: int) -> None:
    """ConfigError unless `path` can take the shards of `world` ranks: `{rank}` in it when world > 1,
    and its folder exists (checked before training, which may take long)."""
    if world > 1 and "{rank}" not in path:
        raise ConfigError(f"{path}: a shard path for {world} ranks must contain {{rank}}")
    folder = Path(path.replace("{rank}", "0")).absolute().parent
    if not folder.is_dir():
        raise ConfigError(f"{path}: folder {folder} does not exist")


def environment() -> dict[str, Any]:
    """Where a shard was made: the command line, torch and Python versions."""
    return {"command": shlex.join(sys.argv), "torch": torch.__version__, "python": platform.python_version()}


class DDPRecorder:
    """The hook's state: iteration count, this rank's sparsifier, the shard being written."""

    def __init__(
        self,
        model: DistributedDataParallel,
        path: str,
        iterations: int,
        warmup: int = 0,
        params: Sequence[str] | None = None,
        skip_params: Sequence[str] = (),
        sparsifier: str = "natural",
        density: float | None = None,
        values: bool = False,
        seed: int = 0,
        dense: bool = False,
        value_dtype: str = "float32",
        layers: dict[str, Sequence[LayerSpec]] | None = None,
        workload: str = "ddp",
        batch_size: int | None = None,
        provenance: dict[str, Any] | None = None,
        process_group: dist.ProcessGroup | None = None,
    ) -> None:
        if iterations < 1 or warmup < 0:
            raise ConfigError(f"record_ddp: iterations must be >= 1 and warmup >= 0, got {iterations}, {warmup}")
        self.group = process_group
        self.rank = dist.get_rank(process_group)
        self.world = dist.get_world_size(process_group)
        check_shard_path(path, self.world)
        self.path = path.format(rank=self.rank)
        module = model.module
        self.names = {id(p): name for name, p in module.named_parameters() if p.requires_grad}
        self.specs = tensor_specs(module, select_params(list(self.names.values()), params, skip_params), layers)
        self.recorded = {spec.name for spec in self.specs}
        self.sparsifier = make_sparsifier(sparsifier, density, seed + self.rank)
        self.iterations = iterations
        self.warmup = warmup
        self.values = values
        self.dense = dense
        self.value_dtype = value_dtype if values or dense else None
        self.step = 0
        self.pending: dict[str, Recorded] = {}
        shard = {"rank": self.rank, "world_size": self.world}
        self.header = {
            "workload": workload,
            "batch_size": batch_size,
            "provenance": {**environment(), "batch_size": batch_size, **(provenance or {}), "capture": "ddp hook",
                           "sparsifier": sparsifier, "gradients": "dense" if dense else "sent", "density": density,
                           "warmup_steps": warmup, "seed": seed, "shard": shard},
        }
        self.writer: TraceWriter | None = None

    @property
    def recording(self) -> bool:
        """Whether the current iteration is one of the recorded ones."""
        return self.warmup <= self.step < self.warmup + self.iterations

    @property
    def done(self) -> bool:
        """Whether every recorded iteration has been written and the shard closed."""
        return self.step >= self.warmup + self.iterations

    def bucket(self, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        """Sparsify and record each parameter of the bucket, then start the averaging all-reduce."""
        for param, grad in zip(bucket.parameters(), bucket.gradients()):
            name = self.names[id(param)]
            recorded = self.recording and name in self.recorded
            if recorded and self.dense:  # the whole gradient, before any selection
                self.pending[name] = to_dense(grad)
            if recorded or self.sparsifier.changes_gradient:
                sel = self.sparsifier.select(name, grad.view(-1))
                if self.sparsifier.changes_gradient:
                    grad.view(-1).copy_(sel.sent)
                if recorded and not self.dense:
                    self.pending[name] = to_chunk(sel)
        if bucket.is_last():
            self.end_iteration()
        buffer = bucket.buffer()
        buffer.div_(self.world)  # divide first, as DDP's default hook does
        work = dist.all_reduce(buffer, group=self.group, async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0])

    def end_iteration(self) -> None:
        """After the last bucket of an iteration: write the recorded chunks, close the shard at the end."""
        if self.recording:
            missing = self.recorded - set(self.pending)
            if missing:
                raise TraceError(f"{self.path}: parameter {sorted(missing)[0]!r} had no gradient in iteration {self.step}")
            if self.writer is None:
                self.writer = TraceWriter(self.path, self.specs, workers=1, iterations=self.iterations,
                                          value_dtype=self.value_dtype, **self.header)
            write_chunks(self.writer, self.step - self.warmup, 0, self.pending, self.values)
            self.pending = {}
        self.step += 1
        if self.writer is not None and self.done:
            self.writer.close()
            self.writer = None

    def set_batch_size(self, size: int | None, source: str) -> None:
        """The per-rank batch size for the header and the provenance (with where it comes from); only
        until the shard is begun."""
        if self.writer is None and not self.done:
            self.header["batch_size"] = size
            self.header["provenance"].update(batch_size=size, batch_size_source=source)

    def abort(self) -> None:
        """Give up an unfinished shard (no file is left)."""
        if self.writer is not None:
            self.writer.abort()
            self.writer = None


def record_ddp(model: DistributedDataParallel, path: str, iterations: int, **options: Any) -> DDPRecorder:
    """Register the recording hook on `model`; `path` may contain `{rank}`. Options: see DDPRecorder."""
    recorder = DDPRecorder(model, path, iterations, **options)
    model.register_comm_hook(recorder, _hook)
    return recorder


def _hook(recorder, bucket):  # type: ignore[no-untyped-def]
    # unannotated: DDP rejects a `bucket` annotation that is not the GradBucket class itself, and
    # `from __future__ import annotations` would turn it into a string
    return recorder.bucket(bucket)
