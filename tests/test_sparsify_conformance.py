"""Conformance of every registered sparsifier (as scikit-learn's check_estimator does for estimators):
proposals are sorted unique in-range positions, numpy and torch select the same, state is per key
and per worker, error feedback conserves every value exactly, bad options are one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zensim.errors import ConfigError
from zensim.sparsify import SPARSIFIERS, ErrorFeedback, Team, make_sparsifier, option_names

NUMEL, WORKERS, ITERATIONS = 6000, 4, 12


def gradients(iterations: int, workers: int, numel: int = NUMEL, seed: int = 0) -> list[list[np.ndarray]]:
    """Heavy-tailed gradients with a shared component (so workers' selections overlap in part)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(iterations):
        shared = rng.standard_t(3, numel) * 0.02
        out.append([(shared + rng.standard_t(3, numel) * 0.01).astype(np.float32) for _ in range(workers)])
    return out


@pytest.mark.parametrize("name", SPARSIFIERS)
def test_proposals_are_sorted_unique_positions_of_the_input_kind(name: str) -> None:
    team = Team(name, WORKERS, 0.02, seed=1)
    for grads in gradients(ITERATIONS, WORKERS):
        accs = [m.accumulate("w", g) for m, g in zip(team.memories, grads)]
        counts = []
        for s, acc in zip(team.sparsifiers, accs):
            p = s.propose("w", acc)
            assert isinstance(p, np.ndarray) and p.dtype == np.int64
            assert np.all(np.diff(p) > 0) and (len(p) == 0 or (p[0] >= 0 and p[-1] < NUMEL))
            counts.append(len(p))
        for s in team.sparsifiers:
            s.observe("w", counts)


@pytest.mark.parametrize("name", SPARSIFIERS)
def test_numpy_and_torch_select_the_same(name: str) -> None:
    a, b = Team(name, WORKERS, 0.02, seed=2), Team(name, WORKERS, 0.02, seed=2)
    for grads in gradients(ITERATIONS, WORKERS, seed=3):
        ra = a.step("w", grads)
        rb = b.step("w", [torch.from_numpy(g.copy()) for g in grads])
        assert ra.proposed == rb.proposed
        for x, y in zip(ra.sent, rb.sent):
            np.testing.assert_array_equal(x.indices, y.indices)
            np.testing.assert_array_equal(x.values, y.values)
    assert isinstance(b.residual(0, "w"), torch.Tensor)


@pytest.mark.parametrize("name", SPARSIFIERS)
def test_state_is_per_key_and_deterministic(name: str) -> None:
    """Interleaving another tensor's iterations changes nothing for the first one."""
    alone, mixed = Team(name, WORKERS, 0.02, seed=4), Team(name, WORKERS, 0.02, seed=4)
    other = gradients(ITERATIONS, WORKERS, numel=4096, seed=5)
    for grads, noise in zip(gradients(ITERATIONS, WORKERS, seed=6), other):
        mixed.step("other", noise)
        ra, rb = alone.step("w", grads), mixed.step("w", grads)
        for x, y in zip(ra.sent, rb.sent):
            np.testing.assert_array_equal(x.indices, y.indices)


@pytest.mark.parametrize("name", SPARSIFIERS)
def test_error_feedback_keeps_every_value(name: str) -> None:
    """Per worker and iteration, exactly: residual + sent = previous residual + gradient; over the
    run, residuals + everything sent = sum of the inputs (float64 reference)."""
    team = Team(name, WORKERS, 0.02, seed=7)
    previous = [np.zeros(NUMEL, np.float32) for _ in range(WORKERS)]
    total = np.zeros(NUMEL)
    applied = np.zeros(NUMEL)
    for grads in gradients(ITERATIONS, WORKERS, seed=8):
        expected = [p + g for p, g in zip(previous, grads)]  # float32, as the accumulation does it
        rnd = team.step("w", grads)
        for r, chunk in enumerate(rnd.sent):
            residual = team.residual(r, "w")
            rebuilt = residual.copy()
            rebuilt[chunk.indices] += chunk.values
            np.testing.assert_array_equal(rebuilt, expected[r])
            assert not residual[chunk.indices].any()
            previous[r] = residual.copy()
            applied[chunk.indices] += chunk.values
        total += np.sum(grads, axis=0, dtype=np.float64)
    held = np.sum([team.residual(r, "w") for r in range(WORKERS)], axis=0, dtype=np.float64)
    np.testing.assert_allclose(held + applied, total, rtol=0, atol=1e-4)


@pytest.mark.parametrize("name", SPARSIFIERS)
def test_workers_differ_only_through_rank_and_seed(name: str) -> None:
    """A worker's sparsifier built alone equals the same rank built inside a team."""
    team = Team(name, WORKERS, 0.02, seed=9)
    solo = make_sparsifier(name, 0.02, rank=2, workers=WORKERS, seed=9 + 2)
    memory = ErrorFeedback()
    for grads in gradients(4, WORKERS, seed=10):
        acc = memory.accumulate("w", grads[2])
        mine = solo.propose("w", acc)
        rnd = team.step("w", grads)
        solo.observe("w", rnd.proposed)
        assert len(mine) == rnd.proposed[2]
        memory.consume("w", rnd.sent[2].indices)


@pytest.mark.parametrize("name", SPARSIFIERS)
@pytest.mark.parametrize("density", [0.0, -0.1, 1.5, "0.1"])
def test_bad_density_is_one_line(name: str, density: object) -> None:
    with pytest.raises(ConfigError, match=f"sparsifier {name}: density"):
        make_sparsifier(name, density)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", SPARSIFIERS)
def test_unknown_option_and_rank_are_one_line(name: str) -> None:
    with pytest.raises(ConfigError, match=f"sparsifier {name}: unknown option"):
        make_sparsifier(name, 0.1, bogus=1)
    with pytest.raises(ConfigError, match="rank 4 must be in"):
        make_sparsifier(name, 0.1, rank=4, workers=4)
    assert "density" not in option_names(name)


def test_unknown_sparsifier_names_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown \\(choose from topk, dgc"):
        make_sparsifier("nope", 0.1)
