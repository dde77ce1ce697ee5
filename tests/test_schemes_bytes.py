"""Byte counts of the presets against independent formulas, and the serialized (emulator) path."""

from __future__ import annotations

import numpy as np
import pytest

from schemes_support import make_chunks, received
from zensim.run import InBytes, run_ranks
from zensim.schemes import build_scheme
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.hashpart import hash_domains
from zensim.sparse.partition import even_boundaries

NUMEL = 1000


def _setup(n, case="random", values=True, density=0.08, seed=1):
    return make_chunks(case, n, NUMEL, density, seed, values)


@pytest.mark.parametrize("name", ["agsparse-p2p", "agsparse-ring"])
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_agsparse_receives_eight_bytes_per_other_nonzero(name, n):
    """COO int32 + float32: rank i receives 8 x sum over j != i of nnz_j (p2p and ring all-gather)."""
    chunks = _setup(n)
    log = run_ranks(build_scheme(name, n, NUMEL), chunks).log
    nnz = np.array([c.nnz for c in chunks])
    assert np.array_equal(received(log, n), 8 * (nnz.sum() - nnz))


@pytest.mark.parametrize("n", [2, 4, 8])
def test_agsparse_hierarchy_adds_a_bundle_header_per_part(n):
    """Recursive-doubling all-gather: the same 8 x others' nnz plus 4 bytes per part when a
    message carries several tensors (stage k carries 2**k)."""
    chunks = _setup(n)
    log = run_ranks(build_scheme("agsparse-hier", n, NUMEL), chunks).log
    nnz = np.array([c.nnz for c in chunks])
    headers = sum(4 * (1 << k) for k in range(1, n.bit_length() - 1))
    assert np.array_equal(received(log, n), 8 * (nnz.sum() - nnz) + headers)


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_sparcml_receives_the_partner_block_union(n):
    """SSAR recursive doubling: at stage k rank r receives the union of the 2**k ranks of its
    partner's block, 8 bytes per element."""
    chunks = _setup(n)
    log = run_ranks(build_scheme("sparcml", n, NUMEL), chunks).log
    for m in log.messages:
        size = 1 << m.stage
        block = (m.src // size) * size
        union = np.unique(np.concatenate([chunks[q].indices for q in range(block, block + size)]))
        assert m.nbytes == 8 * len(union) and m.dst == m.src ^ size


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_dense_ring_allreduce_bytes(n):
    """Rank q receives every partition but q-1's in reduce-scatter and every one but q's in
    all-gather, 4 bytes per element: 4 (2 numel - |P_{q-1}| - |P_q|)."""
    chunks = _setup(n)
    log = run_ranks(build_scheme("dense-allreduce", n, NUMEL), chunks).log
    sizes = np.diff(even_boundaries(NUMEL, n))
    expect = [4 * (2 * NUMEL - sizes[(q - 1) % n] - sizes[q]) if n > 1 else 0 for q in range(n)]
    assert received(log, n).tolist() == expect


@pytest.mark.parametrize("n", [2, 3, 5, 16])
def test_zen_push_coo_pull_hash_bitmap_bytes(n):
    """Push: worker j receives 8 |I_i ∩ 𝕀_j| from each i != j. Pull: from each server i != j,
    ceil(|𝕀_i| / 8) bitmap bytes plus 4 bytes per aggregated element of 𝕀_i."""
    chunks = _setup(n)
    log = run_ranks(build_scheme("zen", n, NUMEL), chunks).log
    domains = [d.elements for d in hash_domains(NUMEL, n, 0)]
    union = np.unique(np.concatenate([c.indices for c in chunks]))
    push = {(m.src, m.dst): m.nbytes for m in log.messages if m.stage == 0}
    pull = {(m.src, m.dst): m.nbytes for m in log.messages if m.stage == 1}
    for i in range(n):
        for j in range(n):
            if i != j:
                assert push[(i, j)] == 8 * np.isin(chunks[i].indices, domains[j]).sum()
                assert pull[(i, j)] == -(-len(domains[i]) // 8) + 4 * np.isin(union, domains[i]).sum()
    index_bytes = sum(-(-len(domains[i]) // 8) for i in range(n))
    assert index_bytes <= NUMEL / 8 + n  # about |G| / 8 whatever the density


@pytest.mark.parametrize("n", [2, 3, 6])
def test_sparse_ps_and_omnireduce_bytes(n):
    """Contiguous servers: push 8 |I_i ∩ P_j|, pull 8 |U ∩ P_j| (COO); OmniReduce sends per
    occupied block of 256 a 4-byte id and the block's values."""
    chunks = _setup(n)
    bounds = even_boundaries(NUMEL, n)
    union = np.unique(np.concatenate([c.indices for c in chunks]))
    inside = lambda ids, j: ids[(ids >= bounds[j]) & (ids < bounds[j + 1])]
    log = run_ranks(build_scheme("sparse-ps", n, NUMEL), chunks).log
    for m in log.messages:
        ids = chunks[m.src].indices if m.stage == 0 else union
        assert m.nbytes == 8 * len(inside(ids, m.dst if m.stage == 0 else m.src))
    bounds = even_boundaries(NUMEL, n, 256)  # OmniReduce's aggregators own whole blocks of the tensor
    log = run_ranks(build_scheme("omnireduce", n, NUMEL), chunks).log
    for m in log.messages:
        j = m.dst if m.stage == 0 else m.src
        blocks = np.unique(inside(chunks[m.src].indices if m.stage == 0 else union, j) // 256)
        values = sum(min(256, NUMEL - 256 * b) for b in blocks)
        assert m.nbytes == 4 * len(blocks) + 4 * values


@pytest.mark.parametrize("n", [2, 5, 16])
def test_omnireduce_blocks_are_the_tensors_blocks(n):
    """An embedding table of rows of 256 elements (OmniReduce's block): whatever the number of
    aggregators, each looked-up row is exactly one block, so the push carries (4 + 4 x 256) bytes per
    row each worker looked up and the pull the same per row of the union, and every aggregator's
    part starts on a block."""
    rows, width = 997, 256
    rng = np.random.default_rng(n)
    looked = [np.unique(rng.integers(0, rows, 60)) for _ in range(4)]
    chunks = [SparseChunk((r[:, None] * width + np.arange(width)).ravel()) for r in looked]
    chunks = [chunks[i % len(chunks)] for i in range(n)]
    prog = build_scheme("omnireduce", n, rows * width)
    log = run_ranks(prog, chunks).log
    union = np.unique(np.concatenate([c.indices for c in chunks]) // width)
    push = sum(m.nbytes for m in log.messages if m.stage == 0)
    pull = sum(m.nbytes for m in log.messages if m.stage == 1)
    own = [np.unique(c.indices // width) for c in chunks]
    parts = even_boundaries(rows * width, n, 256)
    owner = lambda r: np.searchsorted(parts, r * width, side="right") - 1  # noqa: E731
    assert push == sum((4 + 4 * width) * np.count_nonzero(owner(o) != i) for i, o in enumerate(own))
    assert pull == sum((4 + 4 * width) * (n - 1) * np.count_nonzero(owner(union) == j) for j in range(n))
    assert all(d.lo % width == 0 for d in prog.partition.domains())


@pytest.mark.parametrize("n", [3, 5, 8])
def test_sparse_ps_broadcast_pull_uses_binomial_trees(n):
    """Broadcast pull: ceil(log2 n) rounds; each server's aggregate reaches each other rank once."""
    chunks = _setup(n)
    prog = build_scheme("sparse-ps-bcast", n, NUMEL)
    log = run_ranks(prog, chunks).log
    assert prog.num_stages == 1 + (n - 1).bit_length()
    plain = run_ranks(build_scheme("sparse-ps", n, NUMEL), chunks).log
    pull_bcast = sum(m.nbytes for m in log.messages if m.stage > 0)
    pull_plain = sum(m.nbytes for m in plain.messages if m.stage > 0)
    bundles = sum(4 * len(t) for s in prog._stages[1:] for t in _multi(s))
    assert pull_bcast == pull_plain + bundles


def _multi(stage):
    """Groups of transfers sharing (src, dst) when there are several (bundled messages)."""
    groups = {}
    for t in stage:
        groups.setdefault((t.src, t.dst), []).append(t)
    return [g for g in groups.values() if len(g) > 1]


@pytest.mark.parametrize("name", ["agsparse-hier", "zen", "omnireduce", "ring-oneshot-parallel-balanced",
                                  "hier-oneshot-parallel-imbalanced", "dense-allreduce", "sparse-ps-bcast"])
@pytest.mark.parametrize("values", [True, False])
def test_serialized_path_matches_in_memory(name, values):
    """Emulator path: every message serializes to exactly nbytes (the bytes transport asserts it),
    `decode` inverts it, the ranks fed the decoded messages end with the dense sum (checked by the
    driver), and the log equals the in-memory one message for message."""
    n = 5
    chunks = _setup(n, values=values)
    memory = run_ranks(build_scheme(name, n, NUMEL), chunks).log
    wire = run_ranks(build_scheme(name, n, NUMEL), chunks, InBytes()).log
    assert wire.messages == memory.messages and wire.work == memory.work
