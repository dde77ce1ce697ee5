"""The emulation driver: one rank runs the stage programs for real and times them (task `run`).

Every scheme and peer runs once untimed first (warm-up), then `--repeats` timed runs. Every run
starts after a barrier at a common instant (`_start`) where the ranks share one clock (the
emulator's namespaces: one kernel), and is timed from that instant.

The stages run in zensim.run's one loop over the torch.distributed transport (zensim.run.torchdist):
for every stage s (docs/architecture.md), `pre` = `start` (stage 0) + `sends` + serialization,
`comm` = the point-to-point exchange, `post` = decoding + `receive`. A run starts
at the common instant after a barrier; its time is this rank's wall time to the end of its last stage: the rank then
holds the aggregate in the scheme's own form (e.g. ZEN's hash partitions), and turning that into
one sorted chunk for the correctness check is not timed. The peers (torch's dense all_reduce of the
dense tensor, torch's sparse COO all_reduce, gloo only) are timed the same way on the same data, from
building their input tensor to the end of the all_reduce. Every run's result is checked against the
dense sum of all ranks' chunks, which each rank reads from the trace itself. Each step also records
the CPU time of the rank's main thread (`pre_cpu_s`, `comm_cpu_s`, `post_cpu_s`), and a digest of
the result's bits (`digest`): equal on every rank iff the replicas are identical.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from collections.abc import Callable

import numpy as np
import torch
import torch.distributed as dist

from emulate.options import parse_options, parse_peers
from zensim.errors import ConfigError
from zensim.run import Expected, result_problem, run_ranks
from zensim.run.context import COMM, POST, PRE
from zensim.run.torchdist import Channels, StageBytes, TorchP2P
from zensim.schemes import build_scheme, needs_profile
from zensim.sparse.chunk import SparseChunk
from zensim.trace import Trace
from zensim.trace.values import worker_chunk


def wire_counters() -> tuple[int, int] | None:
    """(tx, rx) byte counters of this rank's interface (GLOO_SOCKET_IFNAME), None if unknown."""
    dev = os.environ.get("GLOO_SOCKET_IFNAME")
    if not dev:
        return None
    try:
        base = f"/sys/class/net/{dev}/statistics"
        with open(f"{base}/tx_bytes") as tx, open(f"{base}/rx_bytes") as rx:
            return int(tx.read()), int(rx.read())
    except OSError:
        return None


def digest(chunk: SparseChunk) -> str:
    """SHA-256 of a result's indices and value bits: equal on every rank iff the replicas are identical."""
    chunk = chunk.host()
    h = hashlib.sha256(np.ascontiguousarray(chunk.indices, "<i8").tobytes())
    if chunk.values is not None:
        h.update(np.ascontiguousarray(chunk.values, "<f4").tobytes())
    return h.hexdigest()


START_MARGIN_S = 0.25  # from the barrier to the common start: the broadcast and every rank's wake-up


