"""Shared helpers of the tests/test_schemes_*.py files: random traces with the hard cases."""

from __future__ import annotations

import numpy as np

# the hard cases every scheme runs on, and the chunks of one, live with the conformance checks
from zensim.sparse.conformance import CASES  # noqa: F401
from zensim.sparse.conformance import sample_chunks as make_chunks  # noqa: F401


def received(log, n: int, stages: range | None = None) -> np.ndarray:
    """Bytes each rank received (optionally only at the given stages)."""
    out = np.zeros(n, np.int64)
    for m in log.messages:
        if stages is None or m.stage in stages:
            out[m.dst] += m.nbytes
    return out
