"""A DDP communication hook that synchronizes every gradient bucket with a zensim scheme.

    from zensim.ddp import zensim_hook
    ddp_model.register_comm_hook(None, zensim_hook(scheme="zen"))                    # natural sparsity
    ddp_model.register_comm_hook(None, zensim_hook(scheme="zen", sparsifier="topk", density=0.01))

The hook is a function of (state, bucket), as torch's own hooks (`allreduce_hook`): `state` is the
process group (None or the default group), so torch's hook wrappers compose with it
(`fp16_compress_wrapper(zensim_hook(...))` puts float16 on the wire: the scheme then carries
float16 values). For each bucket, on every rank:

1. the bucket's sparse gradient: its non-zero elements (natural sparsity), or, with a sparsifier,
   each parameter's selection from its accumulated gradient (error feedback: what is not sent is
   added to the next gradient; zensim.sparsify);
2. the values divided by the world size first, as DDP's default hook does;
3. the scheme's stage program over the kernel's torch.distributed transport (zensim.run: the very
   loop and exchange the emulator times), which leaves every rank with the same sum;
4. the sum written back into the bucket (zero elsewhere).

The scheme's local work (selection, partitions, merges, formats) runs on the bucket's device, in
torch (zensim.sparse.xp: the same kernel the simulator runs on numpy); only the payload bytes a
transport serializes pass through host memory.

With `dense_above=d`, a bucket whose last synchronized sum had a density above d (the same
figure on every rank, so every rank decides alike) is all-reduced densely instead, as ZEN does for
dense layers: an LSTM's or a softmax's gradient goes through torch's all_reduce, the embedding's
through the scheme. A bucket's first iteration always uses the scheme.

Buckets are synchronized in a thread of the hook's own, in the order DDP hands them over (the same
on every rank), so communication overlaps the rest of the backward pass as with the default hook;
each bucket's future completes when its sum is in the bucket. Local sparsifiers only (those whose
workers send their own selection: topk, dgc, threshold); lossless schemes only, or schemes whose
dropped values come back through `ctx.discard` (they go to the residual).
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from zensim.errors import ConfigError
from zensim.run import Tables, run_ranks
from zensim.run.torchdist import Channels, HostStaging, TorchP2P
from zensim.schemes import build_scheme, check_options, needs_profile, scheme_names
from zensim.sparse import xp as backend
from zensim.sparse.chunk import SparseChunk
from zensim.sparsify import ErrorFeedback, local_names, make_sparsifier

WIRE_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


@dataclass
class HookStats:
    """What the hook did so far on this rank: buckets synchronized, payload bytes it sent and received,
    non-zeros it contributed, and its thread's time on them: `seconds` (wall) and `cpu_seconds`
    (thread CPU) in all (selection, the scheme's stages, write-back), of which `transport_seconds`
    and `transport_cpu_seconds` in the transport's exchanges (host copies of payloads, gloo's sends
    and receives; on a GPU the copy out waits for the device to finish the payload's serialization,
    so that wait is the transport's). `own_seconds` and `own_cpu_seconds` are the rest: the hook's own
    work.

    On a GPU, thread CPU counts the host waiting for the device too: a synchronization (a count read
    back, a copy to the host) spins the CPU until the device has finished what was queued before it."""

    buckets: int = 0
    dense: int = 0  # of which all-reduced densely (dense_above)
    sent: int = 0
    received: int = 0
    nnz: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    transport_seconds: float = 0.0
    transport_cpu_seconds: float = 0.0
    by_numel: dict[int, int] = field(default_factory=dict)

    @property
    def own_seconds(self) -> float:
        """Wall seconds of the hook's own work (selection, scheme, write-back): all but the transport's."""
        return self.seconds - self.transport_seconds

    @property
    def own_cpu_seconds(self) -> float:
        """Thread CPU seconds of the hook's own work."""
        return self.cpu_seconds - self.transport_cpu_seconds


class ZensimHook:
    """The callable `zensim_hook` returns: (state, bucket) -> Future of the synchronized bucket."""

    def __init__(self, scheme: str, sparsifier: str | None, density: float | None, seed: int,
                 dense_above: float | None, options: dict[str, Any]) -> None:
        check_hook_arguments(scheme, sparsifier, density, dense_above, options)
        if not dist.is_available() or not dist.is_initialized():
            raise ConfigError("zensim_hook: torch.distributed is not initialized (init_process_group first)")
        self.scheme, self.options = scheme, dict(options)
        self.__name__ = self.__qualname__ = "zensim_hook"  # DDP logs and checks a hook by its name
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.sparsifier = None if sparsifier is None else make_sparsifier(sparsifier, density, self.rank, self.world,
                                                                           seed + self.rank)
        self.dense_above = dense_above
        self.last_density: dict[tuple[int, int], float] = {}  # (bucket index, numel) -> density of its sum
        self.memory = ErrorFeedback()
        self.channels = Channels.open()  # collective: every rank creates the hook at the same point
        self.tables = Tables()
        self.programs: dict[tuple[int, str], Any] = {}
        self.stats = HookStats()
        self.staging: dict[torch.device, HostStaging] = {}  # gloo: device payloads' host buffers, kept
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None

    # --- DDP's side -----------------------------------------------------------------------------
    def __call__(self, state, bucket):  # type: ignore[no-untyped-def]
        # unannotated: DDP rejects a `bucket` annotation that is not the GradBucket class itself, and
        # `from __future__ import annotations` turns every annotation into a string
        if state is not None and state is not dist.group.WORLD:
            raise ConfigError("zensim_hook: state must be None or the default process group (subgroups are "
                              "not supported)")
        buffer = bucket.buffer()
        future: torch.futures.Future = torch.futures.Future(devices=[buffer.device] if buffer.is_cuda else None)
        ready = None
        if buffer.is_cuda:  # the bucket is written on the backward's stream: wait for it in our thread
            ready = torch.cuda.Event()
            ready.record()
        grads = [(self._key(p), g) for p, g in zip(bucket.parameters(), bucket.gradients())]
        key = (bucket.index(), buffer.numel())
        if self.dense_above is not None and self.last_density.get(key, 0.0) > self.dense_above:
            buffer.div_(self.world)  # as DDP's default hook
            self.stats.dense += 1
            self.stats.buckets += 1
            work = dist.all_reduce(buffer, async_op=True)
            return work.get_future().then(lambda fut: fut.value()[0])
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="zensim-hook", daemon=True)
            self._thread.start()
        self._queue.put((key, buffer, grads, ready, future))
        return future

    @staticmethod
    def _key(param: torch.Tensor) -> str:
        """The error-feedback key of a parameter: stable while the model lives (buckets are rebuilt)."""
        return f"p{id(param)}"

    # --- the hook's thread ----------------------------------------------------------------------
    def _serve(self) -> None:
        while True:
            key, buffer, grads, ready, future = self._queue.get()
            try:
                if ready is not None:
                    ready.synchronize()
                self.last_density[key] = self.synchronize(buffer, grads) / max(buffer.numel(), 1)
                future.set_result(buffer)
            except BaseException as exc:  # DDP raises it where it waits for the bucket
                future.set_exception(exc)

    def synchronize(self, buffer: torch.Tensor, grads: list[tuple[str, torch.Tensor]]) -> int:
        """Replace `buffer` (a bucket) with the world's average of the ranks' sparse gradients; the
        number of non-zeros of the sum."""
        t0, c0 = time.monotonic(), time.thread_time()
        dtype = WIRE_DTYPES.get(buffer.dtype)
        if dtype is None:
            raise ConfigError(f"zensim_hook: bucket of {buffer.dtype} (float32, float16 or bfloat16 only)")
        chunk, positions = self._select(buffer, grads)
        values = chunk.values / self.world
        program = self._program(buffer.numel(), self.options.get("value_dtype", dtype))
        transport = TorchP2P(buffer.device, self.channels, staging=self._staging(buffer.device))
        out = run_ranks(program, {self.rank: SparseChunk(chunk.indices, values)}, transport, check=False,
                        tables=self.tables)
        total = out.results[0]
        for lost in out.context.discarded.get(self.rank, []):  # dropped on the way: back to the residual
            self._restore(positions, lost)
        write_back(buffer, total)
        s = self.stats
        s.buckets += 1
        s.sent += sum(b.sent for b in transport.stage_bytes)
        s.received += sum(b.received for b in transport.stage_bytes)
        s.nnz += chunk.nnz
        s.transport_seconds += transport.seconds
        s.transport_cpu_seconds += transport.cpu_seconds
        s.by_numel[buffer.numel()] = s.by_numel.get(buffer.numel(), 0) + 1
        s.seconds += time.monotonic() - t0
        s.cpu_seconds += time.thread_time() - c0
        return total.nnz

    def _staging(self, device: torch.device) -> HostStaging | None:
        """The host buffers payloads on `device` travel through: none where the backend moves them
        itself (NCCL, or CPU tensors on gloo), else the same buffers for every bucket."""
        if device.type == "cpu" or self.channels.backend() == "nccl":
            return None
        if device not in self.staging:
            self.staging[device] = HostStaging(device)
        return self.staging[device]

    def _program(self, numel: int, value_dtype: str):
        """The scheme's stage program for a bucket of `numel` elements (built once per size)."""
        key = (numel, value_dtype)
        if key not in self.programs:
            self.programs[key] = build_scheme(self.scheme, self.world, numel, tables=self.tables,
                                              **{**self.options, "value_dtype": value_dtype})
        return self.programs[key]

    def _select(self, buffer: torch.Tensor, grads: list[tuple[str, torch.Tensor]]) -> tuple[SparseChunk, list]:
        """This rank's sparse bucket (sorted bucket positions, float32 values, on the bucket's device)
        and, with a sparsifier, where each parameter lies in the bucket ([(key, offset, numel)])."""
        if self.sparsifier is None:
            return natural_select(buffer), []
        base, size = buffer.data_ptr(), buffer.element_size()
        ids, vals, positions = [], [], []
        for key, grad in grads:
            offset = (grad.data_ptr() - base) // size
            acc = self.memory.accumulate(key, grad.detach().reshape(-1).float())
            chosen = self.sparsifier.propose(key, acc)
            ids.append(chosen.to(torch.int64) + offset)
            vals.append(acc[chosen].float())
            self.memory.consume(key, chosen)
            positions.append((key, offset, grad.numel()))
        if not ids:
            return SparseChunk.empty(True, buffer), positions
        order_ids = torch.cat(ids)
        order = backend.argsort(order_ids)
        return SparseChunk(order_ids[order], torch.cat(vals)[order]), positions

    def _restore(self, positions: list[tuple[str, int, int]], lost: SparseChunk) -> None:
        """Values a scheme dropped (bucket positions, already divided by the world size) back into the
        residuals of their parameters."""
        for key, offset, numel in positions:
            inside = (lost.indices >= offset) & (lost.indices < offset + numel)
            if bool(inside.any()):
                residual = self.memory.residuals[key]
                where = (lost.indices[inside] - offset).to(residual.device)
                self.memory.restore(key, where, (lost.values[inside] * self.world).to(residual.device))


