"""Background traffic on the iteration timeline: Gemini's in-memory checkpoints (thesis ch. 6).

Three pieces, each usable on its own:

- **placement** (Algorithm 6.1): which machines hold a replica of each machine's checkpoint
  (group placement when m divides N, mixed group + ring otherwise; a plain ring for comparison),
  and the probability that training recovers from CPU memory when k machines fail at once: the
  thesis' Corollary 6.1 formula, the exact count, and a Monte Carlo simulation of random failures;
- **partition** (Algorithm 6.2): a checkpoint cut into chunks that fit the network's idle spans of
  an iteration (spans scaled by mu, chunks at most one sub-buffer R/p, f(s) = alpha + s/B).

`zensim.train.gemini` runs the partition on the iteration timeline: the idle spans the timeline's
NICs really have, and the checkpoint as a client of the same network model as the training traffic
(interleaved, or sent at once), its overhead measured there.

Decisions where the thesis is silent or misprinted (docs/fusion.md repeats them):
- Algorithm 6.2 line 15 subtracts f(remain_size) from the span; the chunk just placed is `size`,
  so we subtract f(size). A span with no room for even alpha is left (the printed loop would not end).
- the last idle span is infinite (line 2): what does not fit is placed there.
- one sub-buffer (p = 1) cannot overlap the receiver's GPU-to-CPU copy with the next chunk, so a
  chunk then occupies its span for f(s) + s / copy_bandwidth; with p >= 2 the pipeline hides the
  copy behind the network while the copy is not the slower of the two (s / min(B, copy)).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


# ---------------------------------------------------------------- placement and recovery (§6.4)

def placement(machines: int, replicas: int) -> tuple[list[list[int]], str]:
    """Algorithm 6.1 (0-based machine ids): the groups and 'group' or 'mixed' (last group a ring)."""
    if not 1 <= replicas <= machines:
        raise ValueError(f"need 1 <= replicas <= machines, got m={replicas}, N={machines}")
    groups = [list(range(replicas * i, replicas * (i + 1))) for i in range(machines // replicas)]
    if machines % replicas == 0:
        return groups, "group"
    groups[-1].extend(range(replicas * (machines // replicas), machines))
    return groups, "mixed"


def holders(machines: int, replicas: int, strategy: str = "gemini") -> list[frozenset[int]]:
    """For each machine i, the machines whose CPU memory holds a replica of i's checkpoint (i included).

    'gemini': Algorithm 6.1 (a group shares its replicas; the mixed strategy's last group is a ring
    where a machine writes to the next m-1 machines of that group); 'ring': machine i writes to
    i+1 .. i+m-1 mod N over all machines.
    """
    if strategy == "ring":
        if not 1 <= replicas <= machines:
            raise ValueError(f"need 1 <= replicas <= machines, got m={replicas}, N={machines}")
        return [frozenset((i + j) % machines for j in range(replicas)) for i in range(machines)]
    if strategy != "gemini":
        raise ValueError(f"unknown placement {strategy!r} (gemini, ring)")
    groups, kind = placement(machines, replicas)
    out: list[frozenset[int]] = [frozenset()] * machines
    for g, group in enumerate(groups):
        ring = kind == "mixed" and g == len(groups) - 1
        for pos, i in enumerate(group):
            out[i] = (frozenset(group[(pos + j) % len(group)] for j in range(replicas)) if ring
                      else frozenset(group))
    return out


def recovery_formula(machines: int, replicas: int, failed: int) -> float:
    """Corollary 6.1 (N divisible by m): 1 for k < m, else max(0, 1 - N C(N-m, k-m) / (m C(N, k))).

    Exact for m <= k < 2m, a lower bound for k >= 2m (groups counted twice are not subtracted).
    """
    N, m, k = machines, replicas, failed
    if N % m:
        raise ValueError(f"Corollary 6.1 needs m | N, got N={N}, m={m}")
    if not 0 <= k <= N:
        raise ValueError(f"failed machines must be in 0..N, got {k}")
    if k < m:
        return 1.0
    return max(0.0, 1.0 - N * math.comb(N - m, k - m) / (m * math.comb(N, k)))


def recovery_group_exact(machines: int, replicas: int, failed: int) -> float:
    """Exact recovery probability of group placement (m | N) by inclusion-exclusion over whole groups lost."""
    N, m, k = machines, replicas, failed
    if N % m:
        raise ValueError(f"group placement needs m | N, got N={N}, m={m}")
    groups = N // m
    lost = sum((-1) ** (j + 1) * math.comb(groups, j) * math.comb(N - j * m, k - j * m)
               for j in range(1, min(groups, k // m) + 1))
    return 1.0 - lost / math.comb(N, k)


def _unrecoverable(holder_sets: Sequence[frozenset[int]], down: set[int] | frozenset[int]) -> bool:
    """True when some machine lost every replica of its checkpoint."""
    return any(s <= down for s in holder_sets)


def recovery_enumerated(holder_sets: Sequence[frozenset[int]], failed: int, limit: int = 2_000_000) -> float:
    """Exact recovery probability of any placement by enumerating every set of `failed` machines."""
    N = len(holder_sets)
    if math.comb(N, failed) > limit:
        raise ValueError(f"C({N}, {failed}) failure sets is over the enumeration limit {limit}")
    unique = list(set(holder_sets))
    bad = sum(_unrecoverable(unique, frozenset(c)) for c in itertools.combinations(range(N), failed))
    return 1.0 - bad / math.comb(N, failed)


def recovery_simulated(holder_sets: Sequence[frozenset[int]], failed: int, trials: int,
                       rng: np.random.Generator) -> tuple[float, float]:
    """Monte Carlo: `failed` machines chosen uniformly at random `trials` times; (rate, its standard error)."""
    N = len(holder_sets)
    unique = [np.fromiter(s, dtype=np.int64) for s in set(holder_sets)]
    down = np.zeros((trials, N), dtype=bool)
    picks = np.argsort(rng.random((trials, N)), axis=1)[:, :failed]
    np.put_along_axis(down, picks, True, axis=1)
    lost = np.zeros(trials, dtype=bool)
    for s in unique:
        lost |= down[:, s].all(axis=1)
    p = 1.0 - float(lost.mean())
    return p, math.sqrt(max(p * (1 - p), 1.0 / trials) / trials)


# ---------------------------------------------------------------- checkpoint traffic (§6.5)

@dataclass(frozen=True)
class Checkpoint:
    """A machine's checkpoint traffic: C bytes to each of m-1 peers, through p sub-buffers of R/p bytes."""

    nbytes: float                 # C: one machine's model states (parameters and optimizer state)
    replicas: int = 2             # m: one replica stays local, m-1 cross the network
    buffer_bytes: float = 128 * 2**20   # R (Gemini reserves 128 MB)
    buffers: int = 4              # p (Gemini: four 32 MB sub-buffers)
    mu: float = 0.9               # share of each profiled idle span the algorithm may fill

    def __post_init__(self) -> None:
        if self.nbytes <= 0 or self.replicas < 1 or self.buffer_bytes <= 0 or self.buffers < 1 or not 0 < self.mu <= 1:
            raise ValueError(f"invalid checkpoint {self}")

    @property
    def chunk(self) -> float:
        """Largest chunk: one sub-buffer, R/p bytes."""
        return self.buffer_bytes / self.buffers

    @property
    def remote_bytes(self) -> float:
        """Bytes a machine sends per checkpoint: (m-1) C."""
        return (self.replicas - 1) * self.nbytes


