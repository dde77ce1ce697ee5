"""Where a replay over iterations reads every worker's dense gradient: a trace, or a generator.

Both have `workers`, `iterations`, `numel`, `describe()` and `gradient(iteration, worker, out)`,
a float32 vector of `numel` (into `out` when given):

- `TraceGradients(trace)`: a trace with values; dense chunks are read without indices, sparse ones
  (a trace of what workers sent) are scattered into zeros;
- `SyntheticGradients(workers, iterations, numel, seed)`: heavy-tailed gradients for sizes no
  file holds (16 workers x 10M elements x 100 iterations would be 32 GB in float16). `pool`
  vectors (default workers + 1) are drawn once, each S + N_j: S a heavy-tailed vector (normal
  times exponential) shared by all, the common descent direction, and N_j independent noise of
  the same kind, both with magnitudes falling by a factor 10 along the tensor in 16 stretches (a
  crude stand-in for layers). Worker w's gradient at iteration t is vector (7 t + w) mod pool:
  no two workers of an iteration get the same one (pool >= workers), and reading one costs
  nothing (`gradient` without `out` returns a read-only view; memory is pool x numel x 4 bytes).

`gradient(iteration, worker)` without `out` may return a read-only array: do not write into it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zensim.errors import ConfigError, TraceError
from zensim.trace.format import Trace


class TraceGradients:
    """Dense gradients read from a trace with values (see the module docstring)."""

    def __init__(self, trace: Trace) -> None:
        if trace.value_dtype is None:
            raise TraceError(f"{trace.path}: indices only; a replay of gradients needs values (capture --dense)")
        self.trace = trace
        self.workers, self.iterations, self.numel = trace.workers, trace.iterations, trace.numel

    def describe(self) -> dict[str, Any]:
        """What the gradients are, for result provenance."""
        return {"trace": self.trace.path, "dense": self.trace.is_dense, "workload": self.trace.meta.get("workload")}

    def gradient(self, iteration: int, worker: int, out: np.ndarray | None = None) -> np.ndarray:
        """Worker `worker`'s flat gradient at `iteration` (float32, into `out` if given)."""
        return self.trace.flat_dense(iteration, worker, out)


class SyntheticGradients:
    """Heavy-tailed gradients generated on the fly (see the module docstring)."""

    STRETCHES = 16

    def __init__(self, workers: int, iterations: int, numel: int, seed: int = 0, pool: int | None = None,
                 scale: float = 1e-3) -> None:
        for name, value in (("workers", workers), ("iterations", iterations), ("numel", numel)):
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"synthetic gradients: {name} must be a positive integer, got {value!r}")
        self.workers, self.iterations, self.numel, self.seed = workers, iterations, numel, seed
        self.pool = pool if pool is not None else workers + 1
        if self.pool < workers:
            raise ConfigError(f"synthetic gradients: pool {self.pool} is smaller than the {workers} workers")
        rng = np.random.default_rng(seed)
        profile = np.repeat(np.geomspace(10.0, 1.0, self.STRETCHES), math.ceil(numel / self.STRETCHES))[:numel]
        profile = (profile * scale).astype(np.float32)
        shared = heavy_tailed(rng, numel)
        self.vectors = []
        for _ in range(self.pool):
            vector = heavy_tailed(rng, numel)
            vector += shared
            vector *= profile
            vector.flags.writeable = False
            self.vectors.append(vector)

    def describe(self) -> dict[str, Any]:
        """The generator and its parameters."""
        return {"synthetic": "zensim.trace.gradients/1", "workers": self.workers, "iterations": self.iterations,
                "numel": self.numel, "seed": self.seed, "pool": self.pool}

    def gradient(self, iteration: int, worker: int, out: np.ndarray | None = None) -> np.ndarray:
        """Vector (7 t + w) mod pool (a read-only view, or copied into `out`)."""
        if not (0 <= iteration < self.iterations and 0 <= worker < self.workers):
            raise ConfigError(f"synthetic gradients: iteration {iteration} worker {worker} out of range")
        vector = self.vectors[(7 * iteration + worker) % self.pool]
        if out is None:
            return vector
        out[:] = vector
        return out


def heavy_tailed(rng: np.random.Generator, size: int) -> np.ndarray:
    """float32 normal x exponential draws: symmetric, heavier-tailed than a normal (kurtosis 15)."""
    out = rng.standard_normal(size, dtype=np.float32)
    out *= rng.standard_exponential(size, dtype=np.float32)
    return out
