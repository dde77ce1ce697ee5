"""`zensim capture --script SCRIPT --ranks N`: N ranks of an unmodified DDP script in one process.

The script runs once, in-process, in a world of one (torchrun's variables set for it), with one model.
Its DistributedSampler is built for rank 0 of N, and its DataLoader over that sampler is rebuilt with
a batch sampler that yields, per step, the micro-batch that a DistributedSampler gives rank 0 of N,
then rank 1's, ..., rank N-1's (same dataset, seed, shuffle, drop_last and epoch, see `set_epoch`).
The script's loop therefore runs N times per step, once per virtual rank. A DDP communication hook
counts backward passes: backward k is virtual rank k mod N of step k // N; it records that rank's
non-zero elements of every recorded parameter and adds its gradient / N to a running sum. Backward
passes of ranks 0..N-2 update nothing (an optimizer step pre-hook drops their gradients, so a step of
any optimizer that skips parameters without a gradient is empty); rank N-1's backward hands the sum
of all N to the optimizer: one update with the average, as N-rank DDP makes. Memory: the script's one
model plus one gradient-sized sum; chunks stream to a temporary file (TraceWriter), renamed into place
when the script has ended and its run was one virtual ranks can record. docs/capture.md says what is
exact and what is not.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.optim.optimizer import register_optimizer_step_pre_hook
from torch.utils.data import DataLoader, DistributedSampler, Sampler

from zensim.errors import ConfigError
from zensim.request import at_least
from zensim.script import batch_size_of, check_script, one_rank_world, run_script
from zensim.trace.capture.hook import check_shard_path, environment, select_params
from zensim.trace.capture.record import Recorded, tensor_specs, to_chunk, write_chunks
from zensim.trace.capture.run import check_steps
from zensim.trace.capture.sparsify import Sparsifier
from zensim.trace.format import TraceWriter


class RankBatches(Sampler[list[int]]):
    """Batches of N virtual ranks in turn: step s yields rank 0's s-th micro-batch, then rank 1's, ...;
    rank r's are those of `sampler` (a DistributedSampler of N replicas) with its rank set to r."""

    def __init__(self, sampler: DistributedSampler, batch_size: int, drop_last: bool) -> None:
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __len__(self) -> int:
        per_rank = len(self.sampler) // self.batch_size if self.drop_last else -(-len(self.sampler) // self.batch_size)
        return per_rank * self.sampler.num_replicas

    def __iter__(self) -> Iterator[list[int]]:
        ranks = []
        for r in range(self.sampler.num_replicas):  # copies: the script's sampler keeps rank 0 and its epoch
            mine = copy.copy(self.sampler)
            mine.rank = r
            ranks.append(iter(mine))
        while True:
            step = [[i for _, i in zip(range(self.batch_size), it)] for it in ranks]
            if not step[0] or (self.drop_last and len(step[0]) < self.batch_size):
                return
            yield from step


