"""TopkDSA: lossless on its input (the dense sum of the top-k chunks), bytes equal to its plan's
formula: each worker's COO part to its owner, then every reduced part gathered in SparCML's switch
representation (COO while smaller than dense, dense from there), at P = 5, 8, 14."""

from __future__ import annotations

import numpy as np
import pytest

from zensim.run import run_ranks
from zensim.run.transports import InBytes
from zensim.schemes import build_scheme
from zensim.schemes.plans import PULLS
from zensim.sparse.chunk import SparseChunk, sum_chunks
from zensim.sparse.formats import make_format
from zensim.sparse.partition import even_boundaries
from zensim.sparsify import make_sparsifier

NUMEL = 6_000


def topk_chunks(P: int, density: float, shared: float, seed: int) -> list[SparseChunk]:
    """Every rank's top-k of a gradient with a common component of weight `shared`."""
    rng = np.random.default_rng([P, seed])
    common = rng.standard_normal(NUMEL)
    out = []
    for r in range(P):
        acc = (shared * common + rng.standard_normal(NUMEL)).astype(np.float32)
        idx = make_sparsifier("topk", density, r, P).propose("w", acc)
        out.append(SparseChunk(idx, acc[idx]))
    return out


@pytest.mark.parametrize("P", [5, 8, 14])
@pytest.mark.parametrize("density,shared", [(0.01, 0.0), (0.15, 0.0), (0.01, 5.0)])
def test_lossless_and_bytes_follow_the_switch(P: int, density: float, shared: float) -> None:
    chunks = topk_chunks(P, density, shared, seed=1)
    prog = build_scheme("topkdsa", P, NUMEL)
    out = run_ranks(prog, chunks)  # checks every rank's result against the dense sum
    total = sum_chunks(chunks)
    bounds = even_boundaries(NUMEL, P)
    own = [[int(((c.indices >= lo) & (c.indices < hi)).sum()) for lo, hi in zip(bounds[:-1], bounds[1:])]
           for c in chunks]
    reduced = np.histogram(total.indices, bounds)[0]
    fmt = make_format("switch")
    dense = [fmt.is_dense(int(m), _Span(hi - lo)) for m, lo, hi in zip(reduced, bounds[:-1], bounds[1:])]
    sizes = [4 * (hi - lo) if d else 8 * int(m) for d, m, lo, hi in zip(dense, reduced, bounds[:-1], bounds[1:])]
    expected = sum(8 * own[r][j] for r in range(P) for j in range(P) if j != r)  # the push: one COO part each
    for stage in PULLS["doubling"].allgather(P):  # the pull: the reduced parts, bundled per message
        messages: dict[tuple[int, int], list[int]] = {}
        for t in stage:
            messages.setdefault((t.src, t.dst), []).append(sizes[t.item])
        expected += sum(sum(m) + (4 * len(m) if len(m) > 1 else 0) for m in messages.values())
    assert int(out.log.bytes_received().sum()) == expected
    received = [0] * P  # every rank ends up receiving every other part exactly once
    for stage in PULLS["doubling"].allgather(P):
        for t in stage:
            received[t.dst] += 1
    assert received == [P - 1] * P
    if density == 0.15 and shared == 0.0:
        assert any(dense)  # 15% of each of P independent workers: unions above 50%, dense is smaller
    wire = run_ranks(build_scheme("topkdsa", P, NUMEL), chunks, InBytes())
    assert np.array_equal(wire.log.bytes_received(), out.log.bytes_received())
    assert np.array_equal(wire.results[-1].values, out.results[0].values)


class _Span:
    """A domain stand-in for the size rule: `size` positions, ids below 2**31."""

    def __init__(self, size: int) -> None:
        self.size, self.bound = size, NUMEL
