"""Dense payloads stay dense (DensePiece): a dense ring adds arrays, and ends with the same bits on
the bytes transport as in memory, in every wire dtype, cancellations and overflows included."""

from __future__ import annotations

import numpy as np
import pytest

from schemes_support import make_chunks
from zensim.errors import ValueRangeError
from zensim.run import InBytes, run_ranks, same_bits
from zensim.schemes import build_scheme
from zensim.schemes.pieces import ChunkPiece, DensePiece, union
from zensim.run.context import Meter, RunContext
from zensim.sparse.chunk import SparseChunk, sum_chunks
from zensim.sparse.domain import RangeDomain

NUMEL = 1000


def cancelling(n: int) -> list[SparseChunk]:
    """Random chunks where ranks 0 and 1 cancel exactly on some ids (x and -x)."""
    chunks = make_chunks("random", n, NUMEL, 0.3, 7, True)
    common = np.intersect1d(chunks[0].indices, chunks[1].indices)[:20]
    v1 = chunks[1].values.copy()
    v1[np.searchsorted(chunks[1].indices, common)] = -chunks[0].values[np.searchsorted(chunks[0].indices, common)]
    chunks[1] = SparseChunk(chunks[1].indices, v1)
    return chunks


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name,options", [("dense-allreduce", {}), ("ring-incr-parallel-balanced", {"push": "dense"}),
                                          ("sparcml", {"push": "dense"})])
@pytest.mark.parametrize("n", [2, 3, 5])
def test_bytes_and_memory_end_with_the_same_bits(name, options, dtype, n):
    chunks = cancelling(n)
    prog = build_scheme(name, n, NUMEL, value_dtype=dtype, **options)
    memory = run_ranks(prog, chunks)  # checks the dense sum and identical replicas
    wire = run_ranks(build_scheme(name, n, NUMEL, value_dtype=dtype, **options), chunks, InBytes())
    for a, b in zip(memory.results, wire.results):
        assert same_bits(a, b)
    assert wire.log.messages == memory.log.messages


def test_a_dense_sum_is_the_sparse_sum():
    """Two pieces: the float32 array addition gives the bits of the float64 sum rounded to float32."""
    rng = np.random.default_rng(3)
    domain = RangeDomain(100, 600)
    ctx = RunContext(Meter(1, 1))
    for _ in range(20):
        a = SparseChunk(np.sort(rng.choice(np.arange(100, 600), 300, replace=False)),
                        (rng.standard_normal(300) * 10.0 ** rng.integers(-20, 20, 300)).astype(np.float32))
        b = SparseChunk(np.sort(rng.choice(np.arange(100, 600), 200, replace=False)),
                        (rng.standard_normal(200) * 10.0 ** rng.integers(-20, 20, 200)).astype(np.float32))
        want = sum_chunks([a, b])
        want = SparseChunk(want.indices[want.values != 0], want.values[want.values != 0])
        for pa, pb in ((DensePiece.of(ChunkPiece(domain, a)), ChunkPiece(domain, b)),
                       (ChunkPiece(domain, a), DensePiece.of(ChunkPiece(domain, b))),
                       (DensePiece.of(ChunkPiece(domain, a)), DensePiece.of(ChunkPiece(domain, b)))):
            got = union([pa, pb], ctx)
            assert isinstance(got, DensePiece) and same_bits(got.to_chunk(), want)


def test_a_dense_sum_that_overflows_is_a_user_error():
    prog = build_scheme("dense-allreduce", 2, 4)
    big = [SparseChunk(np.arange(4), np.full(4, 3e38, np.float32))] * 2
    with pytest.raises(ValueRangeError, match="overflows float32"):
        run_ranks(prog, big, InBytes())
