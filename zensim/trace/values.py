"""Values for the chunks a scheme runs on: the trace's own, or synthetic ones made here, once.

An indices-only trace still has to carry values whenever a scheme needs them (value-dependent
selection), a check wants them, or the user asks (`--values`): `worker_chunk` gives each worker's
flat chunk with the trace's stored values, or else with deterministic synthetic values (standard
normal float32, seeded by iteration and worker, so that every process that reads the same worker
gets the same values: the emulator's ranks and the simulator agree bit for bit).
"""

from __future__ import annotations

import numpy as np

from zensim.sparse.chunk import SparseChunk
from zensim.trace.format import Trace


def synthetic_values(count: int, iteration: int, worker: int) -> np.ndarray:
    """`count` standard-normal float32 values, the same for the same (iteration, worker)."""
    return np.random.default_rng([iteration, worker, 0x5A]).standard_normal(count).astype(np.float32)


def worker_chunk(trace: Trace, iteration: int, worker: int, values: bool = True) -> SparseChunk:
    """Worker `worker`'s flat chunk at `iteration`: indices only unless `values`; with `values`, the
    stored values, or synthetic ones for an indices-only trace."""
    if not values:
        return SparseChunk(trace.flat_indices(iteration, worker), None)
    chunk = trace.flat_read(iteration, worker)
    if chunk.values is not None:
        return chunk
    return SparseChunk(chunk.indices, synthetic_values(chunk.nnz, iteration, worker))
