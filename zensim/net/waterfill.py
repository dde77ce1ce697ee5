"""Max-min fair rates by progressive filling, compiled with numba (the inner loop of the maxmin model).

`waterfill(routes, capacity)`: flows given by rows of link ids (padded with the last link, whose
capacity is ignored), links by capacity. Repeatedly the link with the least fair share
`residual / unfixed flows` fixes the rate of its unfixed flows at that share (the bottleneck
algorithm; links whose shares tie within a relative 1e-12 saturate together). A solve costs
O(incidences + levels x links of the component), compiled: about 20 ms for the million flows of a
1024-rank all-to-all. Returns each flow's rate and, per link, the level at which it saturated (inf for
a link that limits no flow).
"""

from __future__ import annotations

import numba
import numpy as np

_TIE = 1e-12  # relative: link shares this close saturate at one level


@numba.njit(cache=True)
def _fill(routes: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover (compiled)
    flows, width = routes.shape
    links = capacity.size
    dummy = links - 1
    count = np.zeros(links, np.int64)
    for f in range(flows):
        for j in range(width):
            k = routes[f, j]
            if k != dummy:
                count[k] += 1
    start = np.zeros(links + 1, np.int64)
    for k in range(links):
        start[k + 1] = start[k] + count[k]
    members = np.empty(start[links], np.int64)
    fill = start[:links].copy()
    for f in range(flows):
        for j in range(width):
            k = routes[f, j]
            if k != dummy:
                members[fill[k]] = f
                fill[k] += 1
    live = np.flatnonzero(count[:dummy] > 0)  # links still carrying unfixed flows (compacted as they empty)
    nlive = live.size
    share = np.empty(nlive)
    saturated = np.empty(nlive, np.int64)
    residual = capacity.copy()
    level = np.full(links, np.inf)
    rate = np.full(flows, np.nan)
    left = flows
    while left > 0:
        low = np.inf
        for i in range(nlive):
            k = live[i]
            share[i] = residual[k] / count[k]
            if share[i] < low:
                low = share[i]
        bound = low * (1 + _TIE)
        nsat = 0
        for i in range(nlive):
            if share[i] <= bound:
                saturated[nsat] = live[i]
                level[live[i]] = low
                nsat += 1
        for s in range(nsat):
            k = saturated[s]
            for i in range(start[k], start[k + 1]):
                f = members[i]
                if rate[f] == rate[f]:  # already fixed (not NaN)
                    continue
                rate[f] = low
                left -= 1
                for j in range(width):
                    other = routes[f, j]
                    if other != dummy:
                        count[other] -= 1
                        residual[other] = max(residual[other] - low, 0.0)
        kept = 0
        for i in range(nlive):
            if count[live[i]] > 0:
                live[kept] = live[i]
                kept += 1
        nlive = kept
    return rate, level


def waterfill(routes: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Max-min fair rates of flows with `routes` (int64 rows padded with len(capacity) - 1) under link
    `capacity`; also the level at which each link saturated (inf where it limits no flow)."""
    return _fill(np.ascontiguousarray(routes, dtype=np.int64), np.ascontiguousarray(capacity, dtype=np.float64))


@numba.njit(cache=True)
def _solve(flows: np.ndarray, alive: np.ndarray, left: np.ndarray, base_time: np.ndarray, rate: np.ndarray,
           routes: np.ndarray, capacity: np.ndarray, now: float):  # pragma: no cover (compiled)
    keep = flows[alive[flows]]
    count, width = keep.size, routes.shape[1]
    sub = np.empty((count, width), np.int64)
    for i in range(count):
        f = keep[i]
        left[f] = max(left[f] - rate[f] * (now - base_time[f]), 0.0)
        base_time[f] = now
        sub[i] = routes[f]
    fair, level = _fill(sub, capacity)
    finish = np.empty(count)
    last = np.full(capacity.size, -np.inf)
    for i in range(count):
        f = keep[i]
        rate[f] = fair[i]
        end = finish[i] = now + left[f] / fair[i]
        for j in range(width):
            k = sub[i, j]
            if end > last[k]:
                last[k] = end
    return keep, finish, level, last


def solve_flows(flows: np.ndarray, alive: np.ndarray, left: np.ndarray, base_time: np.ndarray, rate: np.ndarray,
                routes: np.ndarray, capacity: np.ndarray, now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One max-min solve of the flows `flows` (ids into the per-flow arrays) at time `now`, in one compiled
    pass: the flows still `alive`, their bytes `left` advanced from `base_time` to now at their old
    `rate` (updated in place, as are base_time and rate), their finish times under the new rates, each
    link's saturation level (as `waterfill`) and the latest finish among the flows on each link
    (-inf where none). `routes`: every flow's row of link ids (padded with len(capacity) - 1)."""
    return _solve(np.ascontiguousarray(flows, dtype=np.int64), alive, left, base_time, rate, routes,
                  np.ascontiguousarray(capacity, dtype=np.float64), float(now))