def one_host() -> bool:
    """Whether every rank runs on this host (the emulator's namespaces share one kernel, so one
    monotonic clock): the same boot id everywhere."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            mine = f.read().strip()
    except OSError:
        return False
    ids: list = [None] * dist.get_world_size()
    dist.all_gather_object(ids, mine)
    return len(set(ids)) == 1


def _start(shared_clock: bool) -> float | None:
    """Barrier; with a clock shared by every rank, then wait for a common start instant that rank 0
    names (now + START_MARGIN_S): the ranks leave a barrier up to ~100 ms apart on two loaded cores
    (16 ranks), and a rank that starts early would time its wait for the late ones, which the
    simulator (every rank starting at 0) does not have. Returns the common instant (None without)."""
    dist.barrier()
    if not shared_clock:
        return None
    at = torch.tensor([time.monotonic() + START_MARGIN_S], dtype=torch.float64)
    dist.broadcast(at, 0)
    start = float(at.item())
    while (left := start - time.monotonic()) > 0:
        time.sleep(left)
    return start


def _timed(fn, shared_clock: bool = False) -> tuple[dict, SparseChunk]:
    """Start together (`_start`), then run `fn()` -> (record, finish, end) with start/end stamps and
    wire byte deltas added; `end` is the clock when the work ended (None: when fn returned); `finish()`,
    called after the clock stops, gives the result chunk for the check. With a shared clock the run is
    timed from the common instant, and `start_lag_s` says how late this rank began after it."""
    common = _start(shared_clock)
    w0 = wire_counters()
    t0 = time.monotonic()
    record, finish, end = fn()
    t1 = end if end is not None else time.monotonic()
    w1 = wire_counters()
    if common is not None:
        record["start_lag_s"], t0 = t0 - common, common
    record.update(t_start=t0, t_end=t1, seconds=t1 - t0)
    if w0 and w1:
        record.update(wire_tx=w1[0] - w0[0], wire_rx=w1[1] - w0[1])
    return record, finish()


def run_program(prog, rank: int, chunk: SparseChunk, device: torch.device,
                channels: Channels) -> tuple[dict, Callable[[], SparseChunk], float]:
    """Run every stage of `prog` on this rank over torch.distributed (zensim.run's one loop, timed);
    returns (record, a function giving the result chunk, the clock when the last stage ended)."""
    transport = TorchP2P(device, channels, receipts=True)  # stages end with their sends delivered
    out = run_ranks(prog, {rank: chunk}, transport, check=False, timed=True)
    wall, cpu = out.context.meter.wall[rank], out.context.meter.cpu[rank]
    total = StageBytes()
    stages = []
    for s, nbytes in enumerate(transport.stage_bytes):
        total.add(nbytes)
        stages.append({"pre_s": wall[s, PRE], "comm_s": wall[s, COMM], "post_s": wall[s, POST],
                       "pre_cpu_s": cpu[s, PRE], "comm_cpu_s": cpu[s, COMM], "post_cpu_s": cpu[s, POST],
                       "sent": nbytes.sent, "received": nbytes.received,
                       "sent_to": {str(d): b for d, b in nbytes.sent_to.items()}})
    record = {"stages": stages, "sent": total.sent, "received": total.received,
              "control_sent": total.control_sent, "control_received": total.control_received,
              "work": [[w.stage, w.phase, w.kind, w.elements] for w in out.log.work],
              "digest": digest(out.results[0]), "values_flushed": out.context.flushed}
    return record, lambda: out.results[0], out.context.meter.finished_at


def run_dense_peer(chunk: SparseChunk, numel: int, device: torch.device) -> tuple[dict, Callable[[], SparseChunk], None]:
    """torch.distributed.all_reduce of the dense float32 tensor (timed: building it and the all_reduce)."""
    dense = torch.zeros(numel, dtype=torch.float32, device=device)
    dense[torch.from_numpy(chunk.indices).to(device)] = torch.from_numpy(chunk.values).to(device)
    dist.all_reduce(dense)
    if device.type == "cuda":
        torch.cuda.synchronize(device)

    def finish() -> SparseChunk:
        out = dense.cpu().numpy()
        idx = np.flatnonzero(out)
        return SparseChunk(idx.astype(np.int64), out[idx])
    return {"payload_bytes": 4 * numel}, finish, None


def run_sparse_peer(chunk: SparseChunk, numel: int, device: torch.device) -> tuple[dict, Callable[[], SparseChunk], None]:
    """torch.distributed.all_reduce of a sparse COO tensor (gloo: all-gather of indices and values, local sum)."""
    idx = torch.from_numpy(chunk.indices).reshape(1, -1)
    sp = torch.sparse_coo_tensor(idx, torch.from_numpy(chunk.values), (numel,)).coalesce()
    dist.all_reduce(sp)

    def finish() -> SparseChunk:
        out = sp.coalesce()
        return SparseChunk(out.indices()[0].numpy().astype(np.int64), out.values().numpy())
    return {"payload_bytes": 12 * chunk.nnz}, finish, None


def kernels_on_torch(kernels: str, device: torch.device) -> bool:
    """Whether the schemes' local work runs in torch on `device` (--kernels; auto: on CUDA only)."""
    return kernels == "torch" or (kernels == "auto" and device.type == "cuda")


def run_task(args: argparse.Namespace, rank: int, world: int, device: torch.device, progress_cls,
             channels: Channels) -> dict:
    """Task `run`: every named scheme then every peer, `args.repeats` times each; returns this rank's JSON."""
    if not args.trace:
        raise ConfigError("--trace: required for task run")
    trace = Trace.open(args.trace)
    if trace.workers < world:
        raise ConfigError(f"{args.trace}: trace has {trace.workers} workers, cannot emulate {world} ranks")
    chunk = worker_chunk(trace, args.iteration, rank)
    kernel_chunk = chunk.to_torch(str(device)) if kernels_on_torch(args.kernels, device) else chunk
    schemes = [s for s in args.schemes.split(",") if s]
    profiled = any(needs_profile(s) for s in schemes)
    everyone = [worker_chunk(trace, args.iteration, w) for w in range(world)] if not args.no_check or profiled else None
    expected = None if args.no_check else Expected(everyone, trace.numel)
    options = parse_options(args.options)
    peers = parse_peers(args.peers)
    if device.type == "cuda" and "sparse" in peers:
        peers.remove("sparse")  # NCCL has no sparse all_reduce
    progress = progress_cls(args.progress, rank, (len(schemes) + len(peers)) * args.repeats)
    # one untimed run per job first (--warmup): one-time set-up such as a hash bitmap's domains
    # (computed once per tensor size, as ZEN does) and first-use allocations stay out of the times
    runs = []
    shared_clock = one_host()
    jobs = [("scheme", name, build_scheme(name, world, trace.numel, profile=everyone if needs_profile(name) else None,
                                          **options)) for name in schemes]
    jobs += [("peer", name, None) for name in peers]
    for kind, name, prog in jobs:
        if kind == "scheme":
            job = lambda: run_program(prog, rank, kernel_chunk, device, channels)  # noqa: E731
        elif name == "dense":
            job = lambda: run_dense_peer(chunk, trace.numel, device)  # noqa: E731
        else:
            job = lambda: run_sparse_peer(chunk, trace.numel, device)  # noqa: E731
        if args.warmup:
            _timed(job, shared_clock)
        for rep in range(args.repeats):
            record, result = _timed(job, shared_clock)
            record.update(kind=kind, name=name, repeat=rep)
            caps = prog.caps if kind == "scheme" else None
            if expected is not None and (caps is None or caps.lossless):  # a lossy scheme (SparDL) is not the sum
                # torch's dense all_reduce shows only non-zero positions
                record["error"] = result_problem(result, expected, world, prog.value_dtype if caps else "float32",
                                                 caps.keeps_zeros if caps else name != "dense")
            runs.append(record)
            progress.step()
    return {"trace": args.trace, "iteration": args.iteration, "numel": trace.numel, "nnz": chunk.nnz,
            "options": options, "runs": runs}
