"""Espresso's per-tensor compression decisions (thesis ch. 4) on an abstract timeline.

Each tensor gets an `Option`: no compression (all-reduce, flat or hierarchical) or compression on
the GPU or the CPU with an all-gather (indivisible) or an all-to-all + all-gather (divisible)
collective, flat over every GPU or hierarchical (dense reduce-scatter inside the machine, compress
only across machines, dense all-gather inside: the thesis' 'inter' compression choice). That is 10
options per tensor; Espresso's full tree (4341 options) also places (de)compression between any two
phases, which this model leaves out.

The timeline (thesis §4.6) runs one GPU's view of a symmetric job on four FIFO resources: the GPU
(backward, GPU compression and decompression: compression delays backward), the CPU (CPU
compression, its PCIe copies folded into the CPU cost profile), the intra-machine links and the NIC.
Each resource serves its work in the order it became ready (compression before the next layer's
backward on a tie, as a gradient hook runs before autograd issues the next layer). Collective times
are alpha-beta ring models (Thakur et al., as the thesis does): on P = N G GPUs, a flat ring is
bounded by the slower of NVLink and the NIC, a hierarchical collective's inter-machine phase runs G
rings at once through one NIC.

`espresso(model, system)` is the thesis' search: Algorithm 4.1 (tensors by size, larger first, ties
nearer the output first; uncompressed tensors communicated before a bubble of the communication
timeline are ruled out; each remaining tensor takes its best GPU option with the others fixed) and
Algorithm 4.2 (CPU offloading: group compressed tensors by size and option, offload u_i of each
group, search every U; past `enumeration_limit` combinations a coordinate descent over the groups,
reported as such).

Lemma 4.1 says to offload the tensors *farthest* from the output, with the intuition that tensors
offloaded earlier overlap more CPU compression with backward and communication. The earliest-ready
tensors are the ones *nearest* the output, and on this timeline that is what wins: against brute
force over every subset of compressed tensors (60 random small models, benchmarks/fusion_search.py
--espresso-lemma), offloading the nearest first missed the best subset once, the farthest first 19
times. We offload the nearest first.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from zensim.train.fusion.chain import Affine


@dataclass(frozen=True)
class Option:
    """One tensor's compression decision."""

    compress: bool
    device: str = "gpu"             # where compression and decompression run: gpu | cpu
    collective: str = "allreduce"   # allreduce (uncompressed) | allgather | alltoall (+ allgather)
    hierarchical: bool = True

    @property
    def name(self) -> str:
        """Short label, e.g. 'fp32/hier' or 'gpu/alltoall/flat'."""
        where = "hier" if self.hierarchical else "flat"
        return f"{self.device}/{self.collective}/{where}" if self.compress else f"fp32/{where}"


UNCOMPRESSED = tuple(Option(False, hierarchical=h) for h in (True, False))
GPU_OPTIONS = tuple(Option(True, "gpu", c, h) for c in ("allgather", "alltoall") for h in (True, False))
OPTIONS = UNCOMPRESSED + GPU_OPTIONS + tuple(replace(o, device="cpu") for o in GPU_OPTIONS)


@dataclass(frozen=True)
class System:
    """N machines x G GPUs, their links, the compression ratio and the (de)compression cost profiles.

    Bandwidths are bytes/s (the NIC per machine, NVLink/PCIe per GPU); costs are seconds of the
    dense (encode) or compressed (decode) bytes they process.
    """

    machines: int
    gpus: int
    nic_bandwidth: float
    intra_bandwidth: float
    ratio: float                    # compressed bytes / dense bytes (top-k 1% in COO: 0.02)
    gpu_encode: Affine
    gpu_decode: Affine
    cpu_encode: Affine
    cpu_decode: Affine
    nic_latency: float = 0.0
    intra_latency: float = 0.0

    @property
    def ranks(self) -> int:
        """P = N G."""
        return self.machines * self.gpus


@dataclass(frozen=True)
class Model:
    """Tensors in gradient-ready order (T_0 nearest the output): dense bytes and backward seconds."""

    sizes: np.ndarray
    backward: np.ndarray
    forward: float = 0.0

    def __post_init__(self) -> None:
        sizes = np.asarray(self.sizes, dtype=np.float64)
        back = np.asarray(self.backward, dtype=np.float64)
        if sizes.ndim != 1 or sizes.shape != back.shape or not len(sizes) or (sizes <= 0).any() or (back < 0).any():
            raise ValueError("sizes (> 0) and backward times (>= 0) must be equal-length 1-d sequences")
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "backward", back)


