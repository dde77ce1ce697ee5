"""The schemes' local work on a device: one command, JSON out (issue 23's prepared device check).

Runs the same kernels (zensim.sparse.xp) on numpy (the host) and on torch on `--device`, checks
that they agree, and times them:

- `alg1`: ZEN's Algorithm 1 (HierarchicalHash.hash_table: h0, k = 3 rounds of parallel writes with
  read-back, serial memory) on 10.7M unique ids of a 214M-element tensor, n = 16; h0 compared id
  by id with numpy's;
- `union`: the union of 16 workers' index sets (zensim.trace.synth, 0.25% each, overlap 0.3);
- `steps`: every catalog scheme at n = 16 ranks in one process (the in-memory driver, values
  carried), numpy against torch on the device: the whole run's seconds, its log and bits compared;
- `hook`: DDP with 2 ranks sharing the device (gloo), an EmbeddingBag model with sparse gradients:
  step time with DDP's default hook and with zensim_hook("zen"), whether zen trains to the default's
  bits, and per step the hook thread's wall and CPU seconds, split into the transport's (gloo's
  exchange: host copies of the payloads, sends, receives) and the hook's own (selection, the
  scheme's stages, write-back). On a GPU the zen hook
  runs twice: as is (a synchronization spins the CPU while the GPU works, so thread CPU counts GPU
  waits) and with CUDA's blocking-sync scheduling (`zen+blocking-sync`: thread CPU is host work only).

    PYTHONPATH=. python benchmarks/device.py [--device cuda] [--small] [--sections alg1,union,steps,hook]

`--small` is the CI size (seconds on 2 CPU cores; tests/test_device_benchmark.py runs it). Needs
only torch, numpy and array-api-compat (or the copy scipy ships; a host with neither can put the
pure-Python package on PYTHONPATH). Prints one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import torch

SECTIONS = ("alg1", "union", "steps", "hook")
FULL = dict(numel=214_000_000, ids=10_700_000, union_numel=214_000_000, steps_numel=1_000_000, vocab=1_000_000,
            dim=64, batch=4096, bag=16, hook_steps=20)
SMALL = dict(numel=2_000_000, ids=100_000, union_numel=2_000_000, steps_numel=20_000, vocab=20_000,
             dim=16, batch=256, bag=8, hook_steps=6)


def log(msg: str) -> None:
    """Progress on stderr."""
    print(f"device.py: {msg}", file=sys.stderr, flush=True)


def timed(fn: Callable[[], object], device: torch.device, reps: int) -> tuple[float, object]:
    """Median seconds of `reps` calls of fn (after one warm-up call), synchronizing the device; the last result."""
    out = fn()
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        out = fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def alg1(sizes: dict, device: torch.device, reps: int) -> dict:
    """Algorithm 1 on numpy and on the device: seconds, equal memory and statistics, h0 id by id."""
    from zensim.sparse.hashpart import HierarchicalHash, h0_parts

    rng = np.random.default_rng(0)
    ids = np.unique(rng.integers(0, sizes["numel"], int(sizes["ids"] * 1.03)))[: sizes["ids"]]
    tensor = torch.from_numpy(ids).to(device)

    def on(x):  # noqa: ANN001, ANN202
        return HierarchicalHash(sizes["numel"], 16, seed=0, k=3).hash_table(x)

    host_s, a = timed(lambda: on(ids), torch.device("cpu"), 1)
    dev_s, b = timed(lambda: on(tensor), device, reps)
    same = a.stats == b.stats and all(np.array_equal(x, y.cpu().numpy()) for x, y in zip(a.slots, b.slots))
    h0_same = bool(np.array_equal(h0_parts(ids, 16, 0), h0_parts(tensor, 16, 0).cpu().numpy()))
    return {"ids": int(len(ids)), "numel": sizes["numel"], "n": 16, "k": 3, "numpy_s": host_s, "torch_s": dev_s,
            "speedup": host_s / dev_s, "memory_identical": bool(same), "h0_identical": h0_same,
            "stats": b.stats.as_dict()}


def union(sizes: dict, device: torch.device, reps: int) -> dict:
    """The union of 16 workers' index sets on numpy and on the device."""
    from zensim.sparse.chunk import SparseChunk, union_indices
    from zensim.trace.synth import SynthParams, layout, worker_sets

    lay = layout(sizes["union_numel"], SynthParams(density=0.0025, overlap=0.3, skew=4.0))
    sets = list(worker_sets(lay, 16, (1,)))
    host = [SparseChunk(s) for s in sets]
    dev = [SparseChunk(torch.from_numpy(s).to(device)) for s in sets]
    host_s, a = timed(lambda: union_indices(host), torch.device("cpu"), 1)
    dev_s, b = timed(lambda: union_indices(dev), device, reps)
    return {"workers": 16, "ids_per_worker": int(np.mean([len(s) for s in sets])), "union": int(len(a)),
            "numpy_s": host_s, "torch_s": dev_s, "speedup": host_s / dev_s,
            "identical": bool(np.array_equal(a, b.cpu().numpy()))}


