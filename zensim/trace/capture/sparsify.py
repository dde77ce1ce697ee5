"""Sparsity sources: what one worker sends of each gradient, and which elements that is.

A sparsifier belongs to one worker (it keeps that worker's error-feedback residuals) and is
called once per parameter and iteration with the worker's flat gradient. It returns a `Selection`:
the sorted element ids the worker sends and the dense tensor it contributes to the all-reduce
(zero outside the selection).

- `natural`: the gradient as it is; the selection is its exact non-zero elements (an embedding
  gradient is non-zero only in the rows the micro-batch touched).
- `topk`: the k = ceil(density * numel) elements of largest magnitude of gradient + residual.
- `dgc`: Deep Gradient Compression's sampled threshold: the top-density quantile of |g| over a
  random sample sets a threshold; elements at or above it are selected, cut to the exact top-k
  among them when more than k pass (DGC's hierarchical selection).

`topk` and `dgc` keep a per-worker, per-parameter residual (error feedback): what was not sent is
added to the next gradient, so residual + sent = previous residual + gradient, exactly.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import torch

from zensim.errors import ConfigError
from zensim.trace.capture.names import SPARSIFIERS

DGC_SAMPLE_RATIO = 0.01  # DGC samples 0.1%-1% of the elements
DGC_MIN_SAMPLE = 1024


@dataclass(frozen=True)
class Selection:
    """What one worker sends of one gradient: sorted element ids and the dense contribution."""

    indices: torch.Tensor  # int64, sorted, unique
    sent: torch.Tensor  # flat, same shape and dtype as the gradient, zero outside `indices`


def topk_count(density: float, numel: int) -> int:
    """Number of elements a density-`density` selection keeps of `numel` (at least 1)."""
    return min(numel, max(1, math.ceil(density * numel)))


class Sparsifier:
    """Base: natural sparsity (no selection, no residual)."""

    name = "natural"
    density: float | None = None
    changes_gradient = False  # natural sparsity sends the gradient as it is

    def select(self, key: str, grad: torch.Tensor) -> Selection:
        """The selection of the flat gradient `grad` of parameter `key`."""
        return Selection(torch.nonzero(grad).flatten(), grad)


class ErrorFeedback(Sparsifier):
    """A magnitude selection at `density` with a residual per parameter."""

    changes_gradient = True

    def __init__(self, density: float, seed: int = 0) -> None:
        if not 0.0 < density <= 1.0:
            raise ConfigError(f"--density {density}: must be in (0, 1]")
        self.density = density
        self.seed = seed
        self.residuals: dict[str, torch.Tensor] = {}

    def choose(self, key: str, magnitude: torch.Tensor) -> torch.Tensor:
        """Element ids to send given |accumulated gradient| (any order)."""
        raise NotImplementedError

    def select(self, key: str, grad: torch.Tensor) -> Selection:
        """Add the residual, choose, send the chosen elements, keep the rest as the new residual."""
        residual = self.residuals.get(key)
        acc = grad.detach().clone() if residual is None else residual + grad.detach()
        indices = torch.sort(self.choose(key, acc.abs())).values
        sent = torch.zeros_like(acc)
        sent[indices] = acc[indices]
        acc[indices] = 0  # what is left is the new residual: acc - sent, exactly
        self.residuals[key] = acc
        return Selection(indices, sent)


class TopK(ErrorFeedback):
    """Exact top-k by magnitude."""

    name = "topk"

    def choose(self, key: str, magnitude: torch.Tensor) -> torch.Tensor:
        """The k largest magnitudes (ties broken by torch.topk)."""
        return torch.topk(magnitude, topk_count(self.density, magnitude.numel()), sorted=False).indices


class DGC(ErrorFeedback):
    """DGC sampled-threshold selection; at most k elements, possibly fewer."""

    name = "dgc"

    def __init__(self, density: float, seed: int = 0) -> None:
        super().__init__(density, seed)
        self.generators: dict[str, torch.Generator] = {}

    def choose(self, key: str, magnitude: torch.Tensor) -> torch.Tensor:
        """Threshold from a random sample's top quantile, cut to the top-k if too many pass."""
        numel = magnitude.numel()
        k = topk_count(self.density, numel)
        size = min(numel, max(DGC_MIN_SAMPLE, math.ceil(DGC_SAMPLE_RATIO * numel)))
        if key not in self.generators:  # one stream per parameter: independent of the call order
            self.generators[key] = torch.Generator().manual_seed(self.seed * 1_000_003 + zlib.crc32(key.encode()))
        sample = magnitude[torch.randint(numel, (size,), generator=self.generators[key])]
        threshold = torch.topk(sample, topk_count(self.density, size)).values[-1]
        chosen = torch.nonzero(magnitude >= threshold).flatten()
        if chosen.numel() > k:
            chosen = chosen[torch.topk(magnitude[chosen], k, sorted=False).indices]
        return chosen


def make_sparsifier(kind: str, density: float | None, seed: int) -> Sparsifier:
    """A fresh sparsifier of `kind` for one worker; `seed` drives DGC's sampling."""
    if kind == "natural":
        if density is not None:
            raise ConfigError(f"--density {density}: only for --sparsifier topk or dgc")
        return Sparsifier()
    if kind not in SPARSIFIERS:
        raise ConfigError(f"--sparsifier {kind}: unknown (choose from {', '.join(SPARSIFIERS)})")
    if density is None:
        raise ConfigError(f"--sparsifier {kind}: needs --density")
    return (TopK if kind == "topk" else DGC)(density, seed)
