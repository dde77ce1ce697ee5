"""Max-min fair rates by progressive filling, compiled with numba (the inner loop of the maxmin model).

`waterfill(routes, capacity)`: flows given by rows of link ids (padded with the last link, whose
capacity is ignored), links by capacity. Repeatedly the link with the least fair share
`residual / unfixed flows` fixes the rate of its unfixed flows at that share (the bottleneck
algorithm; links whose shares tie within a relative 1e-12 saturate together). A solve costs
O(incidences + levels x links of the component), compiled, and reads its memory in sequential runs:
per link its flows and their other links side by side (int32), a bit per fixed flow, and each
flow's rate taken at the end from the first step that saturated one of its links (the same rates,
bit for bit, as fixing flows link by link: at one level every subtraction from a link is of the
same share). About 20-45 ms for the million flows of a 1024-rank all-to-all. Returns each flow's rate
and, per link, the level at which it saturated (inf for a link that limits no flow).

Where every row pairs a link of one side with one of the other (a flat all-to-all: up link, down link),
the flows are held as a bit per pair instead, a row of bits per link (_pairs): fixing a saturated link's
flows reads its bits and clears each pair's bit in the other link's, 2 MB for 4096 x 4096 links, in
cache, where the incidences are 8 bytes each, scattered over every link's run as they are written. The
same subtractions, so the same rates bit for bit; 11-24 ns a flow against 23-42 on 9-17M-flow
all-to-alls.

Flows on one route always get one rate. Where a log's routes repeat (route_ids), a whole solve
(solve_compiled) fills a row per route counted as its flows, the level subtracted from the row's
other links once per flow, one by one: the same rates, bit for bit, with incidences per route.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from zensim.jit import announce
from zensim.net.keysort import radix

COMPILE_S = 10  # about this many seconds of CPU compile solve_compiled or warm_compiled (zensim.jit.announce)

_TIE = 1e-12  # relative: link shares this close saturate at one level
_BELOW = 1e-9  # relative: a re-solve refills the flows down to this far under the least rate that left
NEWTON = 16  # _fill_one's passes: where its steps have not settled in this many, the flows are filled in order
REPEATS = 4  # a log's flows are solved by route (route_ids) where a flow's route carries this many on average
SAMPLE = 1 << 16  # route_ids: a large log's sample


# The functions below allocate nothing: they write into a `Workspace` and are compiled without numba's
# reference counts (as zensim.net.fastloop.uncounted), so that the compiled maxmin loop's solves of small
# components cost O(their flows and links) and take no reference on its arrays (zensim.net.fastmaxmin).
_uncounted = numba.njit(cache=True, _nrt=False)

# The scratch of a solve, named: per flow of the component (`flows` rows: make_workspace's first size)
# its id (`flows`: the caller's list; `keep`: those alive; `spare`: a radix sort's scratch), its row of link
# numbers (`sub`; `rows`: the rows refilled; in a solve by routes, `row_of`: a kept flow's row, one per route,
# `mult`: each row's flows or a refilled row's, `route_of`: each row's route id, then its refilled row), its
# rates (`part`: a refill's, `fair`: the solve's) and
# finish time, a bit per flow (`fixed`) and per incidence its flow and other links (`entries`); per link
# of the network and the padding (the second size) the network's link of each number (`links`), the
# capacities of the solve (`cap`, `room`: what a refill leaves), whether a refill fills it, and _fill's and
# _set_rates's per-link arrays (`level`: where each saturated). Grown by the caller where a component has
# more flows (make_workspace); every array is written before it is read in a solve.
Workspace = namedtuple("Workspace", "flows keep sub rows part fair finish fixed entries links cap room refilled count "
                                    "start fill live share saturated residual level step_of lows end_of load top "
                                    "work oldest spare row_of mult route_of")


@numba.njit(cache=True)
def make_workspace(flows: int, links: int, width: int, by_route: bool) -> Workspace:  # pragma: no cover (compiled)
    """A Workspace for solves of up to `flows` flows with rows of `width` link ids over `links` links
    (the padding included); `by_route`: for solves by route too (its row_of, mult and route_of, else
    empty)."""
    flows = max(flows, 1)
    route_rows = flows if by_route else 0
    return Workspace(np.empty(flows, np.int64), np.empty(flows, np.int64), np.empty((flows, width), np.int32),
                     np.empty((flows, width), np.int32), np.empty(flows), np.empty(flows), np.empty(flows),
                     np.empty((flows >> 6) + 1, np.uint64), np.empty(flows * width * width, np.int32),
                     np.empty(links, np.int64), np.empty(links), np.empty(links), np.empty(links, np.bool_),
                     np.empty(links, np.int64), np.empty(links + 1, np.int64), np.empty(links, np.int64),
                     np.empty(links, np.int64), np.empty(links), np.empty(links, np.int64), np.empty(links),
                     np.empty(links), np.empty(links, np.int64), np.empty(links + 1), np.empty(links),
                     np.empty(links), np.empty(links), np.empty(links), np.empty(links), np.empty(flows, np.int64),
                     np.empty(route_rows, np.int32), np.empty(route_rows, np.int64), np.empty(route_rows, np.int64))


@_uncounted
def _incidences(routes, flows, links, ws, mult):  # pragma: no cover (compiled)
    """Per link (numbers 0..links-2, the padding links - 1) its count of the flows of the first `flows`
    rows of `routes` (ws.count; each row mult[row] flows, one where `mult` is empty) and its run of
    entries (ws.start, ws.entries): each the row and its other links, padded with the padding."""
    width = routes.shape[1]
    dummy = links - 1
    count = ws.count
    for k in range(links):
        count[k] = 0
    for f in range(flows):
        for j in range(width):
            count[routes[f, j]] += 1
    count[dummy] = 0
    # per link its flows, each entry the flow and its other links (padded with the dummy): a saturated
    # link's flows and the links they release are read in one sequential run, not gathered from `routes`
    start, entries, fill = ws.start, ws.entries, ws.fill
    start[0] = 0
    for k in range(links):
        start[k + 1] = start[k] + count[k]
    for k in range(links):
        fill[k] = start[k]
    # rows of two links (a flat log's NIC pairs): the same entries by an unrolled loop, a third less time
    for f in range(flows if width == 2 else 0):
        a, b = routes[f, 0], routes[f, 1]
        if a != dummy:
            entries[2 * fill[a]], entries[2 * fill[a] + 1] = f, b
            fill[a] += 1
        if b != dummy:
            entries[2 * fill[b]], entries[2 * fill[b] + 1] = f, a
            fill[b] += 1
    for f in range(flows if width != 2 else 0):
        for j in range(width):
            k = routes[f, j]
            if k != dummy:
                at = fill[k] * width
                fill[k] += 1
                entries[at] = f
                o = at + 1
                for h in range(width):
                    if h != j:
                        entries[o] = routes[f, h]
                        o += 1
    if mult.size:  # the count of flows, not rows
        for k in range(links):
            count[k] = 0
        for f in range(flows):
            for j in range(width):
                count[routes[f, j]] += mult[f]
        count[dummy] = 0


@_uncounted
def _fixes(f, fixed):  # pragma: no cover (compiled)
    """Whether flow f was not yet fixed (its bit in `fixed`, then set)."""
    bit = np.uint64(1) << np.uint64(f & 63)
    if fixed[f >> 6] & bit:
        return False
    fixed[f >> 6] |= bit
    return True


@_uncounted
def _take_up(at, low, width, dummy, entries, count, residual, m):  # pragma: no cover (compiled)
    """The `m` flows of entry `at` of a saturated link (a row: flows of one route) fixed at `low`: its
    other links carry m unfixed flows less and `low` less room for each, subtracted one by one as m rows
    would be (the saturated link's own are not read again: the caller clears its count once its flows
    are fixed)."""
    for o in range(at + 1, at + width):
        other = entries[o]
        if other != dummy:
            count[other] -= m
            r = residual[other]
            for _ in range(m):
                r = max(r - low, 0.0)
            residual[other] = r


# The lowest set bit's place in a uint64 word (> 0): the CPU's count of trailing zeros, compiled; as
# Python (NUMBA_DISABLE_JIT=1) by the int's bit length
_lowest = (lambda word: (int(word) & -int(word)).bit_length() - 1) if numba.config.DISABLE_JIT else trailing_zeros


@_uncounted
def _pairs(routes, flows, links, ws):  # pragma: no cover (compiled)
    """Where the first `flows` rows of two links (the padding links - 1) pair a link of one side with one
    of the other (each link only ever first or only ever second in a row; no padding), no two rows the same
    pair, and a bit per pair of the two sides' links fits in ws.entries: per link its count of rows
    (ws.count, as _incidences), its number on its side (ws.start: x, or -1 - x on the second side), the
    links by number (ws.fill: the first side's, then the second's) and per link a bit per link of the
    other side that a row pairs it with (ws.entries as uint64 words: the first side's rows of bits, then
    the second's). Returns the count of links on each side; (-1, 0) where they are not such pairs.
    A flat all-to-all's rows (up link, down link) are, where its flows are at least ~1/64 of up x down links."""
    dummy = links - 1
    count, side, ids = ws.count, ws.start, ws.fill
    for k in range(links):
        count[k] = 0
        side[k] = 0
    for f in range(flows):  # side bits: 1 first, 2 second
        a, b = routes[f, 0], routes[f, 1]
        if a == dummy or b == dummy:
            return -1, 0
        count[a] += 1
        count[b] += 1
        side[a] |= 1
        side[b] |= 2
    na = nb = 0
    for k in range(dummy):
        if side[k] == 3:
            return -1, 0
        if side[k] == 1:
            ids[na] = k
            na += 1
    for k in range(dummy):
        if side[k] == 2:
            ids[na + nb] = k
            side[k] = -1 - nb
            nb += 1
    for x in range(na):
        side[ids[x]] = x
    wa, wb = (nb + 63) >> 6, (na + 63) >> 6  # words of a first-side link's bits, of a second-side link's
    bits = ws.entries.view(np.uint64)
    if na * wa + nb * wb > bits.size:
        return -1, 0
    for i in range(na * wa + nb * wb):
        bits[i] = 0
    one = np.uint64(1)
    for f in range(flows):
        a, b = side[routes[f, 0]], -1 - side[routes[f, 1]]
        bit = one << np.uint64(b & 63)
        if bits[a * wa + (b >> 6)] & bit:  # a second row of one pair
            return -1, 0
        bits[a * wa + (b >> 6)] |= bit
        bits[na * wa + b * wb + (a >> 6)] |= one << np.uint64(a & 63)
    return na, nb


@_uncounted
def _take_up_pairs(k, low, na, nb, ws, count, residual):  # pragma: no cover (compiled)
    """_take_up of every unfixed row of saturated link k where _pairs holds (na, nb its sides' counts): each
    of k's pairs cleared from both links' bits, its other link one unfixed flow less and `low` less room."""
    bits, ids, x = ws.entries.view(np.uint64), ws.fill, ws.start[k]
    wa, wb = (nb + 63) >> 6, (na + 63) >> 6
    if x >= 0:  # first side: its bits, the other side's and where that side's links are numbered
        own, words, other, stride, base = x * wa, wa, na * wa, wb, na
    else:
        x = -1 - x
        own, words, other, stride, base = na * wa + x * wb, wb, 0, wa, 0
    one = np.uint64(1)
    mine = ~(one << np.uint64(x & 63))
    for w in range(words):
        word = bits[own + w]
        bits[own + w] = 0
        while word:
            y = (w << 6) + _lowest(word)
            word &= word - one
            bits[other + y * stride + (x >> 6)] &= mine
            o = ids[base + y]
            count[o] -= 1
            residual[o] = max(residual[o] - low, 0.0)


@_uncounted
def _fill(routes, flows, capacity, links, ws, rate, level, mult):  # pragma: no cover (compiled)
    """Progressive filling of the first `flows` rows of `routes` (link numbers, the padding links - 1)
    under the first `links` entries of `capacity`: each flow's rate into rate[:flows], each link's
    saturation level into level[:links] (ws: the scratch). A row stands for mult[row] flows of that route
    (one where `mult` is empty): the same rates and levels, bit for bit, as that many rows. Rows that pair
    two sides' links (_pairs: a flat all-to-all's) are fixed by the pairs' bits, not by the incidences:
    the same subtractions, in cache (a bit per pair, not a run of 8 bytes per incidence)."""
    width = routes.shape[1]
    dummy = links - 1
    na, nb = _pairs(routes, flows, links, ws) if width == 2 and not mult.size else (-1, 0)
    if na < 0:
        _incidences(routes, flows, links, ws, mult)
    count, start, entries = ws.count, ws.start, ws.entries
    live = ws.live  # links still carrying unfixed flows (compacted as they empty)
    nlive = 0
    for k in range(dummy):
        if count[k] > 0:
            live[nlive] = k
            nlive += 1
    share, saturated, residual, step_of, lows = ws.share, ws.saturated, ws.residual, ws.step_of, ws.lows
    never = nlive  # a link's saturation step: `never` for one that limits no flow (lows[never] is NaN)
    for k in range(links):
        residual[k] = capacity[k]
        level[k] = np.inf
        step_of[k] = never
    for i in range(nlive + 1):  # the level of each step
        lows[i] = np.nan
    fixed = ws.fixed  # a bit per flow
    for i in range((flows >> 6) + 1 if na < 0 else 0):
        fixed[i] = 0
    step = 0
    while nlive > 0:
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
                step_of[live[i]] = step
                nsat += 1
        lows[step] = low
        step += 1
        for s in range(nsat):
            k = saturated[s]
            if na >= 0:
                _take_up_pairs(k, low, na, nb, ws, count, residual)
            else:
                for at in range(start[k] * width, start[k + 1] * width, width):
                    f = entries[at]
                    if _fixes(f, fixed):
                        # the same subtractions as fixing the flow link by link: at one level they are all
                        # of `low`, so their order on a link does not change its residual
                        _take_up(at, low, width, dummy, entries, count, residual, mult[f] if mult.size else 1)
            count[k] = 0
        kept = 0
        for i in range(nlive):
            if count[live[i]] > 0:
                live[kept] = live[i]
                kept += 1
        nlive = kept
    for f in range(flows):  # a flow is fixed at the first step that saturates one of its links
        first = never
        for j in range(width):
            k = routes[f, j]
            if k != dummy and step_of[k] < first:
                first = step_of[k]
        rate[f] = lows[first]


@_uncounted
def _sift(heap, at, size, key, pos):  # pragma: no cover (compiled)
    """Restore the min-heap of links heap[:size] (by key[link]; pos[link] its place) around place `at`."""
    k = heap[at]
    while at > 0 and key[k] < key[heap[(at - 1) >> 1]]:
        up = heap[(at - 1) >> 1]
        heap[at], pos[up] = up, at
        at = (at - 1) >> 1
    while True:
        child = 2 * at + 1
        if child >= size:
            break
        if child + 1 < size and key[heap[child + 1]] < key[heap[child]]:
            child += 1
        if key[heap[child]] >= key[k]:
            break
        heap[at], pos[heap[child]] = heap[child], at
        at = child
    heap[at], pos[k] = k, at


@_uncounted
def _unheap(heap, at, size, key, pos):  # pragma: no cover (compiled)
    """Remove place `at` from the min-heap heap[:size] (_sift); returns the new size."""
    size -= 1
    pos[heap[at]] = -1
    if at < size:
        heap[at] = heap[size]
        _sift(heap, at, size, key, pos)
    return size


@_uncounted
def _fresh(size, count, residual, share, heap, pos):  # pragma: no cover (compiled)
    """_fill_levels's heap with its least entry up to date: a link's fair share only rises as flows on it
    are fixed (each at a level under it), so the heap keeps each link's share as it was last read, a
    bound from below; its least is read again, re-placed where it rose and dropped where no flow on it
    is left unfixed, until it stands. Returns the heap's size."""
    while size > 0:
        u = heap[0]
        if count[u] == 0:
            size = _unheap(heap, 0, size, share, pos)
            continue
        now = residual[u] / count[u]
        if now == share[u]:
            break
        share[u] = now
        _sift(heap, 0, size, share, pos)
    return size


@_uncounted
def _fill_levels(routes, flows, capacity, links, ws, rate, level, ceiling):  # pragma: no cover (compiled)
    """_fill with the links kept in a heap by fair share: O(incidences x log links) whatever the number of
    levels, where _fill's pass over the live links per level costs levels x links. For a link's local
    re-solve (patch_compiled), whose flows' other links, each with its own room, can saturate at as many
    levels as it has flows. Links whose shares tie within a relative _TIE saturate together, as in _fill.
    A flow i is fixed at ceiling[i] if the filling reaches it first (as a link of its own would; inf:
    none), in the order of their ceilings (ws.flows: the scratch). A link that carries one flow is that
    flow's ceiling too, not a heap entry (a link re-solve's flows each have one such link: its other
    end): it saturates where its flow's rate reaches its capacity (within _TIE)."""
    width = routes.shape[1]
    dummy = links - 1
    _incidences(routes, flows, links, ws, ws.mult[:0])
    count, start, entries, residual, share = ws.count, ws.start, ws.entries, ws.residual, ws.share
    heap, pos, saturated = ws.live, ws.step_of, ws.saturated
    size = 0
    for k in range(links):
        residual[k] = capacity[k]
        level[k] = np.inf
        pos[k] = -1
        if k != dummy and count[k] > 1:  # pushed one by one: heap[:size] stays a heap
            share[k] = residual[k] / count[k]
            heap[size] = k
            size += 1
            _sift(heap, size - 1, size, share, pos)
    fixed = ws.fixed
    for i in range((flows >> 6) + 1):
        fixed[i] = 0
    bound, capped, ncapped = rate, ws.flows, 0  # per flow its least ceiling, its rate once fixed
    for i in range(flows):
        bound[i] = ceiling[i]
        for j in range(width):
            u = routes[i, j]
            if u != dummy and start[u + 1] - start[u] == 1:
                bound[i] = min(bound[i], capacity[u])
        if bound[i] < np.inf:
            capped[ncapped] = i
            ncapped += 1
    radix(capped, ws.spare, ncapped, bound)
    next_cap = 0
    while True:
        size = _fresh(size, count, residual, share, heap, pos)
        low = share[heap[0]] if size > 0 else np.inf
        if next_cap < ncapped and bound[capped[next_cap]] < low:
            # the flows bounded under `low`, read once: fixing one under a link's share only raises it
            # (as _fresh reads the heap), so the least share is still at least `low` after each
            while next_cap < ncapped and bound[capped[next_cap]] < low:
                f = capped[next_cap]
                next_cap += 1
                if _fixes(f, fixed):  # else fixed since at a level under its bound, and rate[f] holds it
                    for j in range(width):
                        u = routes[f, j]
                        if u != dummy:
                            count[u] -= 1
                            residual[u] = max(residual[u] - bound[f], 0.0)
            continue
        if size == 0:
            break
        top = low * (1 + _TIE)
        nsat = 0
        while size > 0 and share[heap[0]] <= top:
            saturated[nsat] = heap[0]
            level[heap[0]] = low
            nsat += 1
            size = _fresh(_unheap(heap, 0, size, share, pos), count, residual, share, heap, pos)
        for s in range(nsat):
            k = saturated[s]
            for at in range(start[k] * width, start[k + 1] * width, width):
                if _fixes(entries[at], fixed):
                    rate[entries[at]] = low
                    _take_up(at, low, width, dummy, entries, count, residual, 1)
            count[k] = 0
    for i in range(flows):  # the links of one flow: saturated where it reached their capacity
        for j in range(width):
            u = routes[i, j]
            if u != dummy and start[u + 1] - start[u] == 1 and capacity[u] <= rate[i] * (1 + _TIE):
                level[u] = rate[i]


@_uncounted
def _fill_one(routes, flows, capacity, links, mine, rate, level, ceiling, steps):  # pragma: no cover (compiled)
    """_fill_levels where every flow crosses link `mine` and each of their other links carries one of them
    (a link re-solve of a flat all-to-all's NIC: the flows to one rank, each from another): a flow's rate
    is its bound (ceiling[i] and its other links' capacities) where that is under `mine`'s level L, else
    L, where the sum of the rates is mine's capacity (L inf where the bounds' sum is under it). L by
    Newton's steps from below, without a sort: from capacity / flows, each step fixes the flows bounded
    under the level and shares what they leave among the others; the level only rises, a flow once
    fixed stays so, and L is where a step fixes no more. The rates and levels of the fill in order of
    bounds, up to the round-off of summing the bounds in another order. Returns False where they have not
    settled after `steps` passes (nothing written but rate[:flows], the bounds): fill in order."""
    width = routes.shape[1]
    dummy = links - 1
    bound = rate
    for i in range(flows):
        b = ceiling[i]
        for j in range(width):
            u = routes[i, j]
            if u != dummy and u != mine:
                b = min(b, capacity[u])
        bound[i] = b
    room = capacity[mine]
    low, fixed = room / flows, -1
    for _ in range(steps):
        taken, under = 0.0, 0
        for i in range(flows):
            if bound[i] < low:
                taken += bound[i]
                under += 1
        if under == fixed:  # low was shared out among the same flows: it stands
            break
        fixed = under
        low = max(room - taken, 0.0) / (flows - under) if under < flows else np.inf
    else:
        return False
    for u in range(links):
        level[u] = np.inf
    level[mine] = low
    for i in range(flows):
        if bound[i] >= low:
            rate[i] = low
        for j in range(width):  # as _fill_levels: its other links saturated where it reached their capacity
            u = routes[i, j]
            if u != dummy and u != mine and capacity[u] <= rate[i] * (1 + _TIE):
                level[u] = rate[i]
    return True


def waterfill(routes: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Max-min fair rates of flows with `routes` (int64 rows padded with len(capacity) - 1) under link
    `capacity`; also the level at which each link saturated (inf where it limits no flow)."""
    routes = np.ascontiguousarray(routes, dtype=np.int64)
    capacity = np.ascontiguousarray(capacity, dtype=np.float64)
    ws = make_workspace(len(routes), capacity.size, routes.shape[1], False)
    _fill(routes, len(routes), capacity, capacity.size, ws, ws.fair, ws.level, ws.mult[:0])
    return ws.fair[:len(routes)].copy(), ws.level[:capacity.size].copy()


@_uncounted
def _advance(flows, count, left, base_time, rate, now):  # pragma: no cover (compiled)
    """The bytes `left` of flows[:count] advanced from `base_time` to now at their `rate`."""
    for i in range(count):
        f = flows[i]
        left[f] = max(left[f] - rate[f] * (now - base_time[f]), 0.0)
        base_time[f] = now


@_uncounted
def _subproblem(flows, count, routes, dummy, slot, ws):  # pragma: no cover (compiled)
    """The links of flows[:count] numbered 0.. in first-use order (slot[k] = k's number; the caller
    resets it to -1) into ws.links, per flow its row of numbers with the padding `dummy` as the count
    into ws.sub; returns the count of links."""
    width = routes.shape[1]
    links, sub = ws.links, ws.sub
    nused = 0
    for i in range(count):
        for j in range(width):
            k = routes[flows[i], j]
            if k != dummy and slot[k] < 0:
                slot[k] = nused
                links[nused] = k
                nused += 1
    for i in range(count):
        for j in range(width):
            k = routes[flows[i], j]
            sub[i, j] = nused if k == dummy else slot[k]
    return nused


@_uncounted
def _gather(flows, count, alive, left, base_time, rate, routes, route_id, route_slot, dummy, slot, now,
            ws):  # pragma: no cover (compiled)
    """In one pass over flows[:count]: those still alive (into ws.keep), their bytes left advanced to
    now at their rates (as _advance), their links numbered 0.. in first-use order with each one's row of
    numbers (as _subproblem: ws.links, ws.sub); with `route_id` (per flow the id of its route, ids
    0..len(route_slot)-1; empty: none) a row per route instead, the first flow's, each kept flow's row
    into ws.row_of and each row's flows into ws.mult (route_slot: scratch, all -1 between calls). Returns
    how many are alive, the count of links, the count of rows and the rate below which a re-solve leaves
    every rate as it is, where their rates are the max-min allocation of them all and those not alive
    have left since (nothing else changed): a hair under the least rate of a flow that left (inf where
    none did; 0 where an alive flow has no rate yet).
    Progressive filling without the flows that left matches the old one below that level: the links
    that saturated under it carry none of them (a flow's rate is the least level of its saturated
    links), and no other link fills sooner with less on it."""
    width = routes.shape[1]
    keep, links, sub, row_of, mult, route_of = ws.keep, ws.links, ws.sub, ws.row_of, ws.mult, ws.route_of
    grouped = route_id.size > 0
    nkeep = nused = nrows = 0
    low = np.inf
    for i in range(count):
        f = flows[i]
        if not alive[f] or rate[f] <= 0:
            low = min(low, rate[f])
        if not alive[f]:
            continue
        left[f] = max(left[f] - rate[f] * (now - base_time[f]), 0.0)
        base_time[f] = now
        keep[nkeep] = f
        nkeep += 1
        if grouped:
            c = route_id[f]
            if route_slot[c] >= 0:  # a row of its route is made
                row_of[nkeep - 1] = route_slot[c]
                mult[route_slot[c]] += 1
                continue
            route_slot[c] = row_of[nkeep - 1] = nrows
            route_of[nrows], mult[nrows] = c, 1
        for j in range(width):
            k = routes[f, j]
            if k == dummy:
                sub[nrows, j] = -1
            else:
                if slot[k] < 0:
                    slot[k] = nused
                    links[nused] = k
                    nused += 1
                sub[nrows, j] = slot[k]
        nrows += 1
    for i in range(nrows):
        for j in range(width):
            if sub[i, j] < 0:
                sub[i, j] = nused
        if grouped:
            route_slot[route_of[i]] = -1
    return nkeep, nused, nrows, (low * (1 - _BELOW) if low > 0 else 0.0)


@_uncounted
def _refill_above(floor, count, nused, nrows, row_of, rate, level, ws):  # pragma: no cover (compiled)
    """_fill of the flows ws.keep[:count] (rows of ws.sub, links numbered 0.. as ws.links, capacities
    ws.cap, the padding nused; nrows rows, flow i's row_of[i], one per route as _gather makes them, or
    i where `row_of` is empty) into ws.fair
    and ws.level, where the flows whose `rate` is under `floor` keep it (_gather): only the others are
    filled, in the capacity those leave; a link that carries none of them keeps its `level` where that
    is under the floor (it saturated among the unchanged), else it limits no flow now (inf: the flow at
    its level left). The same rates and levels as the whole fill, up to round-off; the whole fill where
    no flow is under the floor. Grouped or not, the same rates bit for bit (_fill)."""
    flows, sub, cap, links, fair, saturation = ws.keep, ws.sub, ws.cap, ws.links, ws.fair, ws.level
    mult, refill_of, part = ws.mult, ws.route_of, ws.part
    grouped = row_of.size > 0
    width = sub.shape[1]
    below = 0
    for i in range(count if floor > 0 else 0):  # no rate is under a floor of 0
        if rate[flows[i]] < floor:
            below += 1
    if below == 0 and not grouped:
        _fill(sub, count, cap, nused + 1, ws, fair, saturation, mult[:0])
        return
    if below == 0:
        _fill(sub, nrows, cap, nused + 1, ws, part, saturation, mult)
        for i in range(count):
            fair[i] = part[row_of[i]]
        return
    room, rows, refilled = ws.room, ws.rows, ws.refilled
    for u in range(nused + 1):
        room[u] = cap[u]
        refilled[u] = False
    for r in range(nrows if grouped else 0):  # per row its flows refilled, then its refilled row (-1: none)
        refill_of[r] = 0
    r = 0
    for i in range(count):
        f = flows[i]
        row = row_of[i] if grouped else i
        if rate[f] < floor:
            for j in range(width):
                room[sub[row, j]] -= rate[f]
        elif grouped:
            refill_of[row] += 1
        else:
            for j in range(width):
                rows[r, j] = sub[row, j]
                refilled[sub[row, j]] = True
            r += 1
    for row in range(nrows if grouped else 0):  # in place: r <= row, mult[r] is no longer read as row r's
        if refill_of[row] > 0:
            for j in range(width):
                rows[r, j] = sub[row, j]
                refilled[sub[row, j]] = True
            mult[r], refill_of[row] = refill_of[row], r
            r += 1
        else:
            refill_of[row] = -1
    for u in range(nused):
        room[u] = max(room[u], 0.0)
    room[nused] = np.inf
    _fill(rows, r, room, nused + 1, ws, part, saturation, mult if grouped else mult[:0])
    r = 0
    for i in range(count):
        f = flows[i]
        if rate[f] < floor:
            fair[i] = rate[f]
        elif grouped:
            fair[i] = part[refill_of[row_of[i]]]
        else:
            fair[i] = part[r]
            r += 1
    for u in range(nused):
        if not refilled[u]:
            saturation[u] = level[links[u]] if level[links[u]] < floor else np.inf


@_uncounted
def solve_compiled(flows: np.ndarray, count: int, alive: np.ndarray, left: np.ndarray, base_time: np.ndarray,
                   rate: np.ndarray, born: np.ndarray, routes: np.ndarray, route_id: np.ndarray, route_slot: np.ndarray,
                   capacity: np.ndarray, now: float, batch: float,
                   busy_from: np.ndarray, room: np.ndarray, spent: np.ndarray, freed: np.ndarray, freed_t: np.ndarray,
                   last: np.ndarray, slot: np.ndarray, used: np.ndarray, peak: np.ndarray, level: np.ndarray,
                   partial: bool, ws: Workspace) -> int:  # pragma: no cover (compiled)
    """solve_flows of flows[:count] with its arrays as they are (int64 flows, float64 capacity), into
    `ws` (at least `count` flows: make_workspace), callable from compiled code (zensim.net.fastmaxmin):
    returns how many are alive; they are ws.keep[:that], their finish times ws.finish[:that]. With
    `route_id` (per flow its route's id; route_slot: _gather's scratch) the flows of one route are filled
    as one row: the same rates, bit for bit."""
    nkeep, nused, nrows, floor = _gather(flows, count, alive, left, base_time, rate, routes, route_id, route_slot,
                                         capacity.size - 1, slot, now, ws)
    links, cap = ws.links, ws.cap
    for u in range(nused):
        cap[u] = capacity[links[u]]
    cap[nused] = np.inf
    row_of = ws.row_of if route_id.size else ws.row_of[:0]  # empty: a row per flow
    _refill_above(floor if partial else 0.0, nkeep, nused, nrows, row_of, rate, level, ws)
    _set_rates(ws.keep, nkeep, ws.fair, ws.sub, row_of, nused, left, rate, now, ws, born)
    born_on, saturation = ws.oldest, ws.level  # per link the earliest start of the flows on it
    end_of, load, top, work = ws.end_of, ws.load, ws.top, ws.work
    for u in range(nused):
        k = links[u]
        slot[k] = -1
        used[k], peak[k], level[k] = load[u], top[u], saturation[u]
        if born_on[u] > busy_from[k]:  # the credit of the busy period counts from its oldest flow's start
            busy_from[k], spent[k] = born_on[u], 0.0
        _restart(k, end_of[u], work[u], saturation[u], capacity, now, batch, busy_from, room, spent, freed, freed_t,
                 last)
    return nkeep


@_uncounted
def patch_compiled(flows: np.ndarray, count: int, k: int, region: np.ndarray, alive: np.ndarray, left: np.ndarray,
                   base_time: np.ndarray, rate: np.ndarray, born: np.ndarray, routes: np.ndarray, capacity: np.ndarray,
                   now: float, batch: float, busy_from: np.ndarray, room: np.ndarray, spent: np.ndarray,
                   freed: np.ndarray, freed_t: np.ndarray, last: np.ndarray, slot: np.ndarray, used: np.ndarray,
                   peak: np.ndarray, level: np.ndarray, ws: Workspace) -> tuple[int, int, int]:  # pragma: no cover (compiled)
    """A local re-solve of a region of links (region[j] >= 0; k among them, the link that ran out):
    flows[:count] are every flow on them, each once (those alive are re-solved); every other flow keeps
    its rate. The region's flows get the max-min rates of its links' capacities and, on each of their
    other links, of what the other flows leave there (capacity - (used - freed), the link's rates now, +
    their own), none above the level of another link of it that limits flows (its ceiling). It stands
    or not as _held_back says; what it holds back, over the region's flows' time, is charged to k's
    allowance (`spent`) where that leaves at least half of it, else it does not stand. Where it stands,
    the region's allowances restart as after a solve (solve_compiled); on their other links a rate that
    rose takes freed capacity up (`freed` less, as if freed that much less, at no cost to the service
    already lost), one that fell frees capacity now (counted as a departure's), and a link that limited
    no flow and now does gets its allowance as after an arrival given rates (warm_compiled). Into `ws`
    as solve_compiled: returns how many are alive (ws.keep[:that], finish times ws.finish[:that]), how
    many of them changed rate (ws.flows[:that], finish times ws.part[:that]: the others' finish times
    stand) and how many links they use (ws.links[:that], the region among them); where it does not stand,
    -1 for the second and, third, the links outside the region that held it back (ws.saturated[:that]),
    nothing changed but the flows' bytes left brought to now."""
    nkeep, nused, _, _ = _gather(flows, count, alive, left, base_time, rate, routes, ws.row_of[:0], ws.row_of[:0],
                                 capacity.size - 1, slot, now, ws)
    keep, links, cap, sub, fair, saturation, change = ws.keep, ws.links, ws.cap, ws.sub, ws.fair, ws.level, ws.room
    width = sub.shape[1]
    for u in range(nused):
        j = links[u]
        cap[u] = capacity[j] if region[j] >= 0 else capacity[j] - (used[j] - freed[j])
        change[u] = 0.0
    cap[nused] = np.inf
    was = ws.part  # each one's rate before
    mine = slot[k]
    # _fill_one's case: every flow crosses k, and each other link carries one of them (as many incidences on
    # other links as there are other links, nused - 1)
    crossing, others = 0, 0
    for i in range(nkeep):
        r = was[i] = rate[keep[i]]
        for j in range(width):
            u = sub[i, j]
            if u == mine:
                crossing += 1
            elif u < nused:
                others += 1
            if u < nused and region[links[u]] < 0:
                cap[u] += r
                change[u] -= r
    alone = nkeep > 1 and crossing == nkeep and others == nused - 1
    for u in range(nused):
        cap[u] = max(cap[u], 0.0)
    ceiling = ws.finish  # none above the level of a link outside the region that limits flows (where under its room)
    for i in range(nkeep):
        ceiling[i] = np.inf
        for j in range(width):
            u = sub[i, j]
            if u < nused and region[links[u]] < 0 and level[links[u]] < cap[u]:
                ceiling[i] = min(ceiling[i], level[links[u]])
    if not (alone and _fill_one(sub, nkeep, cap, nused + 1, mine, fair, saturation, ceiling, NEWTON)):
        _fill_levels(sub, nkeep, cap, nused + 1, ws, fair, saturation, ceiling)
    fastest, oldest = ws.lows, ws.oldest  # per link the fastest new rate and the oldest flow's start
    for u in range(nused + 1):
        fastest[u], oldest[u] = 0.0, np.inf
    for i in range(nkeep):
        r, start = fair[i], born[keep[i]]
        for j in range(width):
            u = sub[i, j]
            change[u] += r
            fastest[u] = max(fastest[u], r)
            oldest[u] = min(oldest[u], start)
    debt, held = _held_back(nkeep, nused, links, region, sub, fair, ceiling, saturation, fastest, peak, level,
                            ws.saturated)
    charge = 0.0
    if debt > 0:  # charged to k's allowance over the flows' time: stands only where half of it is left
        end, on_k = now, 0.0
        for i in range(nkeep):
            end = max(end, now + left[keep[i]] / fair[i])
            for j in range(width):
                if sub[i, j] == mine:
                    on_k += left[keep[i]]
        charge = debt * (end - now)
        lost = (0.0 if oldest[mine] > busy_from[k] else spent[k]) + freed[k] * now - freed_t[k]
        allowance = _allowance(batch, capacity[k], max(busy_from[k], oldest[mine]), now, on_k)
        if not lost + charge <= allowance / 2:
            debt = -1.0
    if debt < 0:
        for u in range(nused):
            slot[links[u]] = -1
        return nkeep, -1, held
    _set_rates(keep, nkeep, fair, sub, ws.row_of[:0], nused, left, rate, now, ws, born[:0])
    moved = 0
    for i in range(nkeep):  # in place: moved <= i
        if fair[i] != was[i]:
            ws.flows[moved], was[moved] = keep[i], ws.finish[i]
            moved += 1
    end_of, load, top, work = ws.end_of, ws.load, ws.top, ws.work
    for u in range(nused):
        j = links[u]
        slot[j] = -1
        if region[j] >= 0:
            used[j], peak[j], level[j] = load[u], top[u], saturation[u]
            if oldest[u] > busy_from[j]:  # as solve_compiled: the credit counts from its oldest flow's start
                busy_from[j], spent[j] = oldest[u], 0.0
            held_k = j == k and charge > 0  # its allowance counts what it holds back, saturated or not
            _restart(j, end_of[u], work[u], 0.0 if held_k else saturation[u], capacity, now, batch, busy_from, room,
                     spent, freed, freed_t, last)
            if held_k:
                spent[k] += charge
        else:
            freed[j] -= change[u]
            freed_t[j] -= change[u] * now
            last[j] = max(last[j], end_of[u])
            peak[j] = max(peak[j], top[u])
            if np.isfinite(saturation[u]) and not np.isfinite(level[j]):  # its flows saturate j: as _warm's
                used[j] -= freed[j]
                level[j] = saturation[u]
                _restart(j, last[j], work[u], saturation[u], capacity, now, batch, busy_from, room, spent, freed,
                         freed_t, last)
    return nkeep, moved, nused


@_uncounted
def _held_back(nkeep, nused, links, region, sub, fair, ceiling, saturation, fastest, peak, level,
               out):  # pragma: no cover (compiled)
    """Whether a region's re-solve (patch_compiled: per flow its new rate `fair` and `ceiling`, per link of
    them, numbered 0..nused-1, where the fill saturated it and the fastest new rate on it) keeps the rates
    max-min with every other flow's rate kept, and what it holds back; the links outside the region that
    hold its flows back into out[:that] (returned second). -1: it does not stand: on a link j that limits
    flows (level[j] finite) a flow above that level, or on one that limits none a flow held below one of
    its other flows (peak[j] bounds them). Else the rate by which the flows are held below their fair
    share on links that limit flows: a flow fixed where such a link ran out below its level would, in
    max-min, take from that link's fastest flows, up to its ceiling and the least level of its region's
    links. 0: every flow still has a saturated link on which no flow is faster, in the capacities less
    what departures left idle (the state a solve leaves, which the allowance bounds)."""
    width = sub.shape[1]
    debt, held = 0.0, 0
    for u in range(nused):
        j = links[u]
        if region[j] >= 0:
            continue
        if np.isfinite(level[j]):
            if fastest[u] > level[j] * (1 + _BELOW):
                debt = -1.0
            elif np.isfinite(saturation[u]) and saturation[u] < level[j] * (1 - _BELOW):
                out[held] = j
                held += 1
        elif np.isfinite(saturation[u]) and saturation[u] < peak[j] * (1 - _BELOW):
            debt = -1.0
            out[held] = j
            held += 1
    if debt < 0 or held == 0:
        return debt, held
    for i in range(nkeep):
        low, own = np.inf, np.inf
        for h in range(width):
            u = sub[i, h]
            if u < nused:
                j = links[u]
                if region[j] >= 0:
                    own = min(own, saturation[u])
                elif (np.isfinite(level[j]) and fair[i] == saturation[u]
                        and saturation[u] < level[j] * (1 - _BELOW)):
                    low = saturation[u]
        if low < np.inf:
            debt += min(ceiling[i], own) - fair[i]
    return debt, held


@_uncounted
def _set_rates(flows, count, fair, sub, row_of, nused, left, rate, now, ws, born):  # pragma: no cover (compiled)
    """flows[:count] (rows of sub: flow i's is row_of[i], or i where `row_of` is empty; links numbered
    0..nused-1, the padding nused) take their rates `fair`: their finish times into ws.finish, and per
    link the latest finish, the sum of the rates, the fastest and the bytes left (ws.end_of, load, top,
    work); with `born` (per flow its start; empty: not) the earliest start of the flows on it too
    (ws.oldest)."""
    finish, end_of, load, top, work, oldest = ws.finish, ws.end_of, ws.load, ws.top, ws.work, ws.oldest
    starts = born.size > 0
    for u in range(nused + 1):
        end_of[u], load[u], top[u], work[u] = -np.inf, 0.0, 0.0, 0.0
        if starts:
            oldest[u] = np.inf
    for i in range(count):
        f, r = flows[i], fair[i]
        rate[f] = r
        bytes_left = left[f]
        end = finish[i] = now + bytes_left / r
        start = born[f] if starts else 0.0
        row = row_of[i] if row_of.size else i
        for j in range(sub.shape[1]):
            u = sub[row, j]
            if end > end_of[u]:
                end_of[u] = end
            load[u] += r
            top[u] = max(top[u], r)
            work[u] += bytes_left
            if starts:
                oldest[u] = min(oldest[u], start)


@_uncounted
def _restart(k, end, work, saturation, capacity, now, batch, busy_from, room, spent, freed, freed_t,
             last):  # pragma: no cover (compiled)
    """Link k's allowance after a solve that gave its flows rates ending by `end` (nothing where that is
    not finite), `work` bytes left on it: where it saturated, room = batch x (capacity x (now - busy_from)
    + work), batch x capacity x the least its busy period can last (what it could serve so far, and its
    bytes at full capacity, whatever the rates: the latest finish at the solve's rates, `end`, is k + 1
    times that where one flow shares the link with k that end soon), else inf; the service lost to
    capacity freed since the last solve moved into spent where k limited flows since (its room finite:
    capacity idle on a link that limits none holds none of its flows back, they are held on the links
    that limit them, whose allowances count it); `last` = end (the loss of idle capacity is projected to
    it)."""
    if not np.isfinite(end):
        return
    if np.isfinite(room[k]):
        spent[k] += freed[k] * now - freed_t[k]
    room[k] = _allowance(batch, capacity[k], busy_from[k], now, work) if np.isfinite(saturation) else np.inf
    freed[k] = 0.0
    freed_t[k] = 0.0
    last[k] = end


@_uncounted
def _allowance(batch, capacity, since, now, work):  # pragma: no cover (compiled)
    """A saturated link's allowance (_restart's room; patch_compiled's charge against it): batch x what it
    could serve from `since` to now at `capacity`, and its `work` bytes left."""
    return batch * (capacity * (now - since) + work)


@numba.njit(cache=True)
def share_of_room(room: float, used: float, freed: float) -> float:  # pragma: no cover (compiled)
    """What a link may lose to idle capacity now: its allowance `room` x the share of its last solve's
    rates (`used`, their sum) still alive (`freed` of them gone). The flows left take the freed capacity
    up at a re-solve, so the service lost is made up at their rates: scaled so, the delay it gives any
    of them is at most the allowance's share of the link's busy period, whatever the fan-in."""
    if not np.isfinite(room) or used <= 0:
        return room
    return room * max(used - freed, 0.0) / used


@_uncounted
def warm_compiled(new: np.ndarray, count: int, left: np.ndarray, base_time: np.ndarray, rate: np.ndarray,
                  routes: np.ndarray, capacity: np.ndarray, now: float, batch: float, busy_from: np.ndarray,
                  room: np.ndarray, spent: np.ndarray, freed: np.ndarray, freed_t: np.ndarray, last: np.ndarray,
                  slot: np.ndarray, used: np.ndarray, peak: np.ndarray, level: np.ndarray,
                  ws: Workspace) -> bool:  # pragma: no cover (compiled)
    """warm_flows of new[:count] with its arrays as they are (int64 flows, float64 capacity), into `ws`
    (at least `count` flows), callable from compiled code (zensim.net.fastmaxmin): whether they fit;
    then their finish times are ws.finish[:count]."""
    width = routes.shape[1]
    nused = _subproblem(new, count, routes, capacity.size - 1, slot, ws)
    links, sub, cap, fair, saturation = ws.links, ws.sub, ws.cap, ws.fair, ws.level
    fits = True
    for u in range(nused):  # a link that limits a flow: the others would give way
        fits = fits and not np.isfinite(level[links[u]])
    if fits:
        for u in range(nused):
            k = links[u]
            cap[u] = max(capacity[k] - (used[k] - freed[k]), 0.0)
        cap[nused] = np.inf
        _fill(sub, count, cap, nused + 1, ws, fair, saturation, ws.mult[:0])
        for i in range(count):  # each new flow needs a link it saturates with no flow faster on it
            bottleneck = False
            for j in range(width):
                u = sub[i, j]
                if u < nused and saturation[u] == fair[i] and fair[i] >= peak[links[u]]:
                    bottleneck = True
            if not bottleneck:
                fits = False
                break
    if not fits:
        for u in range(nused):
            slot[links[u]] = -1
        return False
    _advance(new, count, left, base_time, rate, now)
    _set_rates(new, count, fair, sub, ws.row_of[:0], nused, left, rate, now, ws, left[:0])  # no starts taken
    end_of, load, top, work = ws.end_of, ws.load, ws.top, ws.work
    for u in range(nused):
        k = links[u]
        slot[k] = -1
        used[k] = used[k] - freed[k] + load[u]
        peak[k], level[k] = max(peak[k], top[u]), saturation[u]
        # the bytes of the new flows only (the others' are not kept): a smaller allowance, never a larger one
        _restart(k, max(end_of[u], last[k]), work[u], saturation[u], capacity, now, batch, busy_from, room, spent,
                 freed, freed_t, last)
    return True


class LinkState:
    """Per link what a solve reads and sets (the maxmin model's allowance bookkeeping, docs in
    zensim.net.models.maxmin): busy_from, room, spent, freed, freed_t, last, and the last solve's
    rates on it (used: their sum, peak: the fastest, level: where it saturated, inf where it limits no
    flow); one float64 array each over the links and the padding link. `workspace(flows, width)`: the
    solves' scratch, kept between solves and grown where a component has more flows."""

    def __init__(self, links: int) -> None:
        self.busy_from = np.zeros(links)
        self.room = np.full(links, np.inf)
        self.spent = np.zeros(links)
        self.freed = np.zeros(links)
        self.freed_t = np.zeros(links)
        self.last = np.zeros(links)
        self.used = np.zeros(links)
        self.peak = np.zeros(links)
        self.level = np.full(links, np.inf)
        self.slot = np.full(links, -1, np.int64)  # scratch of the compiled solve (all -1 between solves)
        self._ws: Workspace | None = None

    def workspace(self, flows: int, width: int, by_route: bool = False) -> Workspace:
        """A Workspace for a solve of `flows` flows with rows of `width` link ids over these links (by
        route too: make_workspace)."""
        ws = self._ws
        if ws is None or len(ws.flows) < flows or ws.sub.shape[1] != width or (by_route and not ws.row_of.size):
            size = flows if ws is None else max(flows, 2 * len(ws.flows))
            by_route = by_route or (ws is not None and ws.row_of.size > 0)
            ws = self._ws = make_workspace(size, len(self.slot), width, by_route)
        return ws


@numba.njit(cache=True)
def _route_ids(routes):  # pragma: no cover (compiled)
    """Per row of `routes` its route's id (0.. in first-appearance order; equal rows, equal ids) by open
    addressing."""
    n, width = routes.shape
    size = 1
    while size < 2 * n:
        size *= 2
    table = np.full(size, -1, np.int64)  # a row of each route
    ids = np.empty(n, np.int32)
    nroutes = 0
    for i in range(n):
        h = np.uint64(0)
        for j in range(width):
            h = (h + np.uint64(routes[i, j])) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(31)  # murmur3's finalizer: every bit of the links in the low bits
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
        at = np.int64(h & np.uint64(size - 1))
        while True:
            other = table[at]
            if other < 0:
                table[at] = i
                ids[i] = nroutes
                nroutes += 1
                break
            same = True
            for j in range(width):
                if routes[other, j] != routes[i, j]:
                    same = False
                    break
            if same:
                ids[i] = ids[other]
                break
            at = (at + 1) & (size - 1)
    return ids


def route_ids(routes: np.ndarray) -> np.ndarray:
    """Per flow (row of `routes`) the id of its route, 0.. in first-appearance order, where flows share
    routes enough that solving them a row per route pays: on average over the flows, at least REPEATS
    flows on a flow's route (as in a hierarchical layout, where one NIC pair carries every GPU pair of
    two machines); solve_compiled then fills each route's flows as one row, with the same rates bit for
    bit. Else an empty array (a row per flow). Over a million flows, a sample of 2**16 of them decides
    first (its pairs on one route estimate the average), so that a log whose routes barely repeat (a flat
    layout: one GPU pair a route) is not hashed whole. Its compile (a second) is not announced: its caller
    announces its own, which covers it (fastmaxmin.run)."""
    routes = np.ascontiguousarray(routes)
    n = len(routes)
    if n > SAMPLE * 16:
        picked = np.random.default_rng(0).choice(n, SAMPLE, replace=False)
        per_route = np.bincount(_route_ids(routes[picked]))
        pairs = float((per_route * (per_route - 1)).sum()) / (SAMPLE * (SAMPLE - 1))  # P(two flows share a route)
        if 1 + pairs * (n - 1) < REPEATS / 2:  # the estimate, with room for its error
            return np.empty(0, np.int32)
    ids = _route_ids(routes)
    per_route = np.bincount(ids)
    return ids if float((per_route * per_route).sum()) >= REPEATS * n else np.empty(0, np.int32)


def solve_flows(flows: np.ndarray, alive: np.ndarray, left: np.ndarray, base_time: np.ndarray, rate: np.ndarray,
                born: np.ndarray, routes: np.ndarray, capacity: np.ndarray, now: float, batch: float,
                links: LinkState, partial: bool = False,
                route_id: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One max-min solve of the flows `flows` (ids into the per-flow arrays) at time `now`, in one compiled
    pass over them and their links only: the flows still `alive`, their bytes `left` advanced from
    `base_time` to now at their old `rate` (updated in place, as are base_time and rate), and their
    finish times under the new rates. `routes`: every flow's row of link ids (padded with
    len(capacity) - 1). On each of their links where a flow ends in finite time, `links` restarts the
    allowance: `last` = the latest finish, `room` = batch x (capacity x (now - busy_from) + the bytes left
    on it) where the link saturated (inf where it limits no flow), the service lost to freed capacity moved into
    `spent` where the link limited flows since its last restart (its room finite), `freed` and `freed_t` zeroed.
    `partial`: the flows' rates are the max-min allocation of them all and only departures happened since
    (no flow joined or was given a rate without a solve, capacities unchanged): the flows under the least
    rate that left keep theirs and only the others are filled (_gather, _refill_above; the same rates up to
    round-off). `route_id` (route_ids: per flow its route's id): the flows of a route filled as one row, the
    same rates. Returns the alive flows and their finish times."""
    announce(solve_compiled, "the maxmin solver (zensim.net.waterfill.solve_compiled)", COMPILE_S)
    flows = np.ascontiguousarray(flows, dtype=np.int64)
    route_id = np.empty(0, np.int32) if route_id is None else np.ascontiguousarray(route_id, dtype=np.int32)
    ws = links.workspace(flows.size, routes.shape[1], route_id.size > 0)
    route_slot = np.full(int(route_id.max()) + 1 if route_id.size else 0, -1, np.int32)
    count = solve_compiled(flows, flows.size, alive, left, base_time, rate, born, routes, route_id, route_slot,
                           np.ascontiguousarray(capacity, dtype=np.float64), float(now), float(batch), links.busy_from,
                           links.room, links.spent, links.freed, links.freed_t, links.last, links.slot, links.used,
                           links.peak, links.level, bool(partial), ws)
    return ws.keep[:count].copy(), ws.finish[:count].copy()


def warm_flows(new: np.ndarray, left: np.ndarray, base_time: np.ndarray, rate: np.ndarray, routes: np.ndarray,
               capacity: np.ndarray, now: float, batch: float, links: LinkState) -> np.ndarray | None:
    """Rates for flows `new` that start now in a component whose other flows keep theirs, where that is
    still max-min: each new link limits no flow at the last solve (`links.level` inf), the new flows
    share the capacity the others leave (capacity - used + freed) max-min, and each new flow saturates a
    link on which no flow is faster (`links.peak`, the last solve's fastest: the others' bottlenecks
    are untouched and stay theirs). Then the rates, bytes left, finish times and the new flows' links'
    allowance are set as solve_flows sets them (returns the finish times); else nothing is changed
    (returns None: solve the component)."""
    announce(warm_compiled, "the maxmin solver (zensim.net.waterfill.warm_compiled)", COMPILE_S)
    new = np.ascontiguousarray(new, dtype=np.int64)
    ws = links.workspace(new.size, routes.shape[1])
    fits = warm_compiled(new, new.size, left, base_time, rate, routes, np.ascontiguousarray(capacity, dtype=np.float64),
                         float(now), float(batch), links.busy_from, links.room, links.spent, links.freed,
                         links.freed_t, links.last, links.slot, links.used, links.peak, links.level, ws)
    return ws.finish[:new.size].copy() if fits else None