def steps(sizes: dict, device: torch.device) -> dict:
    """Every catalog scheme at 16 ranks in one process, numpy against torch on the device."""
    from zensim.run import run_ranks
    from zensim.schemes import CATALOG, build_scheme, needs_profile
    from zensim.sparse.chunk import same_bits
    from zensim.sparse.conformance import on_torch, sample_chunks

    n, numel = 16, sizes["steps_numel"]
    chunks = sample_chunks("random", n, numel, 0.01, 3, values=True)
    tensors = on_torch(chunks, str(device))
    out = {}
    for name in CATALOG:
        profile = chunks if needs_profile(name) else None

        def run(data):  # noqa: ANN001, ANN202
            return run_ranks(build_scheme(name, n, numel, profile=profile), data, check=False)

        host_s, a = timed(lambda: run(chunks), torch.device("cpu"), 1)
        dev_s, b = timed(lambda: run(tensors), device, 1)
        out[name] = {"numpy_s": host_s, "torch_s": dev_s, "numpy_over_torch": host_s / dev_s,
                     "same_log": a.log.messages == b.log.messages,
                     "same_bits": all(same_bits(x, y) for x, y in zip(a.results, b.results))}
        log(f"steps {name}: numpy {host_s * 1e3:.1f} ms, torch {dev_s * 1e3:.1f} ms")
    return {"ranks": n, "numel": numel, "density": 0.01, "schemes": out}


BLOCKING = "+blocking-sync"
HOOK_TIMES = ("seconds", "cpu_seconds", "transport_seconds", "transport_cpu_seconds", "own_seconds",
              "own_cpu_seconds")


def blocking_sync(device: torch.device) -> bool:
    """Make host synchronizations with `device` sleep instead of spin (CUDA's blocking-sync
    scheduling, set on the device's primary context before this process creates it): a thread's
    CPU time then counts its host work only, not its waits for the GPU. Whether it could be set."""
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    handle = ctypes.c_int()
    return not (cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(handle), device.index or 0) or
                cuda.cuDevicePrimaryCtxSetFlags_v2(handle, 4))  # CU_CTX_SCHED_BLOCKING_SYNC