class VirtualRanks:
    """The hook's state: backward count, the running sum of the step's gradients, the trace being written."""

    def __init__(self, model: DistributedDataParallel, path: str, ranks: int, iterations: int, warmup: int,
                 params: Sequence[str] | None, skip_params: Sequence[str], value_dtype: str | None,
                 header: dict[str, Any], samplers: list[int | None]) -> None:
        module = model.module
        self.names = {id(p): name for name, p in module.named_parameters() if p.requires_grad}
        self.specs = tensor_specs(module, select_params(list(self.names.values()), params, skip_params))
        self.recorded = {spec.name for spec in self.specs}
        self.path, self.ranks, self.iterations, self.warmup = path, ranks, iterations, warmup
        self.value_dtype = value_dtype
        self.header = header
        self.samplers = samplers  # batch sizes of the DataLoaders over a DistributedSampler
        self.natural = Sparsifier()
        self.backwards = 0
        self.stepped = False  # whether a torch optimizer has stepped
        self.total: dict[str, torch.Tensor] = {}
        self.pending: dict[str, Recorded] = {}
        self.writer: TraceWriter | None = None

    @property
    def rank(self) -> int:
        """The virtual rank whose backward runs (or ran last, between backward and the optimizer step)."""
        return self.backwards % self.ranks

    @property
    def step(self) -> int:
        """The step of the backward that runs now."""
        return self.backwards // self.ranks

    @property
    def done(self) -> bool:
        """Whether every recorded step has been written (the trace is closed when the script ends)."""
        return self.step >= self.warmup + self.iterations

    def bucket(self, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        """Record this rank's part of the bucket, add it / N to the sum; the last rank's carries the sum."""
        recording = self.warmup <= self.step < self.warmup + self.iterations
        last = self.rank == self.ranks - 1
        for param, grad in zip(bucket.parameters(), bucket.gradients()):
            name = self.names[id(param)]
            if recording and name in self.recorded:
                self.pending[name] = to_chunk(self.natural.select(name, grad.view(-1)))
            total = self.total.setdefault(name, torch.zeros_like(grad))
            total.add_(grad / self.ranks)
            if last:
                grad.copy_(total)
                total.zero_()
        if bucket.is_last():
            self.end_backward(recording)
        done: torch.futures.Future[torch.Tensor] = torch.futures.Future()
        done.set_result(bucket.buffer())
        return done

    def end_backward(self, recording: bool) -> None:
        """Write the rank's chunks of a recorded step; count the backward."""
        self.check_script()
        if recording:
            missing = self.recorded - set(self.pending)
            if missing:
                raise ConfigError(f"{self.path}: parameter {sorted(missing)[0]!r} had no gradient at step {self.step}")
            if self.writer is None:
                self.writer = TraceWriter(self.path, self.specs, workers=self.ranks, iterations=self.iterations,
                                          value_dtype=self.value_dtype, **self.header)
            write_chunks(self.writer, self.step - self.warmup, self.rank, self.pending, self.value_dtype is not None)
            self.pending = {}
        self.backwards += 1

    def before_step(self, optimizer: torch.optim.Optimizer, *_: Any) -> None:
        """Optimizer step pre-hook: after the backward of a rank but the last, drop the gradients (no update)."""
        self.stepped = True
        if self.backwards % self.ranks:
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None

    def check_script(self) -> None:
        """ConfigError unless the script reads its data through a DistributedSampler (by its first backward) and
        steps a torch optimizer (by the first backward of its second step)."""
        script = self.header["workload"]
        if not self.samplers:
            raise ConfigError(f"--script {script}: no DataLoader over a DistributedSampler before its first backward: "
                              "virtual ranks need one to know which micro-batches each rank reads")
        if self.backwards >= self.ranks and not self.stepped:
            raise ConfigError(f"--script {script}: no torch optimizer stepped after the first step's backward passes; "
                              "virtual ranks need one (an update of the script's own would apply every rank's gradient)")

    def finish(self) -> None:
        """After the script: the trace renamed into place if the script ran every step as virtual ranks need,
        else none and a ConfigError."""
        try:
            self.check_script()
            if not self.done:
                raise ConfigError(f"--script {self.header['workload']}: training ran {self.step} steps of {self.ranks} "
                                  f"virtual ranks, fewer than --warmup {self.warmup} + --iterations {self.iterations}; "
                                  "no trace written")
        except ConfigError:
            self.abort()
            raise
        assert self.writer is not None
        self.writer.close()
        self.writer = None

    def abort(self) -> None:
        """Give up an unfinished trace (no file is left)."""
        if self.writer is not None:
            self.writer.abort()
            self.writer = None


def capture_script(script: str, script_args: list[str], path: str, ranks: int, iterations: int, warmup: int = 0,
                   params: Sequence[str] | None = None, skip_params: Sequence[str] = (), values: bool = False,
                   value_dtype: str = "float32", batch_size: int | None = None) -> VirtualRanks:
    """Run `script` once as __main__ with `script_args` as `ranks` virtual ranks (module docstring) and
    write their natural-sparsity trace of steps warmup .. warmup + iterations - 1 to `path` (with the
    sent values in `value_dtype` if `values`)."""
    check_script(script, "--script")
    at_least("--ranks", ranks, 1)
    check_steps(iterations, warmup)
    if "{rank}" in path:
        raise ConfigError(f"{path}: one trace holds every virtual rank; no {{rank}} in -o")
    check_shard_path(path, 1)
    found: list[VirtualRanks] = []
    loaders: list[int | None] = []
    provenance = {**environment(), "script": script, "script_args": script_args, "capture": "virtual ranks",
                  "virtual_ranks": ranks, "sparsifier": "natural", "gradients": "sent", "warmup_steps": warmup}
    header: dict[str, Any] = {"workload": script, "provenance": provenance}

    def set_batch_size() -> None:
        size, source = batch_size_of(batch_size, loaders)
        header.update(batch_size=size)
        provenance.update(batch_size=size, batch_size_source=source)

    def on_ddp(model: DistributedDataParallel) -> None:
        if not found:
            found.append(VirtualRanks(model, path, ranks, iterations, warmup, params, skip_params,
                                      value_dtype if values else None, header, loaders))
            model.register_comm_hook(found[0], _hook)

    def loader_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        bound = LOADER.bind_partial(None, *args, **kwargs)
        bound.apply_defaults()
        given = dict(bound.arguments)
        given.pop("self")
        sampler = given["sampler"]
        if not isinstance(sampler, DistributedSampler):
            return args, kwargs
        if given["batch_size"] is None:
            raise ConfigError(f"--script {script}: a DataLoader over a DistributedSampler with batch_size=None; "
                              "virtual ranks need the micro-batch size to deal the samples")
        loaders.append(given["batch_size"])
        given.update(batch_sampler=RankBatches(sampler, given["batch_size"], given["drop_last"]), sampler=None,
                     batch_size=1, drop_last=False)
        return (), given

    def on_loader(_: int | None) -> None:
        set_batch_size()  # until the trace is begun, the header takes the DataLoaders' batch size

    def sampler_init(self: DistributedSampler, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                     *args: Any, **kwargs: Any) -> None:
        plain_init(self, dataset, ranks, 0, *args, **kwargs)

    set_batch_size()
    plain_init = DistributedSampler.__init__
    hook = register_optimizer_step_pre_hook(lambda opt, *rest: found[0].before_step(opt) if found else None)
    DistributedSampler.__init__ = sampler_init  # type: ignore[method-assign]
    try:
        with one_rank_world("virtual ranks run in one process (no torchrun)"):
            run_script(script, script_args, on_ddp, on_loader, loader_args)
    except BaseException:
        for recorder in found:
            recorder.abort()
        raise
    finally:
        DistributedSampler.__init__ = plain_init  # type: ignore[method-assign]
        hook.remove()
    if not found:
        raise ConfigError(f"--script {script}: the script built no DistributedDataParallel model")
    found[0].finish()
    return found[0]


LOADER = inspect.signature(DataLoader.__init__)


def _hook(recorder, bucket):  # type: ignore[no-untyped-def]
    # unannotated: DDP rejects a `bucket` annotation that is not the GradBucket class itself
    return recorder.bucket(bucket)
