"""One overflow policy for every scheme: inputs whose magnitudes at an element add up beyond the wire
dtype's largest value are refused (ValueRangeError naming the element), whatever order the scheme
sums in; inputs just inside the range run through every scheme."""

from __future__ import annotations

import numpy as np
import pytest

from zensim.errors import ConfigError, ValueRangeError
from zensim.run import run_ranks
from zensim.run.check import check_sum_range
from zensim.schemes import build_scheme
from zensim.schemes.catalog import CATALOG
from zensim.schemes.registry import lookup
from zensim.schemes.space import DISTINCT
from zensim.sparse.chunk import SparseChunk

NAMES = list(CATALOG) + [p.name for p in DISTINCT]
NUMEL = 8


def inputs(big: float) -> list[SparseChunk]:
    """4 ranks: big, big, -big, 0 at element 1 (their sum is big: fits, but big + big does not), and
    ordinary values at elements 0 and 5."""
    out = []
    for r, v in enumerate([big, big, -big, 0.0]):
        ids = np.array([0, 1, 5] if v else [0, 5], np.int64)
        vals = np.array([r + 1.0, v, 0.5] if v else [r + 1.0, 0.5], np.float32)
        out.append(SparseChunk(ids, vals))
    return out


def build(name: str, chunks: list[SparseChunk], dtype: str):  # type: ignore[no-untyped-def]
    """`name` for 4 ranks in `dtype` (with the chunks as its profile where it chooses from data)."""
    return build_scheme(name, 4, NUMEL, profile=chunks if lookup(name).needs_profile else None, value_dtype=dtype)


@pytest.mark.parametrize("library", ["numpy", "torch"])
@pytest.mark.parametrize("dtype,big", [("float32", 3e38), ("float16", 4e4)])
@pytest.mark.parametrize("name", NAMES)
def test_every_scheme_refuses_a_sum_some_order_overflows(name: str, dtype: str, big: float, library: str) -> None:
    """3e38 + 3e38 - 3e38: a ring or a tree overflows on the way, a one-shot sum in float64 would
    not; every scheme refuses, naming itself and element 1, on numpy and on torch alike."""
    chunks = inputs(big)
    prog = build(name, chunks, dtype)
    data = chunks if library == "numpy" else [c.to_torch() for c in chunks]
    with pytest.raises(ValueRangeError, match=rf"^{prog.name}: a sum of values overflows {dtype} at element 1: "
                                              r"their magnitudes add up to"):
        run_ranks(prog, data, check=False)


@pytest.mark.parametrize("name", NAMES)
def test_every_scheme_runs_magnitudes_that_fit(name: str) -> None:
    """1e38 + 1e38 - 1e38 (magnitudes 3e38, inside float32): every scheme runs; the lossless ones end
    with the dense sum (the driver checks it)."""
    chunks = inputs(1e38)
    prog = build(name, chunks, "float32")
    run_ranks(prog, chunks)


def test_the_bound_is_per_element_and_names_the_lowest() -> None:
    """Large values at different elements do not add up; the lowest element beyond the range is named."""
    apart = [SparseChunk(np.array([r]), np.array([3e38], np.float32)) for r in range(4)]
    check_sum_range(apart, NUMEL, "float32")
    over = [SparseChunk(np.array([2, 6]), np.array([2e38, 2e38], np.float32))] * 2
    with pytest.raises(ValueRangeError, match="at element 2: their magnitudes add up to 4e\\+38"):
        check_sum_range(over, NUMEL, "float32")


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_inputs_are_checked_alike_on_every_library(library: str) -> None:
    """The driver's checks read each chunk's ends and peaks in one transfer from its device: the same
    refusals on torch as on numpy (ids outside [0, numel), magnitudes adding up beyond the range); a
    single chunk's magnitudes add up to nothing beyond its own values (left to the wire format)."""
    torch = pytest.importorskip("torch")
    arr = (lambda x: torch.as_tensor(x)) if library == "torch" else np.asarray
    prog = build_scheme("sparcml", 2, NUMEL)
    outside = [SparseChunk(arr(np.array([1, NUMEL], np.int64)), arr(np.ones(2, np.float32)))] * 2
    with pytest.raises(ConfigError, match=r"sparcml: rank 0's chunk has ids outside \[0, 8\)"):
        run_ranks(prog, outside)
    negative = [SparseChunk(arr(np.array([-1, 3], np.int64)), arr(np.ones(2, np.float32)))] * 2
    with pytest.raises(ConfigError, match="ids outside"):
        run_ranks(prog, negative)
    over = [SparseChunk(arr(np.array([2, 6], np.int64)), arr(np.array([-2e38, 2e38], np.float32)))] * 2
    with pytest.raises(ValueRangeError, match="at element 2: their magnitudes add up to 4e\\+38"):
        check_sum_range(over, NUMEL, "float32")
    check_sum_range(over[:1], NUMEL, "float32")
