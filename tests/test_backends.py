"""One kernel, two array libraries: the sparse algebra on torch tensors gives numpy's bits.

The scheme conformance suite (tests/test_conformance.py) runs every scheme on both; here the
kernels underneath are checked one by one on hard inputs, and the whole catalog is run once with
torch's implicit conversion to numpy forbidden, so that no kernel hides a host copy (on a GPU
that copy would be a device-to-host transfer, or an error).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zensim.run import InBytes, run_ranks
from zensim.schemes import CATALOG, DISTINCT, build_scheme
from zensim.sparse import xp as backend
from zensim.sparse.chunk import SparseChunk, same_bits, sum_chunks, union_indices
from zensim.sparse.conformance import on_torch, sample_chunks
from zensim.sparse.domain import ExplicitDomain, RangeDomain
from zensim.sparse.formats import FORMATS, make_format
from zensim.sparse.hashing import hash64, hash_key, low_to_range, to_range
from zensim.sparse.hashpart import HierarchicalHash, SingleHash
from zensim.sparse.partition import Contiguous, domains_from_owner


def _ids(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.integers(0, 2**40, 20000), np.arange(300), [2**62, 2**63 - 1]]).astype(np.int64)


@pytest.mark.parametrize("m", [1, 3, 16, 1000, 2**31 - 1, 2**31, 2**31 + 7, 2**32, 2**32 + 5, 10**15])
def test_hash_and_ranges_are_the_same_bits(m: int) -> None:
    ids = _ids()
    for key in (hash_key(0, 0), hash_key(7, 3), 0, 2**64 - 1):
        h, t = hash64(ids, key), hash64(torch.from_numpy(ids), key)
        assert np.array_equal(h.view(np.int64), t.numpy())
        assert np.array_equal(to_range(h, m), to_range(t, m).numpy())
        if m <= 2**32:
            assert np.array_equal(low_to_range(h, m), low_to_range(t, m).numpy())


@pytest.mark.parametrize("options", [dict(), dict(load=0.6, r2_ratio=0.05), dict(r1=1, r2=0, k=2), dict(k=0)])
def test_algorithm_1_memory_is_the_same_on_torch(options: dict) -> None:
    ids = np.unique(np.random.default_rng(1).integers(0, 1 << 22, 30000))
    a = HierarchicalHash(1 << 22, 8, seed=5, **options).hash_table(ids)
    b = HierarchicalHash(1 << 22, 8, seed=5, **options).hash_table(torch.from_numpy(ids))
    assert a.stats == b.stats
    assert a.stats.collided > 0
    for name in ("slots", "serial", "spill"):
        for x, y in zip(getattr(a, name), getattr(b, name)):
            assert np.array_equal(x, y.numpy())
    assert all(np.array_equal(x, y.numpy()) for x, y in zip(a.extract(), b.extract()))


def test_claim_keeps_the_largest_writer_on_both() -> None:
    rng = np.random.default_rng(2)
    target = rng.integers(0, 50, 4000)
    ids = np.arange(4000, dtype=np.int32)  # ascending, as claim requires
    row = np.full(50, -1, np.int32)
    backend.claim(row, target, ids)
    expected = np.full(50, -1, np.int32)
    np.maximum.at(expected, target, ids)  # the definition: the largest id wins
    assert np.array_equal(row, expected)
    trow = torch.full((50,), -1, dtype=torch.int32)
    backend.claim(trow, torch.from_numpy(target), torch.from_numpy(ids))
    assert np.array_equal(trow.numpy(), expected)


def test_segment_sum_adds_left_to_right() -> None:
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 40, 300)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    values = (rng.standard_normal(int(lengths.sum())) * 10.0 ** rng.integers(-8, 8, int(lengths.sum())))
    expected = []
    for a, n in zip(starts, lengths):
        total = values[a]
        for v in values[a + 1:a + n]:
            total = total + v  # Python floats: IEEE double, left to right
        expected.append(total)
    assert backend.segment_sum(values, starts).tolist() == expected
    assert backend.segment_sum(torch.from_numpy(values), torch.from_numpy(starts)).tolist() == expected


@pytest.mark.parametrize("case", ["random", "all-overlap", "no-overlap", "one-empty", "ends"])
def test_sums_and_unions_of_many_chunks(case: str) -> None:
    chunks = sample_chunks(case, 13, 400, 0.3, 4, values=True)
    tensors = on_torch(chunks)
    assert same_bits(sum_chunks(chunks), sum_chunks(tensors))
    assert same_bits(sum_chunks(chunks[:2]), sum_chunks(tensors[:2]))
    assert np.array_equal(union_indices(chunks), union_indices(tensors).numpy())


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_formats_encode_and_decode_alike(name: str, dtype: str) -> None:
    fmt = make_format(name, dtype, 7)
    chunk = sample_chunks("ends", 1, 500, 0.2, 6, values=True)[0]
    values = chunk.values * np.float32(1e3)
    values[::4] = 0.0
    chunk = SparseChunk(chunk.indices, values)
    tensor = on_torch([chunk])[0]
    domains = [ExplicitDomain(np.arange(500, dtype=np.int64), bound=500)]
    if name != "hash_bitmap":
        domains.append(RangeDomain(0, 500))
    for domain in domains:
        a, b = fmt.encode(chunk, domain), fmt.encode(tensor, domain)
        assert a.nbytes == b.nbytes and same_bits(a.chunk, b.chunk)
        buf = b.to_bytes()
        assert bytes(buf) == bytes(a.to_bytes())
        back = fmt.from_bytes(buf, domain, like=tensor.indices)
        assert isinstance(back.chunk.indices, torch.Tensor) and same_bits(back.chunk, fmt.from_bytes(buf, domain).chunk)


def _explicit_domains() -> list[ExplicitDomain]:
    """Lone domains with a position table (bound <= TABLE_SPAN * size) and without (a sparse
    subset), single elements at 0 and at bound - 1, an empty one, and a partition's 5 domains
    (one shared table, ids up to bound - 1, one part empty)."""
    rng = np.random.default_rng(3)
    dense = np.sort(rng.choice(1000, 400, replace=False)).astype(np.int32)
    sparse = np.sort(rng.choice(10**6, 300, replace=False))
    lone = [ExplicitDomain(dense, bound=1000), ExplicitDomain(sparse, bound=10**6),
            ExplicitDomain(np.array([0], np.int64), bound=1), ExplicitDomain(np.array([2], np.int32), bound=3),
            ExplicitDomain(np.array([999], np.int64), bound=1000), ExplicitDomain(np.empty(0, np.int32), bound=50)]
    family = domains_from_owner(1000, 5, lambda ids: np.where(ids == 0, 4, (ids * 7919) % 4), block=256)  # 4: id 0
    return lone + family + domains_from_owner(7, 3, lambda ids: ids % 2, block=4)


def test_position_tables_are_made_where_they_pay() -> None:
    domains = _explicit_domains()
    assert [d.table is not None for d in domains[:6]] == [True, False, True, True, False, False]
    assert all(d.table is domains[6].table for d in domains[6:11]) and domains[11].table is domains[13].table
    assert domains[13].size == 0 and domains[10].size == 1


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_positions_are_the_search_result(library: str) -> None:
    """Every domain's positions of a random subset of its ids (with its first and last) equal
    searchsorted's on numpy and on torch, as int64 of the ids' library; ids() inverts them."""
    rng = np.random.default_rng(4)
    for domain in _explicit_domains():
        el = domain.elements
        take = np.sort(rng.choice(len(el), len(el) // 2, replace=False)) if len(el) else np.empty(0, np.int64)
        ids = np.unique(np.concatenate([el[take], el[:1], el[-1:]])).astype(np.int64)
        rng.shuffle(ids)
        expected = np.searchsorted(el, ids)
        arg = torch.from_numpy(ids) if library == "torch" else ids
        got = domain.positions(arg)
        assert isinstance(got, torch.Tensor if library == "torch" else np.ndarray) and got.dtype == arg.dtype
        assert np.array_equal(backend.host(got), expected)
        assert np.array_equal(backend.host(domain.ids(got)), ids)


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_positions_refuse_ids_outside_the_domain(library: str) -> None:
    """One outside id among inside ones is a ValueError: below 0, at or past bound, in a gap of a
    tabled domain (its table entry is 0), in a sibling domain of the same partition."""
    domains = _explicit_domains()
    dense, sibling = domains[0], domains[6]
    gap = int(np.setdiff1d(np.arange(1000), dense.elements)[7])
    other = int(domains[7].elements[3])
    cases = [(dense, -1), (dense, 1000), (dense, gap), (dense, int(dense.elements[-1]) + 10**6), (domains[1], 5),
             (domains[2], 1), (domains[3], 0), (domains[5], 0), (sibling, other), (sibling, 1000)]
    for domain, bad in cases:
        ids = np.concatenate([domain.elements[:3], [bad]]).astype(np.int64)
        with pytest.raises(ValueError, match="ids outside the explicit domain"):
            domain.positions(torch.from_numpy(ids) if library == "torch" else ids)
    empty = domains[5].positions(torch.zeros(0, dtype=torch.int64) if library == "torch" else np.zeros(0, np.int64))
    assert empty.shape == (0,) and empty.dtype in (np.int64, torch.int64)


def test_position_table_bound_must_match() -> None:
    with pytest.raises(ValueError, match="bound 9 differs from its position table's 10"):
        ExplicitDomain(np.array([1, 2], np.int64), bound=9, table=domains_from_owner(10, 2, lambda ids: ids % 2)[0].table)


@pytest.mark.parametrize("partitioner", [lambda: Contiguous(1000, 7, align=16), lambda: HierarchicalHash(1000, 7, seed=2),
                                         lambda: SingleHash(1000, 7, seed=2, r=40)])
def test_partitioners_split_alike(partitioner) -> None:  # type: ignore[no-untyped-def]
    chunk = sample_chunks("ends", 1, 1000, 0.3, 8, values=True)[0]
    a, b = partitioner(), partitioner()
    for one in (chunk, SparseChunk.empty(True)):
        for x, y in zip(a.split(one), b.split(on_torch([one])[0])):
            assert same_bits(x, y)
    assert a.stats == b.stats


@pytest.mark.parametrize("name", ["zen", "sparcml", "omnireduce", "agsparse-ring", "dense-allreduce", "spardl"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_wire_dtypes_on_torch(name: str, dtype: str) -> None:
    chunks = sample_chunks("random", 5, 900, 0.2, 9, values=True)
    reference = run_ranks(build_scheme(name, 5, 900, value_dtype=dtype), chunks)
    for transport in (None, InBytes()):
        out = run_ranks(build_scheme(name, 5, 900, value_dtype=dtype), on_torch(chunks), transport)
        assert out.log.messages == reference.log.messages
        assert all(same_bits(a, b) for a, b in zip(reference.results, out.results))


@pytest.fixture
def no_implicit_host_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch tensors refuse numpy's implicit conversion (np.asarray(tensor) and friends): only the
    explicit `.cpu()` / `.numpy()` of zensim.sparse.xp.host may bring data to the host."""
    def refuse(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a kernel converted a torch tensor to numpy implicitly")
    monkeypatch.setattr(torch.Tensor, "__array__", refuse)


@pytest.mark.parametrize("name", sorted(set(CATALOG) | {p.name for p in DISTINCT}))
def test_schemes_make_no_hidden_host_copy(name: str, no_implicit_host_copies: None) -> None:
    chunks = sample_chunks("random", 6, 701, 0.1, 1, values=True)
    profile = chunks if name == "zen-auto" else None
    run_ranks(build_scheme(name, 6, 701, profile=profile), on_torch(chunks), check=False)
