"""SparDL: the bag schedule for any P (Theorem 1 asserted while planning), bytes equal to its formula
4k(P-1)/P units at P = 5, 8, 14 (and R-SAG's with teams, B-SAG's with its h), bit-identical replicas,
every dropped value reported (global residual collection: applied + discarded = sum of the inputs),
bytes transport equal; B-SAG's h controller (Algorithm 2) moves h against N_t - L."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.run import run_ranks
from zensim.run.transports import InBytes
from zensim.schemes import build_scheme
from zensim.schemes.catalog.spardl import HController, block_count, bruck_stages, bsag_stages, srs_stages
from zensim.sparse.chunk import SparseChunk
from zensim.sparsify import make_sparsifier

NUMEL = 14_000
UNIT = 4  # bytes: SparDL counts COO as 2 units per element (int32 id + fp32 value)


def selected(P: int, teams: int, density: float, seed: int = 0, shared: float = 0.0) -> list[SparseChunk]:
    """Every rank's blocktopk selection of a random dense gradient (one block per team rank), with a
    common component of weight `shared` (the ranks' selections then overlap)."""
    rng = np.random.default_rng([P, teams, seed])
    common = rng.standard_normal(NUMEL)
    out = []
    for r in range(P):
        acc = (shared * common + rng.standard_normal(NUMEL)).astype(np.float32)
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


@pytest.mark.parametrize("P,teams,sag", [(5, 1, "auto"), (14, 1, "auto"), (8, 2, "auto"), (16, 4, "auto"),
                                         (12, 3, "auto"), (14, 7, "auto"), (6, 6, "auto"), (8, 2, "bsag")])
def test_replicas_identical_and_every_drop_reported(P: int, teams: int, sag: str) -> None:
    density = 0.03
    chunks = selected(P, teams, density, seed=1)
    prog = build_scheme("spardl", P, NUMEL, density=density, teams=teams, sag=sag)
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
    fresh = build_scheme("spardl", P, NUMEL, density=density, teams=teams, sag=sag)  # B-SAG's h moved after a run
    wire = run_ranks(fresh, chunks, InBytes(), check=False)
    assert np.array_equal(wire.log.bytes_received(), out.log.bytes_received())
    assert np.array_equal(wire.results[3].values, first.values)


def test_bad_teams_is_one_line() -> None:
    with pytest.raises(ConfigError, match="sag rsag needs teams a power of two, got 3"):
        build_scheme("spardl", 12, 1000, teams=3, sag="rsag")
    with pytest.raises(ConfigError, match="teams 4 must divide the 6 ranks"):
        build_scheme("spardl", 6, 1000, teams=4)


def header_bytes(P: int, teams: int) -> int:
    """The bundle headers (4 bytes per part of a message of several parts) of SRS, B-SAG and the
    final Bruck all-gather, from the plans (a B-SAG transfer carries one part per team)."""
    p = P // teams
    total = 0
    for stages, parts in ((srs_stages(P, teams), lambda t: 1), (bsag_stages(P, teams), lambda t: t.origins.bit_count() // p),
                          (bruck_stages(P, teams), lambda t: 1)):
        for stage in stages:
            per_message: dict[tuple[int, int], int] = {}
            for t in stage:
                per_message[t.src, t.dst] = per_message.get((t.src, t.dst), 0) + parts(t)
            total += sum(4 * m for m in per_message.values() if m > 1)
    return total


@pytest.mark.parametrize("P,teams", [(12, 3), (14, 7), (6, 6), (10, 5)])
def test_bsag_bytes_follow_h(P: int, teams: int) -> None:
    """Every rank receives p - 1 blocks of c = ceil(k/p) (SRS), d - 1 pieces of its position's h (B-SAG)
    and the p - 1 other final blocks (Bruck), over three iterations while h moves."""
    density = 0.03
    p = P // teams
    prog = build_scheme("spardl", P, NUMEL, density=density, teams=teams)
    c = block_count(density, NUMEL, p)
    bounds = np.linspace(0, NUMEL, p + 1)  # the contiguous partition (NUMEL divisible by these p)
    hs = []
    for it in range(3):
        h = [ctl.count for ctl in prog.controllers]
        hs.append(h)
        out = run_ranks(prog, selected(P, teams, density, seed=it, shared=3.0), check=False)
        final = np.histogram(out.results[0].indices, bounds)[0]  # elements of each block after the SAG
        assert (final <= c).all()
        elements = sum((p - 1) * c + (teams - 1) * h[r] + final.sum() - final[r % p] for r in range(P))
        assert int(out.log.bytes_received().sum()) == 2 * UNIT * elements + header_bytes(P, teams)
    assert all(len(set(h[w::p])) == 1 for h in hs for w in range(p))  # one h per position
    assert all(a < b for a, b in zip(hs[0], hs[-1]))  # overlapping teams: N_t < L, so h grew


def test_h_controller_follows_algorithm_2() -> None:
    ctl = HController(per_block=1000, teams=4)  # L = 1000, h starts at k/P = 250, step 0.01 k (d-1)/P = 7.5
    assert (ctl.count, ctl.step) == (250, 7.5)
    ctl.observe(900)  # N <= L with a positive step: same direction, the first time: no doubling
    assert (ctl.h, ctl.flag) == (257.5, True)
    ctl.observe(950)  # the second time in a row: the step doubles
    assert (ctl.h, ctl.step, ctl.flag) == (272.5, 15.0, False)
    ctl.observe(1200)  # N > L with a positive step: the step turns and halves (h shrinks)
    assert (ctl.h, ctl.step) == (265.0, -7.5)
    ctl.observe(1100)  # still above L, shrinking: keep going
    assert ctl.h == 257.5
    for _ in range(20):
        ctl.observe(5000)
    assert ctl.h == 250.0  # kept at k / P
    for _ in range(40):
        ctl.observe(10)
    assert ctl.h == 1000.0  # kept at d k / P = L
