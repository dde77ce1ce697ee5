"""Error feedback: what a worker did not send is added to its next gradient.

`ErrorFeedback` holds one worker's residual per key. `accumulate(key, grad)` returns the
accumulated gradient acc = residual + grad (the residual buffer itself, updated in place: no copy
of a large gradient per iteration); after the values at the sent positions are read,
`consume(key, positions)` zeroes them, so that the residual left is exactly acc - sent.
`restore(key, positions, values)` adds values back (what a scheme dropped in transit: SparDL's
global residual collection).
"""

from __future__ import annotations

from zensim.sparsify.ops import Array, is_torch


class ErrorFeedback:
    """One worker's residuals, keyed by tensor."""

    def __init__(self) -> None:
        self.residuals: dict[str, Array] = {}

    def accumulate(self, key: str, grad: Array) -> Array:
        """residual + grad, in the residual's buffer (a copy of `grad` the first time)."""
        residual = self.residuals.get(key)
        if residual is None:
            residual = grad.detach().clone() if is_torch(grad) else grad.copy()
            self.residuals[key] = residual
        elif is_torch(residual):
            residual.add_(grad)
        else:
            residual += grad
        return residual

    def consume(self, key: str, positions: Array) -> None:
        """The values at `positions` were sent: zero them in the residual."""
        self.residuals[key][positions] = 0

    def restore(self, key: str, positions: Array, values: Array) -> None:
        """Add `values` back at `positions` (values a scheme dropped, returned to this worker)."""
        self.residuals[key][positions] += values