@dataclass(frozen=True)
class Wire:
    """A checkpoint chunk's path: f(s) = alpha + s / bandwidth, then a GPU-to-CPU copy at copy_bandwidth."""

    bandwidth: float              # B, bytes/s (the NIC)
    alpha: float = 0.0            # startup per chunk, seconds
    copy_bandwidth: float = math.inf

    def occupancy(self, size: float, buffers: int) -> float:
        """Seconds a chunk of `size` bytes holds the span: f(s), plus the copy when it cannot pipeline."""
        if size <= 0:
            return 0.0
        if buffers >= 2:
            return self.alpha + size / min(self.bandwidth, self.copy_bandwidth)
        return self.alpha + size / self.bandwidth + size / self.copy_bandwidth

    def fits(self, span: float, buffers: int) -> float:
        """Largest chunk whose occupancy is at most `span` (0 when not even alpha fits)."""
        if span <= self.alpha:
            return 0.0
        rate = (min(self.bandwidth, self.copy_bandwidth) if buffers >= 2
                else 1.0 / (1.0 / self.bandwidth + 1.0 / self.copy_bandwidth))
        return (span - self.alpha) * rate


@dataclass(frozen=True)
class Chunk:
    """One checkpoint chunk: the idle span it goes in, which remote copy, its size."""

    span: int
    copy: int
    nbytes: float


def partition(spans: Sequence[float], ckpt: Checkpoint, wire: Wire) -> list[Chunk]:
    """Algorithm 6.2: the chunks of m-1 remote copies of the checkpoint placed into idle spans in order.

    `spans` are the profiled idle span lengths; the last one is treated as infinite (line 2).
    """
    if not spans:
        raise ValueError("no idle spans")
    chunks: list[Chunk] = []
    remaining, copy = ckpt.nbytes, 0
    copies = ckpt.replicas - 1
    if copies == 0:
        return chunks
    full = wire.occupancy(ckpt.chunk, ckpt.buffers)
    for index, length in enumerate(spans):
        room = math.inf if index == len(spans) - 1 else ckpt.mu * length
        while room > 0:
            size = ckpt.chunk if room >= full else wire.fits(room, ckpt.buffers)
            size = min(remaining, size)
            if size <= 0:
                break
            chunks.append(Chunk(index, copy, size))
            remaining -= size
            room -= wire.occupancy(size, ckpt.buffers)
            if remaining <= 0:
                copy += 1
                if copy == copies:
                    return chunks
                remaining = ckpt.nbytes
    return chunks


def idle_spans(busy: Sequence[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    """The gaps of [start, end) not covered by the busy intervals (any order, may overlap)."""
    spans, at = [], start
    for lo, hi in sorted(busy):
        if lo > at:
            spans.append((at, min(lo, end)))
        at = max(at, hi)
        if at >= end:
            break
    if at < end:
        spans.append((at, end))
    return [(lo, hi) for lo, hi in spans if hi > lo]
