"""One input type for traces in the Python API: every public function that reads a trace takes a path
or an open Trace, gives the same result for both, and leaves an open Trace open."""

from __future__ import annotations

from pathlib import Path

import pytest

from zensim.net.topology import ClusterSpec
from zensim.sim.run import simulate
from zensim.trace import Trace, trace_path
from zensim.trace.stats import trace_stats
from zensim.trace.synth import SynthParams, synthesize
from zensim.train.shipped import device_layers

ROOT = Path(__file__).resolve().parents[1]
VOLATILE = ("wall_s", "driver_s", "provenance")


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    synthesize(path, 4, [("w", 2000)], SynthParams(0.05, 0.3, 2.0), iterations=1, seed=1)
    return path


def _stable(records):
    return [{k: v for k, v in r.to_dict().items() if k not in VOLATILE} for r in records]


def test_path_or_open_trace_everywhere(trace):
    with Trace.open(trace) as t:
        assert trace_path(t) == str(trace) and trace_path(trace) == str(trace)
        assert trace_stats(t) == trace_stats(trace)
        cluster = ClusterSpec(4, 1, 1e9)
        assert _stable(simulate(t, ["zen", "sparcml"], cluster)) == _stable(simulate(trace, ["zen", "sparcml"], cluster))
        shipped = ROOT / "traces" / "deepfm-128w.zt"
        with Trace.open(shipped) as s:
            assert device_layers(s, "v100") == device_layers(shipped, "v100")
            assert s.nnz(0, 0) >= 0  # still open
        assert t.nnz(0, 0) >= 0
