"""Checks every wire format and every partitioner must pass (as scikit-learn's `check_estimator`).

tests/test_conformance.py runs them over the registries (zensim.sparse.formats.FORMATS,
zensim.sparse.registry.PARTITIONERS); run them on a new member while writing it:
`check_format(MyFormat())`, `check_partitioner(MyPartitioner)`. `sample_chunks` makes the hard
cases they (and the scheme checks) run on.
"""

from __future__ import annotations

import numpy as np

from zensim.sparse.chunk import SparseChunk, same_bits
from zensim.sparse.domain import ExplicitDomain, RangeDomain
from zensim.sparse.formats import Format
from zensim.sparse.partition import Partitioner

CASES = ("random", "all-overlap", "no-overlap", "one-empty", "ends")


def sample_chunks(case: str, n: int, numel: int, density: float, seed: int, values: bool) -> list[SparseChunk]:
    """One chunk per rank for a named case; 'ends' puts index 0 and numel-1 on every rank."""
    rng = np.random.default_rng(seed)
    nnz = max(1, int(density * numel))
    if case == "all-overlap":
        shared = rng.choice(numel, nnz, replace=False)
        sets = [shared] * n
    elif case == "no-overlap":
        perm = rng.permutation(numel)
        per = max(1, min(nnz, numel // n))
        sets = [perm[r * per:(r + 1) * per] for r in range(n)]
    else:
        sets = [rng.choice(numel, nnz, replace=False) for _ in range(n)]
        if case == "one-empty":
            sets[rng.integers(n)] = np.empty(0, np.int64)
        if case == "ends":
            sets = [np.concatenate([s, [0, numel - 1]]) for s in sets]
    chunks = []
    for s in sets:
        idx = np.unique(np.asarray(s, np.int64))
        vals = rng.standard_normal(len(idx)).astype(np.float32) if values else None
        chunks.append(SparseChunk(idx, vals))
    return chunks


def on_torch(chunks: list[SparseChunk], device: str = "cpu") -> list[SparseChunk]:
    """The chunks as torch tensors on `device` (copies: the numpy ones stay as they are)."""
    return [c.to_torch(device) for c in chunks]


def check_format(fmt: Format) -> None:
    """`encode` sizes exactly what `to_bytes` writes; `from_bytes` decodes what a receiver is promised
    (`received`), on range and explicit domains, with and without values, in every hard case; explicit
    zeros survive exactly when the format says it keeps them; the bitset size equals the chunk size;
    on torch tensors the same sizes, bytes and decoded bits (a format is written over zensim.sparse.xp)."""
    from zensim.sparse.bits import pack_positions

    numel = 500
    elements = np.arange(numel, dtype=np.int64)
    for case in CASES:
        chunk = sample_chunks(case, 1, numel, 0.1, 4, values=True)[0]
        values = chunk.values.copy()
        values[::3] = 0.0
        chunk = SparseChunk(chunk.indices, values)
        for domain in (RangeDomain(0, numel), ExplicitDomain(elements, bound=numel)):
            if fmt.name == "hash_bitmap" and isinstance(domain, RangeDomain):
                continue
            for c in (chunk, SparseChunk(chunk.indices)):
                enc = fmt.encode(c, domain)
                buf = enc.to_bytes()
                assert len(buf) == enc.nbytes, f"{fmt!r}: {len(buf)} bytes written, {enc.nbytes} sized"
                back = fmt.from_bytes(buf, domain, with_values=c.values is not None)
                want = fmt.received(c)[0]
                assert np.array_equal(back.chunk.indices, want.indices), f"{fmt!r}: decoded other ids"
                if c.values is None:
                    words = pack_positions(domain.positions(c.indices), domain.size)
                    assert fmt.bitset_size(words, c.nnz, domain, {}) == enc.nbytes, f"{fmt!r}: bitset size"
                    continue
                assert np.array_equal(back.chunk.values, want.values), f"{fmt!r}: decoded other values"
                zeros = int((c.values == 0).sum())
                assert want.nnz == (c.nnz if fmt.keeps_zeros else c.nnz - zeros), f"{fmt!r}: keeps_zeros"
                _check_format_on_torch(fmt, c, domain, enc, back)


def _check_format_on_torch(fmt: Format, chunk: SparseChunk, domain, enc, back) -> None:  # type: ignore[no-untyped-def]
    """The same chunk as torch tensors: the same size and wire bytes, decoded (from a torch buffer,
    in torch) to the same bits as numpy's decoding."""
    tensor = chunk.to_torch()
    tenc = fmt.encode(tensor, domain)
    assert tenc.nbytes == enc.nbytes, f"{fmt!r}: torch sizes {tenc.nbytes} bytes, numpy {enc.nbytes}"
    buf = tenc.to_buffer()
    assert not isinstance(buf, np.ndarray), f"{fmt!r}: a torch chunk serialized to numpy"
    assert buf.numpy().tobytes() == enc.to_bytes(), f"{fmt!r}: torch writes other bytes than numpy"
    tback = fmt.from_bytes(buf, domain)
    assert not isinstance(tback.chunk.indices, np.ndarray), f"{fmt!r}: a torch buffer decoded to numpy"
    assert same_bits(tback.chunk, back.chunk), f"{fmt!r}: torch decodes other bits than numpy"


def check_partitioner(cls: type[Partitioner]) -> None:
    """n sorted parts, each inside its domain and agreeing with `owner`; domains disjoint and covering
    [0, numel); nothing invented (a lossy one may drop, never add); a torch chunk split alike; `key`
    names equal domains."""
    numel = 1000
    for n in (1, 3, 8):
        part = cls.for_scheme(numel, n, seed=1)
        chunk = sample_chunks("ends", 1, numel, 0.2, n, values=True)[0]
        part.prepare(0, [chunk])
        parts = part.split(chunk)
        assert len(parts) == n
        seen = np.concatenate([p.indices for p in parts])
        assert np.isin(seen, chunk.indices).all() and len(np.unique(seen)) == len(seen), f"{cls.__name__}: invented ids"
        if not cls.lossy:
            assert len(seen) == chunk.nnz, f"{cls.__name__}: lost ids but is not lossy"
        covered = np.zeros(numel, np.int64)
        for j, p in enumerate(parts):
            assert np.all(np.diff(p.indices) > 0)
            assert (part.owner(p.indices) == j).all(), f"{cls.__name__}: split disagrees with owner"
            domain = part.domain(j)
            assert np.array_equal(domain.ids(domain.positions(p.indices)), p.indices)
            covered[domain.ids(np.arange(domain.size))] += 1
        assert (covered == 1).all(), f"{cls.__name__}: domains overlap or miss ids"
        twin = cls.for_scheme(numel, n, seed=1)
        twin.prepare(0, [chunk])
        on_torch_parts = twin.split(chunk.to_torch())
        assert all(not isinstance(p.indices, np.ndarray) and np.array_equal(p.indices.numpy(), q.indices)
                   and np.array_equal(p.values.numpy(), q.values) for p, q in zip(on_torch_parts, parts)), \
            f"{cls.__name__}: splits a torch chunk otherwise than numpy's"
        if part.key is not None:
            other = cls.for_scheme(numel, n, seed=1)
            assert other.key == part.key and all(
                np.array_equal(a.ids(np.arange(a.size)), b.ids(np.arange(b.size)))
                for a, b in zip(part.domains(), other.domains()))