def natural_select(buffer: torch.Tensor) -> SparseChunk:
    """A bucket's non-zero elements (sorted positions, float32 values): what the hook sends without a
    sparsifier."""
    flat = buffer.view(-1)
    index = flat.nonzero().flatten()
    return SparseChunk(index, flat[index].float())


def write_back(buffer: torch.Tensor, total: SparseChunk) -> None:
    """The synchronized sum `total` (bucket positions) into the bucket, zero elsewhere."""
    buffer.zero_()
    if total.nnz:
        buffer[total.indices.to(buffer.device)] = total.values.to(buffer.device, buffer.dtype)


def check_hook_arguments(scheme: str, sparsifier: str | None, density: float | None, dense_above: float | None,
                     options: dict[str, Any]) -> None:
    """ConfigError naming the first bad argument of zensim_hook."""
    if scheme not in scheme_names():
        raise ConfigError(f"zensim_hook: unknown scheme {scheme!r} (known: {', '.join(scheme_names())})")
    if needs_profile(scheme):
        raise ConfigError(f"zensim_hook: {scheme} chooses from every rank's data before it runs; "
                          "name the scheme it would choose instead")
    check_options(scheme, options)
    if sparsifier is not None and sparsifier not in local_names():
        raise ConfigError(f"zensim_hook: sparsifier {sparsifier!r} needs its workers to agree on a selection; "
                          f"usable in DDP: {', '.join(local_names())}")
    if sparsifier is not None and density is None:
        raise ConfigError(f"zensim_hook: sparsifier {sparsifier} needs a density")
    if dense_above is not None and not 0.0 <= dense_above <= 1.0:
        raise ConfigError(f"zensim_hook: dense_above {dense_above!r} must be in [0, 1]")
    if dense_above is not None and sparsifier is not None:
        raise ConfigError("zensim_hook: dense_above with a sparsifier would all-reduce what the sparsifier keeps "
                          "in its residual; use one or the other")


def zensim_hook(scheme: str = "zen", *, sparsifier: str | None = None, density: float | None = None,
                seed: int = 0, dense_above: float | None = None, **options: Any) -> ZensimHook:
    """A DDP communication hook synchronizing every bucket with zensim scheme `scheme` (module docstring).

    `sparsifier` (topk, dgc, threshold) and `density` select what each rank sends, with error feedback;
    without, the bucket's non-zero elements are sent (natural sparsity). `dense_above`: all-reduce a
    bucket densely once its sum's density exceeds this fraction. `options` are the scheme's
    (`value_dtype`, `partitioner`, `pull`, ...). Every rank must call this at the same point (it
    opens the transport's process groups)."""
    return ZensimHook(scheme, sparsifier, density, seed, dense_above, options)
