"""The kernels behind every local-work kind (zensim.schemes.workkinds), timed on this machine.

Each kind is timed by running the code a stage program runs for it (the formats' encoding and
decoding through zensim.schemes.wire, the unions of zensim.schemes.pieces, the partitioners' splits,
the hash partition's position search), on x = 2^min_log2 .. 2^max_log2 elements or positions, one
thread, CPU time (`time.thread_time`, so other processes on the host do not count), the median of
`reps` runs after a warm-up. A payload whose work has two parts (a bitmap's values and its bits, a
block payload's elements and its value slots) is timed whole; the part per position, timed alone
first (a payload of almost no elements over x positions), is subtracted, which leaves the part per
element.

With `device` (a torch device: "cpu", "cuda", ...) the same step code runs on torch tensors there
(zensim.sparse.xp: one kernel for both libraries), timed by the wall clock between device
synchronizations: a GPU's work is not the host thread's CPU time. `payloads` says where a payload's
wire bytes are made and read: "host" (bytes objects, as gloo and the in-memory driver's bytes mode
do: on a GPU an encode includes the copy to the host, a decode runs on the host and copies its
result to the device) or "device" (uint8 tensors on the device, `to_buffer` and a decode of that
buffer where it lies: NCCL's path, zensim.run.sized).

`measure_steps()` returns `{"device", "kernels": "steps", "reps", "points": {kind: [[x, seconds],
...]}}`; zensim.train.cost.work_profile fits t(x) = alpha + beta x per kind to it.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from zensim.net.profile import fit
from zensim.run.context import Meter, RunContext
from zensim.schemes import wire
from zensim.schemes.partitioning import partitioner_for
from zensim.schemes.pieces import ChunkPiece, DensePiece, union
from zensim.schemes.workkinds import merge_work
from zensim.sparse import xp as backend
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import Domain, ExplicitDomain, RangeDomain
from zensim.sparse.formats import make_format
from zensim.sparsify.ops import topk_indices

SPREAD = 4  # a payload's domain has SPREAD x its elements (density 1/4); an id space of 5 x that
PARTS = 16  # partitions of the split kernels


def _ctx() -> RunContext:
    return RunContext(Meter(1, 1), values=True)


def _ids(rng: np.random.Generator, count: int, bound: int) -> np.ndarray:
    """`count` distinct sorted ids below `bound`."""
    return np.sort(rng.choice(bound, count, replace=False)).astype(np.int64)


def _chunk(rng: np.random.Generator, domain: Domain, count: int) -> SparseChunk:
    """`count` elements of `domain` with random float32 values (none zero)."""
    pos = _ids(rng, count, domain.size)
    return SparseChunk(domain.ids(pos), (rng.random(count) + 0.5).astype(np.float32))


def _domain(rng: np.random.Generator, size: int, hashed: bool) -> Domain:
    """A range domain of `size` ids, or an explicit one (a hash partition) of `size` ids among 5 x as many."""
    return ExplicitDomain(_ids(rng, size, 5 * size), 5 * size) if hashed else RangeDomain(0, size)


def _io(fmt_name: str, domain: Domain, chunk: SparseChunk,
        payloads: str = "host") -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(encode, decode) of one payload as a stage program and its transport do them: the format's
    payload and its wire bytes (`payloads` "host": a bytes object; "device": a uint8 array where the
    chunk lies); those bytes back to a held piece (in the chunk's library and on its device) and its
    element count."""
    fmt, ctx = make_format(fmt_name), _ctx()
    like = None if backend.is_numpy(chunk.indices) else chunk.indices
    piece = DensePiece.of(ChunkPiece(domain, chunk)) if fmt_name == "dense" else ChunkPiece(domain, chunk)
    on_host = payloads == "host"
    buf = wire.encode(piece, fmt, ctx)
    buf = bytes(buf.to_bytes()) if on_host else buf.to_buffer()

    def encode() -> tuple:
        payload = wire.encode(piece, fmt, ctx)
        return payload.to_bytes() if on_host else payload.to_buffer(), payload.nnz

    def decode() -> tuple:
        held = wire.to_piece(fmt.from_bytes(buf, domain, like=like), False)
        return held, held.nnz
    return encode, decode


