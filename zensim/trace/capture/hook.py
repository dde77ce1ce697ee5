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

from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from zensim.errors import ConfigError, TraceError
from zensim.trace.capture.record import Recorded, tensor_specs, to_chunk, to_dense, write_chunks
from zensim.trace.capture.sparsify import make_sparsifier
from zensim.trace.format import LayerSpec, TraceWriter


class DDPRecorder:
    """The hook's state: iteration count, this rank's sparsifier, the shard being written."""

    def __init__(
        self,
        model: DistributedDataParallel,
        path: str,
        iterations: int,
        warmup: int = 0,
        params: Sequence[str] | None = None,
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
        if self.world > 1 and "{rank}" not in path:
            raise ConfigError(f"{path}: a shard path for {self.world} ranks must contain {{rank}}")
        self.path = path.format(rank=self.rank)
        module = model.module
        self.names = {id(p): name for name, p in module.named_parameters() if p.requires_grad}
        self.specs = tensor_specs(module, params, layers)
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
            "provenance": {**(provenance or {}), "capture": "ddp hook", "sparsifier": sparsifier,
                           "gradients": "dense" if dense else "sent",
                           "density": density, "warmup_steps": warmup, "seed": seed, "shard": shard},
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
