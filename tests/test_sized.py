"""Logs from counts (zensim.schemes.sized) are the driver's logs: every message's stage, ends, bytes
and format, every work record, and the statistics, on hard cases and several n."""

from __future__ import annotations

import numpy as np
import pytest

from schemes_support import make_chunks
from zensim.run import Tables, run_ranks
from zensim.schemes import build_scheme
from zensim.schemes.sized import shape_of, sized_log
from zensim.sim.layout import place, prepare

NUMEL = 3000
SIZED = ["dense-allreduce", "agsparse-ring", "agsparse-p2p", "zen", "zen-coo", "sparse-ps",
         "ring-incr-parallel-balanced", "ring-incr-parallel-imbalanced", "p2p-parallel-balanced",
         "ring-oneshot-parallel-balanced", "ring-oneshot-parallel-imbalanced", "ring-incr-central"]
FIELDS = ("stage", "src", "dst", "nbytes", "fmt", "w_stage", "w_rank", "w_phase", "w_kind", "w_elements")


def same_log(a, b) -> None:
    """Every column and name table equal."""
    for field in FIELDS:
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert (a.fmt_names, a.kind_names, a.n, a.num_stages) == (b.fmt_names, b.kind_names, b.n, b.num_stages)


@pytest.mark.parametrize("name", SIZED)
@pytest.mark.parametrize("n", [2, 3, 5, 8])
@pytest.mark.parametrize("case", ["random", "one-empty", "all-overlap", "no-overlap", "ends"])
def test_sized_log_is_the_drivers(name, n, case):
    """The sized log equals the driver's, column by column, with the same split and held counts."""
    chunks = make_chunks(case, n, NUMEL, 0.05, 3, False)
    program = build_scheme(name, n, NUMEL)
    out = run_ranks(program, chunks, check=False)
    sized = sized_log(program, chunks)
    assert sized is not None
    log, ctx = sized
    same_log(log, out.log)
    assert set(ctx.stats) == set(out.context.stats)
    for key, value in out.context.stats.items():
        assert np.array_equal(ctx.stats[key], value), key


@pytest.mark.parametrize("options", [{"value_dtype": "float16"}, {"pull": "bitmap"}, {"push": "dense", "pull": "coo"}])
def test_sized_log_follows_the_formats(options):
    """Other count-sized formats and value dtypes: still the driver's bytes."""
    chunks = make_chunks("random", 6, NUMEL, 0.1, 4, False)
    for name in ("ring-incr-parallel-imbalanced", "p2p-parallel-imbalanced", "ring-oneshot-parallel-imbalanced"):
        program = build_scheme(name, 6, NUMEL, **options)
        same_log(sized_log(program, chunks)[0], run_ranks(program, chunks, check=False).log)


@pytest.mark.parametrize("options", [{"value_dtype": "float16"}, {"push": "bitmap"}, {"push": "dense"}])
def test_sized_central_ring_follows_the_formats(options):
    """Incremental Centralization on the ring (windows of ranks) in other formats: the driver's bytes."""
    chunks = make_chunks("random", 7, NUMEL, 0.1, 4, False)
    program = build_scheme("ring-incr-central", 7, NUMEL, **options)
    same_log(sized_log(program, chunks)[0], run_ranks(program, chunks, check=False).log)


@pytest.mark.parametrize("name,options", [("sparcml", {}), ("omnireduce", {}), ("sparse-ps-bcast", {}),
                                          ("hier-incr-central", {}), ("hier-oneshot-parallel-balanced", {}),
                                          ("gtopk", {}), ("spardl", {}), ("topkdsa", {}), ("zen", {"push": "blocks"})])
def test_other_programs_are_not_sized(name, options):
    """Plans, formats or aggregations outside the sized shapes run through the driver."""
    assert shape_of(build_scheme(name, 8, NUMEL, **options)) is None


def test_values_and_single_rank_are_not_sized():
    """A run that carries values, or of one rank, is the driver's."""
    program = build_scheme("zen", 4, NUMEL)
    assert sized_log(program, make_chunks("random", 4, NUMEL, 0.05, 1, True)) is None
    assert shape_of(build_scheme("zen", 1, NUMEL)) is None


@pytest.mark.parametrize("name", ["zen", "dense-allreduce", "agsparse-ring"])
def test_placed_log_in_zens_layout_is_the_drivers(name):
    """In ZEN's layout (4 machines x 3 GPUs) the unchecked placement (sized) and the checked one
    (the driver, aggregates checked against the dense sum) give the same cluster log."""
    chunks = make_chunks("random", 12, NUMEL, 0.05, 5, False)
    prep = prepare(chunks, NUMEL, 4, 3, "zen")
    tables = Tables()
    build = lambda n, size, part: build_scheme(name, n, size, tables=tables)  # noqa: E731
    fast, checked = place(prep, build, tables), place(prep, build, tables, check=True)
    assert all(run.results == [] for run in fast.runs) and all(run.results for run in checked.runs)
    same_log(fast.log, checked.log)