def _ring(steps: int, nbytes: float, bandwidth: float, latency: float) -> float:
    """`steps` ring steps of `nbytes` each."""
    return steps * (latency + nbytes / bandwidth) if steps > 0 else 0.0


def steps(option: Option, size: float, s: System) -> list[tuple[str, float]]:
    """The resources a tensor of `size` dense bytes holds after its backward, in order: (resource, seconds)."""
    N, G, P = s.machines, s.gpus, s.ranks
    nic, intra = s.nic_bandwidth, s.intra_bandwidth
    # a flat ring crosses machines when N > 1 and is then bounded by the slower of NVLink and the NIC
    flat_res, flat_bw, flat_lat = (("nic", min(nic, intra), s.nic_latency) if N > 1
                                   else ("intra", intra, s.intra_latency))
    enc, dec = (s.gpu_encode, s.gpu_decode) if option.device == "gpu" else (s.cpu_encode, s.cpu_decode)
    dev = option.device
    c = s.ratio * size
    out: list[tuple[str, float]] = []
    if not option.compress:
        if option.hierarchical:
            out.append(("intra", _ring(G - 1, size / G, intra, s.intra_latency)))
            out.append(("nic", _ring(2 * (N - 1), size / N, nic, s.nic_latency)))   # G rings share the NIC
            out.append(("intra", _ring(G - 1, size / G, intra, s.intra_latency)))
        else:
            out.append((flat_res, _ring(2 * (P - 1), size / P, flat_bw, flat_lat)))
    elif not option.hierarchical:
        out.append((dev, enc(size)))
        if option.collective == "allgather":
            out.append((flat_res, _ring(P - 1, c, flat_bw, flat_lat)))
            out.append((dev, dec(P * c)))
        else:
            shuffle = (s.nic_latency + G * (P - G) * c / (P * nic)) if N > 1 else _ring(1, (G - 1) * c / G, intra, s.intra_latency)
            out.append((flat_res, shuffle))
            out.append((dev, dec(c) + enc(size / P)))                               # aggregate the shard, re-compress
            out.append((flat_res, _ring(P - 1, c / P, flat_bw, flat_lat)))
            out.append((dev, dec(c)))
    else:
        out.append(("intra", _ring(G - 1, size / G, intra, s.intra_latency)))
        out.append((dev, enc(size / G)))
        if option.collective == "allgather":
            out.append(("nic", _ring(N - 1, c, nic, s.nic_latency)))                # G rings of c / G
            out.append((dev, dec(N * c / G)))
        else:
            out.append(("nic", (s.nic_latency + (N - 1) * c / (N * nic)) if N > 1 else 0.0))
            out.append((dev, dec(c / G) + enc(size / (G * N))))
            out.append(("nic", _ring(N - 1, c / N, nic, s.nic_latency)))
            out.append((dev, dec(c / G)))
        out.append(("intra", _ring(G - 1, size / G, intra, s.intra_latency)))
    return [(res, t) for res, t in out if t > 0]


@dataclass(frozen=True)
class Timeline:
    """One strategy's iteration: its time and the busy intervals of each resource, per tensor."""

    time: float
    busy: dict[str, list[tuple[float, float, int]]]   # resource -> [(start, end, tensor)] in start order


def timeline(model: Model, system: System, strategy: Sequence[Option]) -> Timeline:
    """Run the strategy on the four FIFO resources; iteration = forward + the last finish."""
    if len(strategy) != len(model.sizes):
        raise ValueError(f"strategy has {len(strategy)} options for {len(model.sizes)} tensors")
    plans = [steps(o, float(x), system) for o, x in zip(strategy, model.sizes)]
    free = {"gpu": 0.0, "cpu": 0.0, "intra": 0.0, "nic": 0.0}
    busy: dict[str, list[tuple[float, float, int]]] = {k: [] for k in free}
    n = len(plans)
    # (ready, backward last on a tie, counter, tensor, step index; -1 = its backward)
    heap = [(0.0, 1, 0, 0, -1)]
    counter, last = 1, 0.0
    while heap:
        ready, _, _, tensor, step = heapq.heappop(heap)
        res, seconds = ("gpu", float(model.backward[tensor])) if step < 0 else plans[tensor][step]
        start = max(ready, free[res])
        end = free[res] = start + seconds
        busy[res].append((start, end, tensor))
        last = max(last, end)
        if step < 0 and tensor + 1 < n:
            heapq.heappush(heap, (end, 1, counter, tensor + 1, -1))
            counter += 1
        if step + 1 < len(plans[tensor]):
            heapq.heappush(heap, (end, 0, counter, tensor, step + 1))
            counter += 1
    return Timeline(model.forward + last, busy)