def _hook_rank(rank: int, world: int, init: str, sizes: dict, device: str, hook_name: str, queue) -> None:  # noqa: ANN001
    """One DDP rank of the hook section: puts rank 0's median step seconds and its hook's HookStats
    times per step (HOOK_TIMES), whether blocking-sync was set (None: not asked) and a digest of the
    trained parameters on `queue`. A name ending in BLOCKING runs the hook with `blocking_sync`."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from zensim.ddp import zensim_hook

    blocking = None
    if hook_name.endswith(BLOCKING):
        hook_name = hook_name.removesuffix(BLOCKING)
        blocking = blocking_sync(torch.device(device))
        if not blocking:
            log(f"rank {rank}: could not set CUDA's blocking-sync scheduling; thread CPU includes GPU waits")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    dev = torch.device(device)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.EmbeddingBag(sizes["vocab"], sizes["dim"], mode="sum"),
                                torch.nn.Linear(sizes["dim"], 1)).to(dev)
    ddp = DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None)
    hook = None
    if hook_name != "default":
        hook = zensim_hook(hook_name)
        ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(rank)
    times, before = [], {}
    for step in range(sizes["hook_steps"] + 2):
        if step == 2 and hook is not None:  # two warm-up steps: buckets rebuilt, programs built
            before = {k: getattr(hook.stats, k) for k in HOOK_TIMES}
        batch = torch.randint(0, sizes["vocab"], (sizes["batch"], sizes["bag"]), generator=gen).to(dev)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        ddp(batch).square().mean().backward()
        opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        if step >= 2:
            times.append(time.perf_counter() - t0)
    spent = {k: (getattr(hook.stats, k) - before[k]) / sizes["hook_steps"] if hook is not None else 0.0
             for k in HOOK_TIMES}
    if rank == 0:
        digest = hashlib.sha256()  # the trained parameters: every hook must leave the same bits (2 ranks)
        for param in model.parameters():
            digest.update(param.detach().cpu().numpy().tobytes())
        queue.put((statistics.median(times), spent, blocking, digest.hexdigest()))
    dist.destroy_process_group()


def _result_of(procs: list, queue, name: str) -> tuple:  # noqa: ANN001
    """Rank 0's result from `queue`; exits (one line) as soon as a rank has died without one (its
    traceback is on stderr), instead of waiting for a result that will not come."""
    import queue as queues

    while True:
        try:
            return queue.get(timeout=2)
        except queues.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                for p in procs:
                    p.kill()
                raise SystemExit(f"device.py: hook {name}: a DDP rank exited with code {dead[0]} (its error above)")


def hook(sizes: dict, device: torch.device) -> dict:
    """DDP with 2 ranks sharing the device: DDP's default hook against zensim_hook('zen'); whether
    each run's trained parameters have the default hook's bits (on 2 ranks a sum is a + b either way;
    False means a difference, or a nondeterministic kernel of the model on that device)."""
    import torch.multiprocessing as mp

    out = {"ranks": 2, "params": sizes["vocab"] * sizes["dim"] + sizes["dim"] + 1, "batch": sizes["batch"]}
    ctx = mp.get_context("spawn")
    names = ("default", "zen") + (("zen" + BLOCKING,) if device.type == "cuda" else ())
    digests: dict[str, str] = {}
    for name in names:
        with tempfile.TemporaryDirectory(prefix="zsim-device-") as tmp:
            queue = ctx.Queue()
            init = f"file://{os.path.join(tmp, 'rendezvous')}"
            procs = [ctx.Process(target=_hook_rank, args=(r, 2, init, sizes, str(device), name, queue)) for r in range(2)]
            for p in procs:
                p.start()
            step_s, spent, blocking, digest = _result_of(procs, queue, name)
            for p in procs:
                p.join()
        digests[name] = digest
        out[name] = {"step_s": step_s, "params_equal_default": digest == digests["default"],
                     "hook_cpu_s_per_step": spent["cpu_seconds"],
                     "hook_cpu_share": spent["cpu_seconds"] / step_s,
                     **{f"hook_{k}_per_step": v for k, v in spent.items() if k != "cpu_seconds"},
                     "own_cpu_share": spent["own_cpu_seconds"] / step_s,
                     "transport_cpu_share": spent["transport_cpu_seconds"] / step_s,
                     **({} if blocking is None else {"blocking_sync": blocking})}
        log(f"hook {name}: {step_s * 1e3:.1f} ms a step; hook thread {spent['seconds'] * 1e3:.1f} ms wall, "
            f"{spent['cpu_seconds'] * 1e3:.1f} ms CPU a step, of which the transport's {spent['transport_seconds'] * 1e3:.1f} "
            f"ms wall, {spent['transport_cpu_seconds'] * 1e3:.1f} ms CPU; the hook's own {spent['own_seconds'] * 1e3:.1f} ms "
            f"wall, {spent['own_cpu_seconds'] * 1e3:.1f} ms CPU")
    return out


def main(argv: list[str] | None = None) -> dict:
    """Run the chosen sections and print their JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--small", action="store_true", help="CI sizes (seconds on a CPU)")
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions of alg1 and union on the device")
    args = ap.parse_args(argv)
    sections = [s for s in args.sections.split(",") if s]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        ap.error(f"--sections: unknown {', '.join(unknown)} (known: {', '.join(SECTIONS)})")
    try:  # what every section needs: a missing dependency is one line here, not an error in each rank
        import zensim.ddp  # noqa: F401
    except ImportError as exc:
        sys.exit(f"device.py: cannot import zensim ({exc}); it needs torch, numpy and array-api-compat (or the "
                 "copy scipy ships), the project on PYTHONPATH")
    device = torch.device(args.device)
    sizes = SMALL if args.small else FULL
    host = platform.processor() or platform.machine()
    result: dict = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({host})",
                    "torch": torch.__version__, "numpy": np.__version__, "small": args.small,
                    "cpus": os.cpu_count(), "load": os.getloadavg()[0]}
    for name in sections:
        log(f"{name} ...")
        t0 = time.monotonic()
        if name == "alg1":
            result[name] = alg1(sizes, device, args.reps)
        elif name == "union":
            result[name] = union(sizes, device, args.reps)
        elif name == "steps":
            result[name] = steps(sizes, device)
        else:
            result[name] = hook(sizes, device)
        log(f"{name} done in {time.monotonic() - t0:.1f} s")
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
