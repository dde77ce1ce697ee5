"""Partitioners: parts are a partition of the input inside their domains, ZEN hashing never loses
an id and is identical across ranks, the single hash reports exactly what it loses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zensim.errors import ConfigError
from zensim.sparse import (
    PARTITIONERS, Contiguous, HierarchicalHash, SingleHash, SparseChunk, Thresholds, h0_parts,
    hash_domains, make_format, make_partitioner,
)
from zensim.sparse.hashing import hash_key, hash_to_range


def _chunk(ids, with_values: bool = True) -> SparseChunk:
    ids = np.unique(np.asarray(ids, np.int64))
    return SparseChunk(ids, (ids % 97 + 1).astype(np.float32) if with_values else None)


def _assert_partition(p, chunk: SparseChunk, parts: list[SparseChunk]) -> None:
    """Parts are disjoint, sorted, cover the chunk, carry their values, lie in their domains."""
    assert len(parts) == p.n
    joined = np.concatenate([q.indices for q in parts])
    assert np.array_equal(np.sort(joined), chunk.indices)
    for j, q in enumerate(parts):
        assert np.all(np.diff(q.indices) > 0)
        assert np.all(p.owner(q.indices) == j)
        p.domain(j).positions(q.indices)  # raises if outside the domain
        if chunk.values is not None:
            assert np.array_equal(q.values, (q.indices % 97 + 1).astype(np.float32))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.sampled_from([1, 2, 3, 5, 16]), st.data())
def test_lossless_partitioners_partition_any_input(numel: int, n: int, data) -> None:
    ids = data.draw(st.sets(st.integers(0, numel - 1)))
    chunk = _chunk(sorted(ids) + [0, numel - 1])
    for name in ("contiguous", "thresholds", "zen"):
        p = make_partitioner(name, numel, n)
        p.prepare(0, [chunk])
        _assert_partition(p, chunk, p.split(chunk))
        domains = p.domains()
        all_ids = np.sort(np.concatenate([d.ids(np.arange(d.size)) for d in domains]))
        assert np.array_equal(all_ids, np.arange(numel))  # domains partition [0, numel)


def test_contiguous_even_split_remainder_spread() -> None:
    for numel, n in [(10, 3), (3, 5), (0, 4), (1000, 16), (1001, 7)]:
        sizes = [d.size for d in Contiguous(numel, n).domains()]
        assert sum(sizes) == numel and max(sizes) - min(sizes) <= 1
        assert sizes == sorted(sizes, reverse=True)


def test_thresholds_equal_shares_and_period() -> None:
    rng = np.random.default_rng(0)
    numel, n = 100_000, 7
    skewed = [_chunk((numel * rng.random(3000) ** 4).astype(np.int64)) for _ in range(4)]
    p = Thresholds(numel, n, period=3)
    assert np.array_equal(p.boundaries, Contiguous(numel, n).boundaries)
    p.prepare(0, skewed)
    union = np.unique(np.concatenate([c.indices for c in skewed]))
    counts = np.bincount(p.owner(union), minlength=n)
    assert counts.max() - counts.min() <= 1
    first = p.boundaries.copy()
    shifted = [_chunk(numel - 1 - c.indices) for c in skewed]
    p.prepare(1, shifted)
    p.prepare(2, shifted)
    assert np.array_equal(p.boundaries, first)  # stale until the period has passed
    p.prepare(3, shifted)
    assert not np.array_equal(p.boundaries, first)
    assert p.recomputed_at == 3


def test_zen_every_index_lands_in_its_h0_part_and_domain() -> None:
    numel, n = 5000, 5
    chunk = _chunk(np.arange(0, numel, 3).tolist() + [numel - 1])
    p = HierarchicalHash(numel, n, seed=11)
    parts = p.split(chunk)
    key = hash_key(11, 0)
    for j, q in enumerate(parts):
        assert np.all(hash_to_range(q.indices, key, n) == j)
    assert 0 in parts[int(h0_parts(np.array([0]), n, 11)[0])].indices
    for j, dom in enumerate(hash_domains(numel, n, 11)):
        ids = np.arange(numel)[h0_parts(np.arange(numel), n, 11) == j]
        assert np.array_equal(dom.elements, ids)


def test_zen_identical_across_ranks_and_seeds_matter() -> None:
    chunk = _chunk(np.random.default_rng(1).choice(50_000, 4000, replace=False))
    a, b = HierarchicalHash(50_000, 16, seed=3), HierarchicalHash(50_000, 16, seed=3)
    pa, pb = a.split(chunk), b.split(chunk)
    assert all(np.array_equal(x.indices, y.indices) for x, y in zip(pa, pb))
    assert a.stats == b.stats
    ta, tb = a.hash_table(chunk.indices), b.hash_table(chunk.indices)
    assert all(np.array_equal(x, y) for x, y in zip(ta.slots, tb.slots))
    other = HierarchicalHash(50_000, 16, seed=4).split(chunk)
    assert any(not np.array_equal(x.indices, y.indices) for x, y in zip(pa, other))


@pytest.mark.parametrize("options", [
    {}, {"k": 0}, {"k": 1, "load": 0.3}, {"r1": 1, "r2": 0}, {"r1": 2, "r2": 3, "scope": "per_partition"},
    {"load": 0.5, "scope": "per_partition"},
])
def test_zen_memory_holds_every_id_even_when_it_overflows(options: dict) -> None:
    numel, n = 20_000, 3
    chunk = _chunk(np.random.default_rng(2).choice(numel, 3000, replace=False).tolist() + [0])
    p = HierarchicalHash(numel, n, seed=5, **options)
    parts = p.split(chunk)
    _assert_partition(p, chunk, parts)
    table = p.hash_table(chunk.indices)
    assert all(np.array_equal(x, q.indices) for x, q in zip(table.extract(), parts))
    r1, r2 = p.memory(chunk.nnz)
    for row, serial in zip(table.slots, table.serial):
        assert len(row) == r1 and len(serial) <= r2
    s = p.stats
    assert s.elements == chunk.nnz and s.lost == 0
    assert s.elements >= s.collided >= s.serial >= s.overflow >= 0
    assert s.serial == sum(len(x) + len(y) for x, y in zip(table.serial, table.spill))
    if options.get("r1") == 1:
        assert s.overflow == chunk.nnz - n  # one parallel slot per partition, no serial memory
    if options.get("k") == 0:
        assert s.serial == chunk.nnz


def test_zen_collisions_fall_with_memory() -> None:
    chunk = _chunk(np.random.default_rng(3).choice(10**6, 50_000, replace=False))
    rates = []
    for load in (1.0, 2.0, 8.0):
        p = HierarchicalHash(10**6, 8, load=load)
        p.split(chunk)
        rates.append((p.stats.rate("collided"), p.stats.rate("serial")))
    assert rates[0][0] > rates[1][0] > rates[2][0]
    assert rates[0][1] > rates[1][1] > rates[2][1]


def test_single_hash_reports_exactly_what_it_loses() -> None:
    numel, n = 10_000, 4
    chunk = _chunk(np.random.default_rng(4).choice(numel, 1000, replace=False))
    p = SingleHash(numel, n, seed=2)
    parts = p.split(chunk)
    slots = p.slot(chunk.indices)
    assert p.stats.lost == chunk.nnz - len(np.unique(slots)) > 0
    kept = np.concatenate([q.indices for q in parts])
    assert len(kept) + p.stats.lost == chunk.nnz
    assert set(kept) <= set(chunk.indices)
    for j, q in enumerate(parts):
        assert np.all(p.owner(q.indices) == j)
        p.domain(j).positions(q.indices)


def test_hash_bitmap_over_all_domains_is_about_numel_over_8_at_any_density() -> None:
    numel, n = 100_003, 16
    rng = np.random.default_rng(5)
    p = HierarchicalHash(numel, n, seed=9)
    domains = p.domains()
    index_bytes = sum(-(-d.size // 8) for d in domains)
    assert numel / 8 <= index_bytes < numel / 8 + n
    fmt = make_format("hash_bitmap")
    for density in (0.001, 0.1, 0.95):
        chunk = _chunk(rng.choice(numel, int(density * numel), replace=False))
        parts = p.split(chunk)
        encs = [fmt.encode(q, p.domain(j)) for j, q in enumerate(parts)]
        assert sum(e.nbytes for e in encs) == index_bytes + 4 * chunk.nnz
        back = [fmt.from_bytes(e.to_bytes(), p.domain(j)).chunk for j, e in enumerate(encs)]
        assert np.array_equal(np.sort(np.concatenate([b.indices for b in back])), chunk.indices)


def test_bad_partitioner_arguments() -> None:
    with pytest.raises(ConfigError, match="partitioner 'ring'"):
        make_partitioner("ring", 10, 2)
    with pytest.raises(ConfigError, match="n = 0"):
        make_partitioner("contiguous", 10, 0)
    with pytest.raises(ConfigError, match="scope"):
        make_partitioner("zen", 10, 2, scope="global")
    with pytest.raises(ConfigError, match="period"):
        make_partitioner("thresholds", 10, 2, period=0)
    for load in (0.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="finite load > 0"):
            make_partitioner("zen", 10, 2, load=load)
    with pytest.raises(ConfigError, match="'zen'"):
        make_partitioner("zen", 10, 2, colour="red")
    assert set(PARTITIONERS) == {"contiguous", "thresholds", "single_hash", "zen"}


def test_zen_without_memory_model_gives_the_same_parts() -> None:
    chunk = _chunk(np.random.default_rng(6).choice(30_000, 2000, replace=False))
    full, bare = HierarchicalHash(30_000, 5, seed=1), HierarchicalHash(30_000, 5, seed=1, model_memory=False)
    assert all(np.array_equal(a.indices, b.indices) and np.array_equal(a.values, b.values)
               for a, b in zip(full.split(chunk), bare.split(chunk)))
    assert bare.stats.elements == chunk.nnz and bare.stats.collided == 0 < full.stats.collided