def _kernels(rng: np.random.Generator, x: int, device: str | None,
             payloads: str = "host") -> dict[str, list[tuple[Callable[[], Any], int, str | None, int]]]:
    """Per kind, its kernels at size x: (function, x, positional kind timed inside it or None, its
    positions); on torch tensors on `device` when given; payload bytes per `payloads` (_io)."""
    def on(c: SparseChunk) -> SparseChunk:
        return c if device is None else c.to_torch(device)

    def arr(a: np.ndarray) -> Any:
        return a if device is None else backend.like(a, on(SparseChunk(a[:0].astype(np.int64))).indices)

    out: dict[str, list] = {}
    numel = 5 * SPREAD * x
    ids = _ids(rng, x, numel)
    chunk = on(SparseChunk(ids, (rng.random(x) + 0.5).astype(np.float32)))
    for kind, partitioner in (("hash", "zen"), ("slice", "contiguous")):
        part = partitioner_for(partitioner, numel, PARTS)
        part.split(chunk)  # one-time set-up (a hash partition's domains) outside the timing
        out[kind] = [(lambda p=part: p.split(chunk), x, None, 0)]
    hashed = _domain(rng, SPREAD * x, True)
    inside = arr(hashed.ids(_ids(rng, x, hashed.size)))
    out["search"] = [(lambda: hashed.positions(inside), x, None, 0)]
    mags = arr(rng.random(x).astype(np.float32))
    out["select"] = [(lambda: topk_indices(mags, max(1, x // 8)), x, None, 0)]
    values = arr(rng.random(x).astype(np.float32))
    out["copy"] = [(lambda: backend.namespace(values).asarray(values, copy=True), x, None, 0)]
    whole = RangeDomain(0, numel)
    out["merge.coo"] = []
    for k in (2, 8):  # k sorted pieces of x elements in all: x (1 + log2 k) steps (zensim.schemes.workkinds)
        pieces = [ChunkPiece(whole, on(_chunk(rng, whole, x // k))) for _ in range(k)]
        steps = merge_work(False, 0, (x // k) * k, k)[0][1]
        out["merge.coo"].append((lambda p=pieces: union(p, _ctx()), steps, None, 0))
    dense = [DensePiece.of(ChunkPiece(RangeDomain(0, x), on(_chunk(rng, RangeDomain(0, x), x // SPREAD))))
             for _ in range(2)]
    out["add.dense"] = [(lambda: union(dense, _ctx()), x, None, 0)]
    enc, dec = _io("dense", RangeDomain(0, x), on(_chunk(rng, RangeDomain(0, x), x // SPREAD)), payloads)
    out["scan.dense"] = [(enc, x, None, 0), (dec, x, None, 0)]
    few = max(1, x // 1024)  # a payload of almost no elements: its work is its positions'
    enc, dec = _io("bitmap", RangeDomain(0, x), on(_chunk(rng, RangeDomain(0, x), few)), payloads)
    out["pack.bitmap"], out["unpack.bitmap"] = [(enc, x, None, 0)], [(dec, x, None, 0)]
    enc, _ = _io("blocks", RangeDomain(0, x), on(_chunk(rng, RangeDomain(0, x), few)), payloads)
    out["scan.blocks"] = [(enc, x, None, 0)]
    for fmt_name in ("coo", "bitmap", "blocks"):  # over a range domain: a hash partition's search is `search`
        domain = RangeDomain(0, SPREAD * x)
        enc, dec = _io(fmt_name, domain, on(_chunk(rng, domain, x)), payloads)
        enc_pos, dec_pos = {"bitmap": ("pack.bitmap", "unpack.bitmap"), "blocks": ("scan.blocks", None)}.get(fmt_name, (None, None))
        out[f"encode.{fmt_name}"] = [(enc, x, enc_pos, domain.size if enc_pos else 0)]
        out[f"decode.{fmt_name}"] = [(dec, x, dec_pos, domain.size if dec_pos else 0)]
    return out


ORDER = ("hash", "slice", "search", "select", "copy", "merge.coo", "add.dense", "scan.dense", "pack.bitmap",
         "unpack.bitmap", "scan.blocks", "encode.coo", "decode.coo", "encode.bitmap", "decode.bitmap",
         "encode.blocks", "decode.blocks")


def measure_steps(max_log2: int = 21, reps: int = 5, min_log2: int = 10, seed: int = 0,
                  progress: Callable[[str], None] | None = None, device: str | None = None,
                  payloads: str = "host") -> dict[str, Any]:
    """Seconds of every kind's kernels at x = 2^min_log2 .. 2^max_log2 (module docstring): CPU
    seconds of the numpy kernels, or with `device` the wall seconds of the torch kernels there;
    `payloads` "host" or "device" (where wire bytes are made and read; "device" needs `device`)."""
    if payloads not in ("host", "device") or (payloads == "device" and device is None):
        raise ValueError(f"payloads {payloads!r}: 'host', or 'device' with a torch device")
    rng = np.random.default_rng(seed)
    points: dict[str, list[list[float]]] = {k: [] for k in ORDER}
    clock = time.thread_time if device is None else time.perf_counter
    sync = _synchronizer(device)

    def timed(fn: Callable[[], Any]) -> float:
        fn()
        samples, kept = [], []
        for _ in range(reps):  # results kept: each run gets fresh memory, as a stage's steps do
            sync()
            c0 = clock()
            kept.append(fn())
            sync()
            samples.append(clock() - c0)
        return statistics.median(samples)

    sizes = range(min_log2, max_log2 + 1)
    kernels = {log2: _kernels(rng, 1 << log2, device, payloads) for log2 in sizes}
    fitted: dict[str, float] = {}
    for kind in ORDER:  # positional kinds before the payloads that contain them
        for log2 in sizes:
            for fn, x, positional, positions in kernels[log2][kind]:
                seconds = timed(fn) - (fitted[positional] * positions if positional else 0.0)
                points[kind].append([x, max(seconds, 1e-9)])
        fitted[kind] = fit(*zip(*points[kind]))[1]
        if progress is not None:
            progress(f"{kind}: " + ", ".join(f"{x:.0f} {s * 1e6:.1f} us" for x, s in points[kind]))
    return {"device": _describe(device), "kernels": "steps", "payloads": payloads, "reps": reps, "points": points}


def _synchronizer(device: str | None) -> Callable[[], None]:
    """A call that waits for `device`'s queued work (nothing to wait for on the host)."""
    if device is None or not device.startswith("cuda"):
        return lambda: None
    import torch

    return lambda: torch.cuda.synchronize(device)


def _describe(device: str | None) -> str:
    """What ran the kernels, for the profile's `device` field."""
    cpu = platform.processor() or platform.machine()
    if device is None:
        return f"cpu ({cpu}; zensim's numpy step kernels, one thread)"
    import torch

    if device.startswith("cuda"):
        return f"{torch.cuda.get_device_name(device)} (zensim's step kernels in torch {torch.__version__})"
    return f"{device} ({cpu}; zensim's step kernels in torch {torch.__version__}, {torch.get_num_threads()} threads)"
