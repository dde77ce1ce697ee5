"""Measured local work: the in-process run of the emulator's steps logs what the in-memory driver logs."""

import numpy as np
import pytest

from emulate.stepcost import timed_log
from zensim.run import AggregationMismatch, run_ranks
from zensim.schemes import build_scheme
from zensim.sparse.chunk import SparseChunk


def _chunks(n, numel, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        idx = np.unique(rng.integers(0, numel, numel // 20))
        out.append(SparseChunk(idx, rng.standard_normal(len(idx)).astype(np.float32)))
    return out


@pytest.mark.parametrize("name", ["zen", "sparcml", "agsparse-ring", "omnireduce", "ring-oneshot-parallel-balanced"])
@pytest.mark.parametrize("n", [3, 4])
def test_timed_log_has_the_drivers_messages_and_work(name, n):
    numel = 20_000
    chunks = _chunks(n, numel)
    want = run_ranks(build_scheme(name, n, numel), chunks).log
    got = timed_log(build_scheme(name, n, numel), chunks, repeats=2)
    key = lambda m: (m.stage, m.src, m.dst)  # noqa: E731
    assert sorted(got.messages, key=key) == sorted(want.messages, key=key)  # bytes as serialized = size path
    assert sorted(got.work, key=lambda w: (w.stage, w.rank, w.phase, w.kind)) == \
        sorted(want.work, key=lambda w: (w.stage, w.rank, w.phase, w.kind))
    assert got.measured.shape == (n, got.num_stages, 2)
    assert (got.measured >= 0).all() and got.measured[:, 0, 0].sum() > 0  # stage 0's pre did work


def test_timed_log_checks_the_result():
    class Broken:
        """A program whose every rank ends with nothing: its result cannot be the dense sum."""

        def __init__(self, prog):
            self.prog = prog

        def __getattr__(self, attr):
            return getattr(self.prog, attr)

        def result(self, rank, state, ctx):
            return SparseChunk.empty(True)

    chunks = _chunks(3, 5_000)
    with pytest.raises(AggregationMismatch):
        timed_log(Broken(build_scheme("zen", 3, 5_000)), chunks, repeats=1)
    with pytest.raises(ValueError, match="repeats"):
        timed_log(build_scheme("zen", 3, 5_000), chunks, repeats=0)
