"""SparseChunk: sorted unique global element ids with optional values (None = indices-only mode).

The arrays are numpy arrays (the simulator) or torch tensors on any device (the emulator, the
DDP hook): every function here is written once over their shared namespace (zensim.sparse.xp)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from zensim.sparse import xp as backend
from zensim.sparse.xp import Array, namespace, run_starts


@dataclass(frozen=True)
class SparseChunk:
    """A sparse piece of a gradient: `indices` int64 sorted unique, `values` aligned or None."""

    indices: Array
    values: Array | None = None

    def __post_init__(self) -> None:
        if self.values is not None and self.values.shape[0] != self.indices.shape[0]:
            raise ValueError(f"{len(self.values)} values for {len(self.indices)} indices")

    @property
    def nnz(self) -> int:
        """Number of non-zero elements carried."""
        return int(self.indices.shape[0])

    @classmethod
    def empty(cls, with_values: bool, like: Array | None = None) -> "SparseChunk":
        """A chunk with no elements, carrying an empty value array iff `with_values`; in the
        library and on the device of `like` (numpy when None)."""
        xp = np if like is None else namespace(like)
        dev = "cpu" if like is None else backend.device(like)
        return cls(xp.zeros(0, dtype=xp.int64, device=dev),
                   xp.zeros(0, dtype=xp.float32, device=dev) if with_values else None)

    def to_torch(self, device: str = "cpu") -> "SparseChunk":
        """The chunk as torch tensors on `device` (a copy; no copy for tensors already there)."""
        import torch

        def move(x: Array) -> Array:
            return x.to(device) if isinstance(x, torch.Tensor) else torch.from_numpy(np.array(x)).to(device)
        return SparseChunk(move(self.indices), None if self.values is None else move(self.values))

    def host(self) -> "SparseChunk":
        """The chunk with numpy arrays (no copy when it has them already)."""
        if backend.is_numpy(self.indices):
            return self
        return SparseChunk(backend.host(self.indices), None if self.values is None else backend.host(self.values))

    def to_dense(self, numel: int) -> np.ndarray:
        """Scatter into a dense float64 vector of length `numel` (for checks, not the hot path)."""
        chunk = self.host()
        dense = np.zeros(numel, np.float64)
        if chunk.values is not None:
            dense[chunk.indices] = chunk.values
        else:
            dense[chunk.indices] = 1.0
        return dense


def unique_sorted(ids: Array) -> Array:
    """Sorted unique ids by sort + neighbour compare (numpy's hash-based np.unique is far slower
    on millions of int64)."""
    ids = namespace(ids).sort(ids)
    return ids[run_starts(ids)]


def union_indices(chunks: list[SparseChunk]) -> Array:
    """The sorted union of the chunks' indices (int64)."""
    nonempty = [c.indices for c in chunks if c.nnz]
    if not nonempty:
        return chunks[0].indices[:0] if chunks else np.empty(0, np.int64)
    return unique_sorted(namespace(*nonempty).concat(nonempty))


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
        return SparseChunk.empty(with_values, chunks[0].indices if chunks else None)
    if len(nonempty) == 1:
        return nonempty[0]
    if with_values and len(nonempty) == 2:
        return _sum_two(*nonempty)
    xp = namespace(*[c.indices for c in nonempty])
    idx = xp.concat([c.indices for c in nonempty])
    if not with_values:
        return SparseChunk(unique_sorted(idx), None)
    order = backend.argsort(idx)
    idx = idx[order]
    starts = backend.flatnonzero(run_starts(idx))
    vals = xp.astype(xp.concat([c.values for c in nonempty]), xp.float64)[order]
    return SparseChunk(idx[starts], xp.astype(backend.segment_sum(vals, starts), xp.float32))


def same_bits(a: SparseChunk, b: SparseChunk) -> bool:
    """Whether two chunks (of any array library) have the same indices and bit-identical values."""
    a, b = a.host(), b.host()
    if not np.array_equal(a.indices, b.indices):
        return False
    if a.values is None or b.values is None:
        return a.values is None and b.values is None
    return a.values.dtype == b.values.dtype and a.values.tobytes() == b.values.tobytes()


def _sum_two(a: SparseChunk, b: SparseChunk) -> SparseChunk:
    """a + b: the sorted concatenation (two sorted runs: a linear merge), each shared id's pair
    added in float32. The float32 sum of two float32 values is correctly rounded, so it has the
    bits of the general path's float64 sum rounded to float32 (and is commutative)."""
    xp = namespace(a.indices, b.indices)
    idx = xp.concat([a.indices, b.indices])
    order = backend.argsort(idx)
    idx = idx[order]
    values = xp.concat([xp.astype(a.values, xp.float32, copy=False),
                        xp.astype(b.values, xp.float32, copy=False)])[order]
    first = backend.flatnonzero(idx[1:] == idx[:-1])  # each id is at most once in a and once in b
    if not first.shape[0]:
        return SparseChunk(idx, values)
    values[first] += values[first + 1]
    keep = xp.ones(idx.shape[0], dtype=xp.bool, device=backend.device(idx))
    keep[first + 1] = False
    return SparseChunk(idx[keep], values[keep])
