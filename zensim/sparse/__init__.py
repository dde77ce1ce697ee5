"""Index-set and sparse-tensor algebra, wire formats with exact byte sizes, partitioners."""

from zensim.sparse.chunk import SparseChunk

__all__ = ["SparseChunk"]
