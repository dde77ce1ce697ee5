"""SparDL: the bag schedule for any P (Theorem 1 asserted while planning), bytes equal to its formula
4k(P-1)/P units at P = 5, 8, 14 (and R-SAG's with teams), bit-identical replicas, every dropped value
reported (global residual collection: applied + discarded = sum of the inputs), bytes transport equal."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.run import run_ranks
from zensim.run.transports import InBytes
from zensim.schemes import build_scheme
from zensim.schemes.catalog.spardl import block_count, bruck_stages, srs_stages
from zensim.sparse.chunk import SparseChunk
from zensim.sparsify import make_sparsifier

NUMEL = 14_000
UNIT = 4  # bytes: SparDL counts COO as 2 units per element (int32 id + fp32 value)


def selected(P: int, teams: int, density: float, seed: int = 0) -> list[SparseChunk]:
    """Every rank's blocktopk selection of a random dense gradient (one block per team rank)."""
    rng = np.random.default_rng([P, teams, seed])
    out = []
    for r in range(P):
        acc = rng.standard_normal(NUMEL).astype(np.float32)
        idx = make_sparsifier("blocktopk", density, r, P, blocks=P // teams).propose("w", acc)
        out.append(SparseChunk(idx, acc[idx]))
    return out


def payload_bytes(log, per_block: int) -> int:  # type: ignore[no-untyped-def]
    """Bytes received, less the uint32 length each part of a multi-block message carries (every
    block here has exactly `per_block` elements of 2 units)."""
    total = 0
    for nbytes in log.arrays()["nbytes"].tolist():
        blocks = nbytes // (2 * UNIT * per_block)
        total += nbytes - (4 * blocks if blocks > 1 else 0)
    return total


@pytest.mark.parametrize("P", [2, 3, 5, 6, 8, 14, 16])
def test_srs_ends_with_each_rank_holding_its_block_reduced(P: int) -> None:
    stages = srs_stages(P, 1)  # asserts Theorem 1 and the final holdings while it plans
    assert len(stages) == math.ceil(math.log2(P))
    sent = [sum(1 for st in stages for t in st if t.src == r) for r in range(P)]
    assert sent == [P - 1] * P  # every rank sends each other block once
    assert len(bruck_stages(P, 1)) == math.ceil(math.log2(P))


def test_example_2_source_is_w_minus_the_distance() -> None:
    """P = 6, worker 1 (paper numbering 1..6 = ranks 0..5): step 1 sends to 1 + 4 and receives from 1 - 4."""
    first = srs_stages(6, 1)[0]
    assert {t.dst for t in first if t.src == 0} == {4}
    assert {t.src for t in first if t.dst == 0} == {2}  # 0 - 4 mod 6: the paper's Example 2 says worker 2 too
    assert sorted(t.item for t in first if t.src == 0) == [4, 5]  # bag B_3 = blocks w+4, w+5


@pytest.mark.parametrize("P", [5, 8, 14])
def test_bytes_equal_the_formula(P: int) -> None:
    density = P * 10 / NUMEL  # k = 10 P: k / P = 10 elements per block, exactly
    chunks = selected(P, 1, density)
    k = math.ceil(density * NUMEL)
    assert block_count(density, NUMEL, P) * P == k
    out = run_ranks(build_scheme("spardl", P, NUMEL, density=density), chunks, check=False)
    received = out.log.bytes_received()
    # SRS 2k(P-1)/P + Bruck 2k(P-1)/P units, received by every rank
    assert payload_bytes(out.log, k // P) == P * 4 * k * (P - 1) / P * UNIT
    assert len(set(received.tolist())) == 1


@pytest.mark.parametrize("P,teams", [(8, 2), (8, 4), (16, 4)])
def test_rsag_bytes_equal_the_formula(P: int, teams: int) -> None:
    density = P * 10 / NUMEL
    k = math.ceil(density * NUMEL)
    out = run_ranks(build_scheme("spardl", P, NUMEL, density=density, teams=teams),
                    selected(P, teams, density), check=False)
    units = 2 * k * ((2 * P - 2 * teams) / P + teams / P * math.log2(teams))
    assert payload_bytes(out.log, k // (P // teams)) == P * units * UNIT


@pytest.mark.parametrize("P,teams", [(5, 1), (14, 1), (8, 2), (16, 4)])
def test_replicas_identical_and_every_drop_reported(P: int, teams: int) -> None:
    density = 0.03
    chunks = selected(P, teams, density, seed=1)
    prog = build_scheme("spardl", P, NUMEL, density=density, teams=teams)
    assert prog.caps.needs_values and not prog.caps.lossless
    out = run_ranks(prog, chunks, check=False)
    first = out.results[0]
    for res in out.results[1:]:
        assert np.array_equal(res.indices, first.indices) and np.array_equal(res.values, first.values)
    p = P // teams
    assert first.nnz <= p * block_count(density, NUMEL, p)
    inputs = np.zeros(NUMEL)
    for c in chunks:
        inputs[c.indices] += c.values
    kept = np.zeros(NUMEL)
    kept[first.indices] += first.values
    for parts in out.context.discarded.values():
        for part in parts:
            np.add.at(kept, part.indices, part.values)
    np.testing.assert_allclose(kept, inputs, rtol=0, atol=1e-5)
    wire = run_ranks(prog, chunks, InBytes(), check=False)
    assert np.array_equal(wire.log.bytes_received(), out.log.bytes_received())
    assert np.array_equal(wire.results[3].values, first.values)


def test_bad_teams_is_one_line() -> None:
    with pytest.raises(ConfigError, match="teams 3 must divide the 12 ranks and be a power of two"):
        build_scheme("spardl", 12, 1000, teams=3)
    with pytest.raises(ConfigError, match="teams 4 must divide the 6 ranks"):
        build_scheme("spardl", 6, 1000, teams=4)
