"""Sparsity sources of the capture: what one worker sends of each gradient, and which elements.

A capture sparsifier belongs to one worker and is called once per parameter and iteration with
the worker's flat gradient; it returns a `Selection`: the sorted element ids the worker sends and
the dense tensor it contributes to the all-reduce (zero outside the selection).

- `natural`: the gradient as it is; the selection is its exact non-zero elements (an embedding
  gradient is non-zero only in the rows the micro-batch touched);
- any sparsifier of `zensim.sparsify` whose workers send their own proposals (`topk`, `dgc`,
  `threshold`), applied per parameter (layer-wise, as DGC does) with error feedback: what was not
  sent is added to the next gradient, so residual + sent = previous residual + gradient, exactly.
  The selection code is `zensim.sparsify`'s, on the gradient's device.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zensim.errors import ConfigError
from zensim.sparsify import ErrorFeedback, make_sparsifier as make_selector
from zensim.sparsify.base import Sparsifier as Selector
from zensim.trace.capture.names import SPARSIFIERS


@dataclass(frozen=True)
class Selection:
    """What one worker sends of one gradient: sorted element ids and the dense contribution."""

    indices: torch.Tensor  # int64, sorted, unique
    sent: torch.Tensor  # flat, same shape and dtype as the gradient, zero outside `indices`


class Sparsifier:
    """Natural sparsity: no selection, no residual."""

    name = "natural"
    density: float | None = None
    changes_gradient = False  # natural sparsity sends the gradient as it is

    def select(self, key: str, grad: torch.Tensor) -> Selection:
        """The selection of the flat gradient `grad` of parameter `key`."""
        return Selection(torch.nonzero(grad).flatten(), grad)


class Sparsified(Sparsifier):
    """A `zensim.sparsify` selector with error feedback, one residual per parameter."""

    changes_gradient = True

    def __init__(self, selector: Selector) -> None:
        self.selector = selector
        self.name = selector.name
        self.density = selector.density
        self.memory = ErrorFeedback()

    @property
    def residuals(self) -> dict[str, torch.Tensor]:
        """The residual of every parameter seen so far."""
        return self.memory.residuals

    def select(self, key: str, grad: torch.Tensor) -> Selection:
        """Add the residual, choose, send the chosen elements, keep the rest as the new residual."""
        acc = self.memory.accumulate(key, grad.detach())
        indices = self.selector.propose(key, acc)
        sent = torch.zeros_like(acc)
        sent[indices] = acc[indices]
        self.memory.consume(key, indices)
        self.selector.observe(key, [len(indices)])
        return Selection(indices, sent)


def make_sparsifier(kind: str, density: float | None, seed: int) -> Sparsifier:
    """A fresh capture sparsifier of `kind` for one worker; `seed` drives DGC's sampling."""
    if kind == "natural":
        if density is not None:
            raise ConfigError(f"--density {density}: only for --sparsifier {', '.join(SPARSIFIERS[1:])}")
        return Sparsifier()
    if kind not in SPARSIFIERS:
        raise ConfigError(f"--sparsifier {kind}: unknown (choose from {', '.join(SPARSIFIERS)})")
    if density is None:
        raise ConfigError(f"--sparsifier {kind}: needs --density")
    if not 0.0 < density <= 1.0:
        raise ConfigError(f"--density {density}: must be in (0, 1]")
    return Sparsified(make_selector(kind, density, seed=seed))
