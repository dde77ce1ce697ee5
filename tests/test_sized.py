"""Logs from counts (zensim.schemes.sized) are the driver's logs: every message's stage, ends, bytes
and format, every work record, and the statistics, on hard cases and several n."""

from __future__ import annotations

import numpy as np
import pytest

from schemes_support import make_chunks
from zensim.layout import place, prepare
from zensim.run import Tables, run_ranks
from zensim.schemes import build_scheme, needs_profile, scheme_names

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
    same_run(name, n, case)


def same_run(name: str, n: int, case: str) -> None:
    """The sized log and statistics are the driver's."""
    chunks = make_chunks(case, n, NUMEL, 0.05, 3, False)
    program = build_scheme(name, n, NUMEL)
    out = run_ranks(program, chunks, check=False)
    sized = program.sized_log(chunks)
    assert sized is not None
    log, ctx = sized
    same_log(log, out.log)
    assert set(ctx.stats) == set(out.context.stats)
    for key, value in out.context.stats.items():
        assert np.array_equal(ctx.stats[key], value), key


HIER = ["sparcml", "hier-incr-central", "hier-oneshot-central", "hier-incr-parallel-balanced", "hier-incr-parallel-imbalanced",
        "hier-oneshot-parallel-balanced", "hier-oneshot-parallel-imbalanced"]


@pytest.mark.parametrize("name", HIER)
@pytest.mark.parametrize("n", [2, 4, 8, 16])
@pytest.mark.parametrize("case", ["random", "one-empty", "all-overlap", "no-overlap", "ends"])
def test_sized_hierarchy_is_the_drivers(name, n, case):
    """Recursive halving/doubling from counts (n a power of two): the driver's log and statistics."""
    same_run(name, n, case)


@pytest.mark.parametrize("name", HIER)
def test_folded_hierarchy_is_not_sized(name):
    """n not a power of two folds ranks onto the others: the driver runs it."""
    assert build_scheme(name, 6, NUMEL).counted is None


@pytest.mark.parametrize("options", [{"value_dtype": "float16"}, {"pull": "bitmap"}, {"push": "dense", "pull": "coo"}])
def test_sized_log_follows_the_formats(options):
    """Other count-sized formats and value dtypes: still the driver's bytes."""
    chunks = make_chunks("random", 6, NUMEL, 0.1, 4, False)
    for name in ("ring-incr-parallel-imbalanced", "p2p-parallel-imbalanced", "ring-oneshot-parallel-imbalanced"):
        program = build_scheme(name, 6, NUMEL, **options)
        same_log(program.sized_log(chunks)[0], run_ranks(program, chunks, check=False).log)
    chunks = make_chunks("random", 8, NUMEL, 0.1, 4, False)
    for name in ("hier-incr-parallel-balanced", "hier-oneshot-parallel-imbalanced"):
        program = build_scheme(name, 8, NUMEL, **options)
        same_log(program.sized_log(chunks)[0], run_ranks(program, chunks, check=False).log)


@pytest.mark.parametrize("options", [{"value_dtype": "float16"}, {"push": "bitmap"}, {"push": "dense"}])
def test_sized_central_follows_the_formats(options):
    """Centralization on the ring (windows of ranks) and the hierarchy in other formats: the driver's bytes."""
    chunks = make_chunks("random", 8, NUMEL, 0.1, 4, False)
    for name in ("ring-incr-central", "hier-incr-central", "hier-oneshot-central"):
        program = build_scheme(name, 8, NUMEL, **options)
        same_log(program.sized_log(chunks)[0], run_ranks(program, chunks, check=False).log)


@pytest.mark.parametrize("name,options", [("omnireduce", {}), ("sparse-ps-bcast", {}),
                                          ("hier-incr-central", {"push": "blocks"}),
                                          ("gtopk", {}), ("spardl", {}), ("topkdsa", {}), ("zen", {"push": "blocks"})])
def test_other_programs_are_not_sized(name, options):
    """Plans, formats or aggregations outside the sized shapes run through the driver."""
    assert build_scheme(name, 8, NUMEL, **options).sized_log(make_chunks("random", 8, NUMEL, 0.05, 1, False)) is None


def test_values_and_single_rank_are_not_sized():
    """A run that carries values, or of one rank, is the driver's."""
    program = build_scheme("zen", 4, NUMEL)
    assert program.sized_log(make_chunks("random", 4, NUMEL, 0.05, 1, True)) is None
    assert build_scheme("zen", 1, NUMEL).counted is None


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


@pytest.mark.parametrize("n", [6, 8])
def test_every_sized_catalog_scheme_is_the_drivers(n):
    """Whatever scheme of the catalog is sized, its log is the driver's (formats and options as built)."""
    chunks = make_chunks("random", n, NUMEL, 0.05, 3, False)
    sized = [name for name in scheme_names()
             if not needs_profile(name) and build_scheme(name, n, NUMEL).sized_log(chunks) is not None]
    assert "zen" in sized
    for name in sized:
        same_run(name, n, "random")
