"""SparseChunk: sorted unique global element ids with optional values (None = indices-only mode)."""

from __future__ import annotations

from collections.abc import Sequence
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


def unique_sorted(ids: np.ndarray) -> np.ndarray:
    """Sorted unique ids by sort + neighbour compare (numpy's hash-based np.unique is far slower
    on millions of int64)."""
    ids = np.sort(ids)
    return ids[run_starts(ids)]


def run_starts(sorted_values: np.ndarray) -> np.ndarray:
    """Boolean mask of the first element of each run of equal values in a sorted array."""
    first = np.ones(len(sorted_values), np.bool_)
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=first[1:])
    return first


def union_indices(chunks: list[SparseChunk]) -> np.ndarray:
    """The sorted union of the chunks' indices (int64)."""
    nonempty = [c.indices for c in chunks if c.nnz]
    return unique_sorted(np.concatenate(nonempty)) if nonempty else np.empty(0, np.int64)


def union_marked(chunks: Sequence[SparseChunk], seen: np.ndarray) -> np.ndarray:
    """`union_indices` by marking ids in `seen` (a bool array longer than every id, all False, and
    left so): linear in len(seen), where sorting the concatenation is n log n (2.4x less CPU for
    dense-ish shards such as an 8-GPU machine's; a reused `seen` costs no allocation per call)."""
    for c in chunks:
        seen[c.indices] = True
    ids = np.flatnonzero(seen)
    seen[ids] = False
    return ids.astype(np.int64, copy=False)


def sum_chunks(chunks: list[SparseChunk]) -> SparseChunk:
    """Aggregate chunks: union of indices and, when all carry values, the sum at each index
    (accumulated in float64 in chunk order, returned as float32)."""
    nonempty = [c for c in chunks if c.nnz]
    with_values = all(c.values is not None for c in chunks) and bool(chunks)
    if not nonempty:
        return SparseChunk.empty(with_values)
    if len(nonempty) == 1:
        return nonempty[0]
    if with_values and len(nonempty) == 2:
        return _sum_two(*nonempty)
    idx = np.concatenate([c.indices for c in nonempty])
    if not with_values:
        return SparseChunk(unique_sorted(idx), None)
    order = np.argsort(idx, kind="stable")
    idx = idx[order]
    starts = np.flatnonzero(run_starts(idx))
    vals = np.concatenate([c.values for c in nonempty]).astype(np.float64)[order]
    return SparseChunk(idx[starts], np.add.reduceat(vals, starts).astype(np.float32))


def _sum_two(a: SparseChunk, b: SparseChunk) -> SparseChunk:
    """a + b: the sorted concatenation (two sorted runs: a linear merge), each shared id's pair
    added in float32. The float32 sum of two float32 values is correctly rounded, so it has the
    bits of the general path's float64 sum rounded to float32 (and is commutative)."""
    idx = np.concatenate([a.indices, b.indices])
    order = np.argsort(idx, kind="stable")
    idx = idx[order]
    values = np.concatenate([a.values, b.values], dtype=np.float32)[order]
    first = np.flatnonzero(idx[1:] == idx[:-1])  # each id is at most once in a and once in b
    if not len(first):
        return SparseChunk(idx, values)
    values[first] += values[first + 1]
    keep = np.ones(len(idx), np.bool_)
    keep[first + 1] = False
    return SparseChunk(idx[keep], values[keep])
