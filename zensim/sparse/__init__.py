"""Index-set and sparse-tensor algebra, wire formats with exact byte sizes, partitioners.

API (details and byte layouts in docs/sparse.md):

    from zensim.sparse import SparseChunk, sum_chunks, RangeDomain, ExplicitDomain, make_format

    chunk = SparseChunk(indices_int64_sorted_unique, values_float32_or_None)
    fmt = make_format("coo", value_dtype="float32")   # dense | coo | blocks | bitmap | hash_bitmap
    fmt = make_format("blocks", block_size=256)        # value_dtype: float32 | float16 | bfloat16
    enc = fmt.encode(chunk, RangeDomain(lo, hi))       # Encoded(fmt, nbytes, chunk, domain), cheap
    enc.nbytes                                         # exact wire bytes (values counted if None)
    buf = enc.to_bytes()                               # exactly enc.nbytes bytes (emulator path)
    back = fmt.from_bytes(buf, domain)                 # -> Encoded; back.chunk == enc.chunk
    back = fmt.from_bytes(buf, domain, n_values=nnz, with_values=False)   # checked, indices-only

`encode` rounds values to the wire dtype, so `enc.chunk` is what a receiver decodes. The hash
bitmap is the bitmap over an `ExplicitDomain` 𝕀_i; get all n of them from the partitioner
(`HierarchicalHash.domain(i)`, cached per numel). Index width on the wire: int32 when the
domain's `bound` (hi, or the tensor numel for a hash partition) is < 2**31, else int64.

Partitioners (same arguments and seed on every rank):

    p = make_partitioner("zen", numel, n, seed=0)      # contiguous | thresholds | single_hash | zen
    p.prepare(iteration, all_worker_chunks)            # only "thresholds" uses it (recompute every T)
    parts = p.split(chunk)                             # n sorted SparseChunks, part j in p.domain(j)
    p.owner(indices), p.domain(j), p.domains(), p.stats (PartitionStats: collided/serial/lost rates)
    imbalance_report(p, worker_chunks)                 # push, pull, Theorem 2 bounds

Contract change (backward compatible): `from_bytes` takes `n_values` optional (expected nnz,
checked) and a keyword `with_values`.
"""

from zensim.sparse.chunk import SparseChunk, sum_chunks, union_indices
from zensim.sparse.domain import Domain, ExplicitDomain, RangeDomain, index_dtype
from zensim.sparse.formats import FORMATS, Encoded, Format, make_format
from zensim.sparse.hashpart import HierarchicalHash, SingleHash, h0_parts, hash_domains
from zensim.sparse.imbalance import ImbalanceReport, imbalance_report, pull_imbalance, push_imbalance, theorem2_bounds
from zensim.sparse.partition import Contiguous, PartitionStats, Partitioner, Thresholds
from zensim.sparse.registry import PARTITIONERS, make_partitioner
from zensim.sparse.values import value_codec

__all__ = [
    "SparseChunk", "sum_chunks", "union_indices", "Domain", "RangeDomain", "ExplicitDomain", "index_dtype",
    "Encoded", "Format", "FORMATS", "make_format", "value_codec",
    "Partitioner", "PartitionStats", "Contiguous", "Thresholds", "SingleHash", "HierarchicalHash",
    "PARTITIONERS", "make_partitioner", "h0_parts", "hash_domains",
    "ImbalanceReport", "imbalance_report", "push_imbalance", "pull_imbalance", "theorem2_bounds",
]
