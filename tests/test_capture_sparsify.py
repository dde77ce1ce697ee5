"""Sparsifiers: exact top-k counts, DGC picks a magnitude-top set, error feedback conserves mass."""

from __future__ import annotations

import math

import pytest
import torch

from zensim.errors import ConfigError
from zensim.trace.capture.sparsify import DGC, Sparsifier, TopK, make_sparsifier, topk_count


def grads(steps: int, numel: int, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(numel, generator=g) for _ in range(steps)]


@pytest.mark.parametrize("numel,density", [(1000, 0.01), (997, 0.05), (7, 0.5), (3, 0.001), (50, 1.0)])
def test_topk_selects_exactly_k_largest(numel: int, density: float) -> None:
    sp = TopK(density)
    g = grads(1, numel)[0]
    sel = sp.select("w", g)
    k = max(1, math.ceil(density * numel))
    assert sel.indices.numel() == k == topk_count(density, numel)
    assert torch.equal(sel.indices, torch.unique(sel.indices))  # sorted, unique
    chosen = torch.zeros(numel, dtype=torch.bool)
    chosen[sel.indices] = True
    if k < numel:
        assert g.abs()[chosen].min() >= g.abs()[~chosen].max()
    assert torch.equal(sel.sent[chosen], g[chosen]) and not sel.sent[~chosen].any()


@pytest.mark.parametrize("cls", [TopK, DGC])
def test_error_feedback_conserves_mass(cls: type) -> None:
    sp = cls(0.02, seed=1)
    numel = 5000
    total_sent = torch.zeros(numel)
    total_grad = torch.zeros(numel)
    previous = torch.zeros(numel)
    for g in grads(6, numel):
        sel = sp.select("w", g)
        residual = sp.residuals["w"]
        # per step, exactly: new residual + sent = old residual + gradient
        assert torch.equal(residual + sel.sent, previous + g)
        assert not residual[sel.indices].any()
        previous = residual.clone()
        total_sent += sel.sent
        total_grad += g
    torch.testing.assert_close(sp.residuals["w"] + total_sent, total_grad)


def test_dgc_selects_at_most_k_of_the_largest_magnitudes() -> None:
    sp = DGC(0.01, seed=3)
    for g in grads(5, 20_000, seed=4):
        acc = g + sp.residuals.get("w", torch.zeros_like(g))
        sel = sp.select("w", g)
        k = topk_count(0.01, g.numel())
        assert 1 <= sel.indices.numel() <= k
        chosen = torch.zeros(g.numel(), dtype=torch.bool)
        chosen[sel.indices] = True
        assert acc.abs()[chosen].min() >= acc.abs()[~chosen].max()


def test_dgc_sampling_is_per_parameter_and_seeded() -> None:
    a, b = DGC(0.01, seed=5), DGC(0.01, seed=5)
    g1, g2 = grads(2, 30_000, seed=6)
    first = a.select("x", g1).indices
    a.select("y", g2)
    b.select("y", g2)  # another order of calls must not change x's sample
    assert torch.equal(b.select("x", g1).indices, first)


def test_natural_is_the_exact_nonzeros() -> None:
    g = torch.zeros(100)
    g[[3, 50, 99]] = torch.tensor([1.0, -2.0, 1e-30])
    sel = Sparsifier().select("w", g)
    assert sel.indices.tolist() == [3, 50, 99] and sel.sent is g


@pytest.mark.parametrize(
    "kind,density,message",
    [("topk", 0.0, "--density 0.0"), ("dgc", 1.5, "--density 1.5"), ("dgc", None, "needs --density"),
     ("random", 0.1, "--sparsifier random")],
)
def test_bad_sparsifier_arguments(kind: str, density: float | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_sparsifier(kind, density, 0)
