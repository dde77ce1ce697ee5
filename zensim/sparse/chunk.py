"""SparseChunk: sorted unique global element ids with optional values (None = indices-only mode)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SparseChunk:
    """A sparse piece of a gradient: `indices` int64 sorted unique, `values` aligned or None."""

    indices: np.ndarray
    values: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.values is not None and len(self.values) != len(self.indices):
            raise ValueError(f"{len(self.values)} values for {len(self.indices)} indices")

    @property
    def nnz(self) -> int:
        """Number of non-zero elements carried."""
        return int(len(self.indices))

    @classmethod
    def empty(cls, with_values: bool) -> "SparseChunk":
        """A chunk with no elements, carrying an empty value array iff `with_values`."""
        return cls(np.empty(0, np.int64), np.empty(0, np.float32) if with_values else None)

    def to_dense(self, numel: int) -> np.ndarray:
        """Scatter into a dense float64 vector of length `numel` (for checks, not the hot path)."""
        dense = np.zeros(numel, np.float64)
        if self.values is not None:
            dense[self.indices] = self.values
        else:
            dense[self.indices] = 1.0
        return dense


def sum_chunks(chunks: list[SparseChunk]) -> SparseChunk:
    """Aggregate chunks: union of indices and, when all carry values, the sum at each index."""
    nonempty = [c for c in chunks if c.nnz]
    with_values = all(c.values is not None for c in chunks) and bool(chunks)
    if not nonempty:
        return SparseChunk.empty(with_values)
    if len(nonempty) == 1:
        return nonempty[0]
    idx = np.concatenate([c.indices for c in nonempty])
    if not with_values:
        return SparseChunk(np.unique(idx), None)
    vals = np.concatenate([c.values for c in nonempty])
    union, inverse = np.unique(idx, return_inverse=True)
    summed = np.bincount(inverse, weights=vals, minlength=len(union))
    return SparseChunk(union, summed.astype(np.float32))
