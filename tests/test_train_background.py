"""Gemini: placement (Alg. 6.1), recovery probability (Corollary 6.1) against simulated failures, and
the checkpoint partition (Alg. 6.2); on the timeline: tests/test_train_gemini.py."""

import math

import numpy as np
import pytest

from zensim.train.background import (Checkpoint, Wire, holders, idle_spans, partition, placement, recovery_enumerated,
                                     recovery_formula, recovery_group_exact, recovery_simulated)


def test_placement_groups_and_mixed():
    assert placement(4, 2) == ([[0, 1], [2, 3]], "group")
    assert placement(5, 2) == ([[0, 1], [2, 3, 4]], "mixed")
    sets = holders(5, 2)
    assert sets[0] == sets[1] == {0, 1}
    assert [sets[i] for i in (2, 3, 4)] == [{2, 3}, {3, 4}, {4, 2}]   # the last group is a ring
    assert all(len(s) == 3 and i in s for i, s in enumerate(holders(11, 3)))
    assert holders(4, 2, "ring") == [{0, 1}, {1, 2}, {2, 3}, {3, 0}]
    with pytest.raises(ValueError):
        placement(3, 4)


@pytest.mark.parametrize("N,m", [(16, 2), (12, 3), (8, 4)])
def test_recovery_formula_equals_simulated_failures(N, m):
    rng = np.random.default_rng(N * 10 + m)
    sets = holders(N, m)
    for k in range(0, N + 1):
        sim, se = recovery_simulated(sets, k, 20_000, rng)
        exact = recovery_group_exact(N, m, k)
        formula = recovery_formula(N, m, k)
        assert abs(sim - exact) <= 4.5 * se                      # the simulation and the exact count agree
        if k < 2 * m:
            assert formula == pytest.approx(exact, abs=1e-12)    # Corollary 6.1 is exact below 2m
            assert abs(sim - formula) <= 4.5 * se
        else:
            assert formula <= exact + 1e-12                      # and a lower bound from 2m on


def test_recovery_figures_of_the_thesis():
    # §6.7.2: N = 16, m = 2: 93.3% for k = 2, 80.0% for k = 3
    assert recovery_formula(16, 2, 2) == pytest.approx(1 - 8 / 120)
    assert recovery_formula(16, 2, 3) == pytest.approx(0.8)
    # the ring loses more: 16 adjacent pairs for k = 2, 16 * 14 - 16 sets for k = 3
    ring = holders(16, 2, "ring")
    assert recovery_enumerated(ring, 2) == pytest.approx(1 - 16 / 120)
    assert recovery_enumerated(ring, 3) == pytest.approx(1 - (16 * 14 - 16) / 560)
    assert recovery_enumerated(holders(16, 2), 3) == pytest.approx(0.8)


def test_mixed_placement_gap_within_theorem_bound():
    # Theorem 6.1: when m does not divide N, the gap to the upper bound 1 - ceil(N/m)/C(N,m) is < (2m-3)/C(N,m)
    for N, m in [(7, 2), (11, 3), (13, 4), (10, 3)]:
        upper = 1 - math.ceil(N / m) / math.comb(N, m)
        got = recovery_enumerated(holders(N, m), m)
        assert upper - (2 * m - 3) / math.comb(N, m) <= got + 1e-12 <= upper + 1e-12


def test_partition_fills_spans_then_spills_into_the_last():
    ckpt = Checkpoint(nbytes=1000.0, replicas=3, buffer_bytes=400.0, buffers=4, mu=1.0)   # chunks <= 100 B
    wire = Wire(bandwidth=100.0, alpha=0.1)
    chunks = partition([2.5, 0.05, 1.0, 0.0], ckpt, wire)
    assert sum(c.nbytes for c in chunks) == pytest.approx(2 * 1000.0)
    assert all(c.nbytes <= 100.0 + 1e-9 for c in chunks)
    for span, length in enumerate([2.5, 0.05, 1.0]):
        used = sum(wire.occupancy(c.nbytes, 4) for c in chunks if c.span == span)
        assert used <= length + 1e-9
    assert not [c for c in chunks if c.span == 1]                  # 0.05 s holds not even alpha
    # span 0: two full chunks (1.1 s each) and one of (0.3 - 0.1) * 100 = 20 B
    assert [c.nbytes for c in chunks if c.span == 0] == pytest.approx([100, 100, 20])
    assert {c.copy for c in chunks} == {0, 1}


def test_idle_spans_and_occupancy():
    busy = [(0.6, 0.9), (0.2, 0.5), (0.3, 0.4)]                 # any order, overlapping
    assert [pytest.approx(s) for s in idle_spans(busy, 0.0, 1.0)] == [(0, 0.2), (0.5, 0.6), (0.9, 1.0)]
    slow_copy = Wire(bandwidth=1e9, copy_bandwidth=1e9)
    assert slow_copy.occupancy(1e8, 1) == pytest.approx(0.2)          # no pipeline: wire, then copy
    assert slow_copy.occupancy(1e8, 2) == pytest.approx(0.1)          # pipelined
    assert slow_copy.fits(0.2, 1) == pytest.approx(1e8)