def comm_resource(system: System) -> str:
    """The resource whose gaps are the communication bubbles: the NIC across machines, else NVLink."""
    return "nic" if system.machines > 1 else "intra"


def before_bubble(tl: Timeline, resource: str, eps: float = 1e-12) -> set[int]:
    """Tensors all of whose communication on `resource` ends before the last gap in its timeline."""
    spans = sorted(tl.busy[resource])
    gap_at = None
    for (s0, e0, _), (s1, _, _) in zip(spans, spans[1:]):
        if s1 > e0 + eps:
            gap_at = e0
    if gap_at is None:
        return set()
    last_end: dict[int, float] = {}
    for s0, e0, t in spans:
        last_end[t] = max(last_end.get(t, 0.0), e0)
    return {t for t, e in last_end.items() if e <= gap_at + eps}


@dataclass(frozen=True)
class Decision:
    """Espresso's result: one option per tensor, its iteration time, and how the search went."""

    strategy: tuple[Option, ...]
    time: float
    evaluations: int
    seconds: float
    uniform: dict[str, float]       # every option applied to all tensors -> iteration time
    offload: str                    # 'exhaustive' or 'coordinate descent' (Algorithm 4.2)

    @property
    def best_uniform(self) -> tuple[str, float]:
        """The best single option applied to every tensor, and its time."""
        name = min(self.uniform, key=self.uniform.get)
        return name, self.uniform[name]

    def counts(self) -> dict[str, int]:
        """How many tensors took each option."""
        out: dict[str, int] = {}
        for o in self.strategy:
            out[o.name] = out.get(o.name, 0) + 1
        return out


def espresso(model: Model, system: System, *, enumeration_limit: int = 20_000) -> Decision:
    """Algorithms 4.1 and 4.2: the compression strategy, with the best uniform strategy beside it."""
    t0 = time.perf_counter()
    n = len(model.sizes)
    evaluations = 0

    def F(strategy) -> float:
        nonlocal evaluations
        evaluations += 1
        return timeline(model, system, strategy).time

    uniform = {o.name: F([o] * n) for o in OPTIONS}
    start = min(UNCOMPRESSED, key=lambda o: uniform[o.name])
    S = [start] * n
    current = F(S)
    resource = comm_resource(system)
    # Algorithm 4.1: larger tensors first, nearer the output first among equal sizes
    order = sorted(range(n), key=lambda i: (-model.sizes[i], i))
    ruled_out = before_bubble(timeline(model, system, S), resource)
    for j in order:
        if j in ruled_out and not S[j].compress:
            continue
        for option in UNCOMPRESSED + GPU_OPTIONS:
            if option == S[j]:
                continue
            trial = S.copy()
            trial[j] = option
            t = F(trial)
            if t < current:
                S, current = trial, t
        ruled_out |= {i for i in before_bubble(timeline(model, system, S), resource) if not S[i].compress}
    # Algorithm 4.2: CPU offloading of GPU-compressed tensors, the earliest ready (nearest the output) first
    groups: dict[tuple[float, Option], list[int]] = {}
    for i, o in enumerate(S):
        if o.compress:
            groups.setdefault((float(model.sizes[i]), o), []).append(i)
    lists = [sorted(members) for members in groups.values()]

    def offloaded(counts: Sequence[int]) -> list[Option]:
        trial = S.copy()
        for members, u in zip(lists, counts):
            for i in members[:u]:
                trial[i] = replace(S[i], device="cpu")
        return trial

    combos = math.prod(len(m) + 1 for m in lists)
    best_u, best_t = [0] * len(lists), current
    if combos <= enumeration_limit:
        method = "exhaustive"
        for u in itertools.product(*(range(len(m) + 1) for m in lists)):
            t = F(offloaded(u))
            if t < best_t:
                best_u, best_t = list(u), t
    else:
        method = "coordinate descent"
        improved = True
        while improved:
            improved = False
            for g, members in enumerate(lists):
                for u in range(len(members) + 1):
                    if u == best_u[g]:
                        continue
                    trial_u = best_u.copy()
                    trial_u[g] = u
                    t = F(offloaded(trial_u))
                    if t < best_t:
                        best_u, best_t, improved = trial_u, t, True
    final = offloaded(best_u)
    return Decision(tuple(final), F(final), evaluations, time.perf_counter() - t0, uniform, method)
