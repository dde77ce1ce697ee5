"""Conformance suites: every member of every registry passes the checks its kind must pass.

Like scikit-learn's `check_estimator`, each suite is parametrized over the registry itself, so a
new scheme, wire format, partitioner or capture workload is checked by adding it, with no test to
write. (Sharing models have theirs in tests/test_net_models.py, sparsifiers in their package's.)
"""

from __future__ import annotations

import numpy as np
import pytest

from schemes_support import CASES, make_chunks
from zensim.errors import ConfigError
from zensim.run import InBytes, run_ranks, same_bits
from zensim.schemes import CATALOG, DISTINCT, build_scheme, scheme_options
from zensim.schemes.closed import measure
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.domain import ExplicitDomain, RangeDomain
from zensim.sparse.formats import FORMATS, make_format
from zensim.sparse.registry import PARTITIONERS, make_partitioner
from zensim.trace.capture.names import WORKLOADS

SCHEMES = list(CATALOG) + [p.name for p in DISTINCT]


def _build(name: str, n: int, numel: int, chunks=None, **options):
    """Build `name`, with every rank's chunks as its profile where it chooses from data."""
    return build_scheme(name, n, numel, profile=chunks if CATALOG.get(name) and CATALOG[name].needs_profile else None,
                        **options)


@pytest.mark.parametrize("name", SCHEMES)
@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_scheme_conformance(name, n):
    """Every scheme: runs for any n; lossless ones end with the dense sum in values and indices-only
    mode alike (unless they need values); the bytes transport logs exactly the in-memory bytes;
    replicas are bit-identical where the scheme says so; its closed form, if any, is a time."""
    numel = 701
    for case in ("random", "one-empty"):
        chunks = make_chunks(case, n, numel, 0.1, n, values=True)
        prog = _build(name, n, numel, chunks)
        memory = run_ranks(prog, chunks)  # checks the dense sum and the replicas when lossless
        wire = run_ranks(_build(name, n, numel, chunks), chunks, InBytes())
        assert memory.log.messages == wire.log.messages
        assert all(same_bits(a, b) for a, b in zip(memory.results, wire.results))
        if not prog.caps.needs_values:
            bare = [SparseChunk(c.indices) for c in chunks]
            assert run_ranks(_build(name, n, numel, chunks), bare).log.messages == memory.log.messages
        else:
            with pytest.raises(ConfigError, match="needs values"):
                run_ranks(prog, [SparseChunk(c.indices) for c in chunks])
    if prog.caps.closed_form is not None and n > 1:
        assert prog.caps.closed_form(measure(chunks, numel), 1e9) >= 0


@pytest.mark.parametrize("name", SCHEMES)
def test_scheme_options_come_from_its_parts(name):
    """Each declared option's default builds; an option no part declares is a one-line error."""
    declared = scheme_options(name)
    assert "value_dtype" in {o.name for o in declared}
    chunks = make_chunks("random", 3, 100, 0.1, 0, values=False)
    for option in declared:
        if option.default is not None:
            _build(name, 3, 100, chunks, **{option.name: option.default})
    with pytest.raises(ConfigError, match=f"scheme {name}: unknown option"):
        _build(name, 3, 100, chunks, no_such_option=1)


def _formats():
    for name, cls in FORMATS.items():
        for dtype in ("float32", "float16", "bfloat16"):
            yield make_format(name, dtype, 7 if cls.takes_block_size else 256)


@pytest.mark.parametrize("fmt", list(_formats()), ids=repr)
@pytest.mark.parametrize("case", CASES)
def test_format_conformance(fmt, case):
    """Every format: `encode` sizes exactly what `to_bytes` writes, `from_bytes` decodes what the
    receiver is promised (`received`), on range and explicit domains, with and without values;
    explicit zeros survive exactly when the format says it keeps them."""
    numel = 500
    chunk = make_chunks(case, 1, numel, 0.1, 4, values=True)[0]
    values = chunk.values.copy()
    values[::3] = 0.0
    chunk = SparseChunk(chunk.indices, values)
    elements = np.arange(numel, dtype=np.int64)
    for domain in (RangeDomain(0, numel), ExplicitDomain(elements, bound=numel)):
        if fmt.name == "hash_bitmap" and isinstance(domain, RangeDomain):
            continue
        for c in (chunk, SparseChunk(chunk.indices)):
            enc = fmt.encode(c, domain)
            buf = enc.to_bytes()
            assert len(buf) == enc.nbytes
            back = fmt.from_bytes(buf, domain, with_values=c.values is not None)
            want = fmt.received(c)[0]
            assert np.array_equal(back.chunk.indices, want.indices)
            if c.values is not None:
                assert np.array_equal(back.chunk.values, want.values)
                zeros = int((c.values == 0).sum())
                assert want.nnz == (c.nnz if fmt.keeps_zeros else c.nnz - zeros)


@pytest.mark.parametrize("name", list(PARTITIONERS))
@pytest.mark.parametrize("n", [1, 3, 8])
def test_partitioner_conformance(name, n):
    """Every partitioner: n sorted parts, each inside its domain, agreeing with `owner`; domains
    disjoint and covering [0, numel); nothing invented (lossy ones may drop, never add)."""
    numel = 1000
    part = make_partitioner(name, numel, n)
    chunk = make_chunks("ends", 1, numel, 0.2, n, values=True)[0]
    part.prepare(0, [chunk])
    parts = part.split(chunk)
    assert len(parts) == n
    seen = np.concatenate([p.indices for p in parts])
    assert np.isin(seen, chunk.indices).all() and len(np.unique(seen)) == len(seen)
    if name != "single_hash":
        assert len(seen) == chunk.nnz
    covered = np.zeros(numel, np.int64)
    for j, p in enumerate(parts):
        assert np.all(np.diff(p.indices) > 0)
        assert (part.owner(p.indices) == j).all()
        domain = part.domain(j)
        assert np.array_equal(domain.ids(domain.positions(p.indices)), p.indices)
        covered[domain.ids(np.arange(domain.size))] += 1
    assert (covered == 1).all()


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload_conformance(name):
    """Every capture workload builds through the registry, gives deterministic per-(step, worker)
    batches, a finite loss, and records parameters the model has."""
    import torch

    from zensim.trace.capture.corpus import load_corpus
    from zensim.trace.capture.workloads import make_workload, workload_class

    cls = workload_class(name)
    assert cls.name == name
    try:
        workload = make_workload(name, 2, 0)
    except ConfigError as exc:  # a language model without its corpus installed
        load_corpus(None)
        raise exc
    params = dict(workload.model.named_parameters())
    assert workload.recorded() and set(workload.recorded()) <= set(params)
    a, b = workload.batch(3, 1, 4), workload.batch(3, 1, 4)
    flat = lambda x: [t for t in (x if isinstance(x, (tuple, list)) else [x])]  # noqa: E731
    assert all(torch.equal(x, y) for x, y in zip(flat(a), flat(b)))
    assert torch.isfinite(workload.loss(workload.model, a))
