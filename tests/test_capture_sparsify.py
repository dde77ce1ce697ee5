"""Capture sparsifiers: zensim.sparsify's selectors on torch gradients with error feedback per
parameter: exact top-k counts, DGC picks a magnitude-top set, residual + sent conserves mass."""

from __future__ import annotations

import math

import pytest
import torch

from zensim.errors import ConfigError
from zensim.sparsify import target_count
from zensim.trace.capture.names import SPARSIFIERS
from zensim.trace.capture.sparsify import Sparsifier, make_sparsifier


def grads(steps: int, numel: int, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(numel, generator=g) for _ in range(steps)]


@pytest.mark.parametrize("numel,density", [(1000, 0.01), (997, 0.05), (7, 0.5), (3, 0.001), (50, 1.0)])
def test_topk_selects_exactly_k_largest(numel: int, density: float) -> None:
    sp = make_sparsifier("topk", density, 0)
    g = grads(1, numel)[0]
    sel = sp.select("w", g)
    k = max(1, math.ceil(density * numel))
    assert sel.indices.numel() == k == target_count(density, numel)
    assert torch.equal(sel.indices, torch.unique(sel.indices))  # sorted, unique
    chosen = torch.zeros(numel, dtype=torch.bool)
    chosen[sel.indices] = True
    if k < numel:
        assert g.abs()[chosen].min() >= g.abs()[~chosen].max()
    assert torch.equal(sel.sent[chosen], g[chosen]) and not sel.sent[~chosen].any()


@pytest.mark.parametrize("kind", SPARSIFIERS[1:])
def test_error_feedback_conserves_mass(kind: str) -> None:
    sp = make_sparsifier(kind, 0.02, 1)
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
    sp = make_sparsifier("dgc", 0.01, 3)
    for g in grads(5, 20_000, seed=4):
        acc = g + sp.residuals.get("w", torch.zeros_like(g))
        sel = sp.select("w", g)
        assert 1 <= sel.indices.numel() <= target_count(0.01, g.numel())
        chosen = torch.zeros(g.numel(), dtype=torch.bool)
        chosen[sel.indices] = True
        assert acc.abs()[chosen].min() >= acc.abs()[~chosen].max()


def test_natural_is_the_exact_nonzeros() -> None:
    g = torch.zeros(100)
    g[[3, 50, 99]] = torch.tensor([1.0, -2.0, 1e-30])
    sel = Sparsifier().select("w", g)
    assert sel.indices.tolist() == [3, 50, 99] and sel.sent is g


def test_capture_offers_the_uncoordinated_sparsifiers() -> None:
    assert SPARSIFIERS == ("natural", "topk", "dgc", "threshold", "blocktopk", "oktopk")


@pytest.mark.parametrize(
    "kind,density,message",
    [("topk", 0.0, "--density 0.0"), ("dgc", 1.5, "--density 1.5"), ("dgc", None, "needs --density"),
     ("random", 0.1, "--sparsifier random"), ("exdyna", 0.1, "--sparsifier exdyna"),
     ("natural", 0.1, "only for --sparsifier topk")],
)
def test_bad_sparsifier_arguments(kind: str, density: float | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_sparsifier(kind, density, 0)
