"""Gradient sources of a replay: a dense trace read as it is, synthetic gradients that are
deterministic, different per worker, correlated through their shared part, and cheap to make."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zensim.errors import ConfigError, TraceError
from zensim.trace import TensorSpec, Trace, TraceWriter
from zensim.trace.gradients import SyntheticGradients, TraceGradients

DIGITS = Path(__file__).resolve().parent.parent / "traces" / "digits-cnn-16w.zt"


def test_trace_gradients_are_the_dense_chunks() -> None:
    trace = Trace.open(DIGITS)
    source = TraceGradients(trace)
    assert (source.workers, source.iterations, source.numel) == (16, 50, 3658)
    buf = np.empty(source.numel, np.float32)
    assert source.gradient(7, 3, buf) is buf
    np.testing.assert_array_equal(buf, trace.flat_dense(7, 3))
    assert source.describe()["dense"] is True


def test_indices_only_traces_are_refused(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "i.zt", [TensorSpec("a", 10)], workers=1, iterations=1) as w:
        w.write(0, 0, "a", np.array([1]))
    with pytest.raises(TraceError, match="indices only"):
        TraceGradients(Trace.open(tmp_path / "i.zt"))


def test_synthetic_gradients() -> None:
    a, b = SyntheticGradients(4, 10, 50_000, seed=3), SyntheticGradients(4, 10, 50_000, seed=3)
    np.testing.assert_array_equal(a.gradient(2, 1), b.gradient(2, 1))
    grads = [a.gradient(5, w) for w in range(4)]
    assert all(g.dtype == np.float32 and g.shape == (50_000,) for g in grads)
    assert not np.array_equal(grads[0], grads[1])
    shared = np.corrcoef(grads[0], grads[1])[0, 1]
    assert 0.2 < shared < 0.9  # the common part correlates workers, the noise keeps them apart
    head, tail = np.abs(grads[0][:3000]).mean(), np.abs(grads[0][-3000:]).mean()
    assert head > 5 * tail  # magnitudes fall along the tensor
    with pytest.raises(ConfigError, match="iteration 10 worker 0 out of range"):
        a.gradient(10, 0)
    with pytest.raises(ConfigError, match="numel must be a positive integer"):
        SyntheticGradients(2, 2, 0)
