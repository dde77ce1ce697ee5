"""Cupcake's optimal fusion strategy (thesis ch. 5, Algorithm 5.1), and the brute force it is checked against.

`optimal_fusion(chain)` is Algorithm 5.1: FindOptFusion(M, k) recursively fixes the next group
T_k .. T_i, with the thesis' two prunings:

- Insight #2 (eq. 5.5 with M.delay): while B(k, i) + h(k, i) <= M.delay, the group's backward and
  compression hide under the previous group's communication, so shorter first groups are skipped
  (i starts at j*);
- Insight #1 (eq. 5.4, lines 19-21): the optimistic outcome M.comp + max(base, cases) of a choice
  is a lower bound; choices whose bound exceeds the best time found so far are skipped.

Two additions, both exact (the result is the optimum; the test compares with brute force):

- the thesis' suggested bootstrap: the best time found so far starts from the best even split
  (1 .. 64 groups) instead of infinity, so the bound prunes from the first branch;
- dominance (`dominance=True`): the rest of the timeline from T_k depends on the prefix M only
  through (M.comp, end of M's communication), and is monotone in both; a state at the same k that
  is no earlier in both than one already explored cannot do better, and is skipped.

The time of a strategy is `Chain.time` (eq. 5.1); M.comp is the time from the start of backward
to the end of M's last compression, M.delay the time from then to the end of its communication.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from zensim.train.fusion.base import Fusing, FusionStrategy
from zensim.train.fusion.chain import Chain


@dataclass(frozen=True)
class FusionResult:
    """A strategy (group ends), its iteration time, how many search nodes it took, and the wall time."""

    ends: tuple[int, ...]
    time: float
    nodes: int
    seconds: float
    method: str


class SearchLimit(RuntimeError):
    """The search visited more nodes than its `node_limit` allowed."""


def optimal_fusion(chain: Chain, *, dominance: bool = True, bootstrap: bool = True,
                   node_limit: int | None = None) -> FusionResult:
    """The optimal fusion strategy of `chain` by Algorithm 5.1 (with the exact additions above)."""
    t0 = time.perf_counter()
    n, fwd = chain.n, chain.forward
    cb, cx = chain.cum_backward, chain.cum_size
    ha, hb = chain.compress.alpha, chain.compress.beta
    ga, gb = chain.communicate.alpha, chain.communicate.beta
    best = {"ends": chain.single(), "time": chain.time(chain.single())}
    if bootstrap:
        for groups in range(1, min(n, 64) + 1):
            ends = chain.even(groups)
            t = chain.time(ends)
            if t < best["time"]:
                best.update(ends=ends, time=t)
    # dominance table: least[k, a] = the earliest communication end of an explored state at T_k
    # with at most a groups so far (its compression end is a function of k and a: h is affine)
    least = np.full((n + 1, n + 1), np.inf)
    nodes = 0

    def dominated(k: int, a: int, comm_end: float) -> bool:
        if least[k, a] <= comm_end:
            return True
        np.minimum(least[k, a:], comm_end, out=least[k, a:])
        return False

    def find(prefix: tuple[int, ...], k: int, comp: float, comm_end: float) -> tuple[tuple[int, ...] | None, float]:
        """FindOptFusion(M, k): the best ends from T_k on given M, and the iteration time it gives."""
        nonlocal nodes
        if dominance and dominated(k, len(prefix), comm_end):
            return None, math.inf
        nodes += 1
        if node_limit is not None and nodes > node_limit:
            raise SearchLimit(f"more than {node_limit} search nodes")
        delay = comm_end - comp
        # candidate first groups T_k .. T_i for i = k .. n-1, as arrays over i
        size = cx[k + 1:] - cx[k]
        back = cb[k + 1:] - cb[k]
        rest = cx[n] - cx[k + 1:]
        head = back + ha + hb * size                       # B(k, i) + h(k, i)
        h_rest = np.where(rest > 0, ha + hb * rest, 0.0)   # h(i+1, n-1), 0 when empty
        g_first = ga + gb * size
        g_rest = np.where(rest > 0, ga + gb * rest, 0.0)
        base = back[-1] + (head - back) + h_rest           # lines 19-21: the optimistic outcome
        cases = np.maximum(head, delay) + g_first + g_rest
        bound = fwd + comp + np.maximum(base, cases)
        ends_comm = np.maximum(comp + head, comm_end) + g_first
        local, local_time = (n,), fwd + float(ends_comm[-1])
        if local_time < best["time"]:
            best.update(ends=prefix + local, time=local_time)
        fits = int(np.searchsorted(head, delay, side="right"))  # head is increasing in i
        jstar = max(fits - 1, 0)                                 # eq. 5.5 with M.delay
        a = len(prefix) + 1
        for j in range(jstar, n - k - 1):  # the last candidate (the whole rest) is `local` above
            if bound[j] > best["time"] or (dominance and least[k + j + 1, a] <= ends_comm[j]):
                continue
            i = k + j
            sub, t = find(prefix + (i + 1,), i + 1, comp + float(head[j]), float(ends_comm[j]))
            if sub is None:
                continue
            if t < local_time:
                local, local_time = (i + 1,) + sub, t
            if t < best["time"]:
                best.update(ends=prefix + (i + 1,) + sub, time=t)
        return local, local_time

    find((), 0, 0.0, 0.0)
    ends = best["ends"]
    return FusionResult(ends, chain.time(ends), nodes, time.perf_counter() - t0, "cupcake")


def brute_force(chain: Chain) -> FusionResult:
    """The best of all 2^(N-1) strategies (N <= 20), timed all at once, for checking the searches."""
    n = chain.n
    if n > 20:
        raise ValueError(f"brute force over 2^{n - 1} strategies is not sensible")
    t0 = time.perf_counter()
    masks = np.arange(1 << (n - 1), dtype=np.int64)
    cb, cx = chain.cum_backward, chain.cum_size
    start = np.zeros(len(masks), dtype=np.int64)
    comp_work = np.zeros(len(masks))
    comm_end = np.zeros(len(masks))
    for i in range(n):
        close = np.ones(len(masks), dtype=bool) if i == n - 1 else (masks >> i & 1).astype(bool)
        size = cx[i + 1] - cx[start]
        comp_work = np.where(close, comp_work + chain.compress.alpha + chain.compress.beta * size, comp_work)
        ended = np.maximum(cb[i + 1] + comp_work, comm_end) + chain.communicate.alpha + chain.communicate.beta * size
        comm_end = np.where(close, ended, comm_end)
        start = np.where(close, i + 1, start)
    best = int(np.argmin(comm_end))
    ends = tuple(i + 1 for i in range(n - 1) if best >> i & 1) + (n,)
    return FusionResult(ends, chain.time(ends), len(masks), time.perf_counter() - t0, "brute-force")


def optimal_fusion_dp(chain: Chain) -> FusionResult:
    """The same optimum by dynamic programming over (tensors fused k, groups so far a), O(N^3) vectorized.

    Because h is affine, M.comp = B(0, k-1) + a alpha_h + beta_h x(0, k-1) depends only on (k, a),
    and the rest of the timeline is monotone in the end of M's communication; so the least
    communication end per (k, a) is all the search needs to keep. Exact like Algorithm 5.1, and
    polynomial where the branch and bound can take long (compute-bound models with hundreds of tensors).
    """
    t0 = time.perf_counter()
    n = chain.n
    cb, cx = chain.cum_backward, chain.cum_size
    ha, hb = chain.compress.alpha, chain.compress.beta
    ga, gb = chain.communicate.alpha, chain.communicate.beta
    least = np.full((n + 1, n + 1), np.inf)   # least[k, a]: earliest comm end, k tensors in a groups
    parent = np.full((n + 1, n + 1), -1, dtype=np.int64)
    least[0, 0] = 0.0
    groups = np.arange(n + 1, dtype=np.float64)
    for k in range(n):
        live = np.flatnonzero(np.isfinite(least[k, : k + 1]))
        if not len(live):
            continue
        stop = np.arange(k + 1, n + 1)                        # the group is T_k .. T_{stop-1}
        size = cx[stop] - cx[k]
        comp = cb[stop][None, :] + (groups[live] + 1)[:, None] * ha + hb * cx[stop][None, :]
        end = np.maximum(comp, least[k, live][:, None]) + ga + gb * size[None, :]
        rows, cols = live + 1, stop                           # new state (stop, a + 1)
        current = least[cols[None, :], rows[:, None]]
        better = end < current
        least[cols[None, :], rows[:, None]] = np.where(better, end, current)
        parent[cols[None, :], rows[:, None]] = np.where(better, k, parent[cols[None, :], rows[:, None]])
    a = int(np.argmin(least[n]))
    ends, k = [], n
    while k > 0:
        ends.append(k)
        k, a = int(parent[k, a]), a - 1
    ends = tuple(reversed(ends))
    return FusionResult(ends, chain.time(ends), int(np.isfinite(least).sum()), time.perf_counter() - t0, "cupcake-dp")


def fuse(f: Fusing) -> tuple[Chain, tuple[int, ...]]:
    """Fuse then compress, the groups by Cupcake's optimal fusion."""
    chain = f.chain()
    return chain, optimal_fusion_dp(chain).ends


CUPCAKE = FusionStrategy("cupcake", "fuse then compress, Cupcake's optimal fusion", fuse, "bucket")
