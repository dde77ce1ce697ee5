"""The per-run context the driver owns: the meter, memo tables, and what a run reports besides bytes.

Nothing here is module state: a run gets a fresh `RunContext`; derived tables that depend only on
their key (ZEN's hash domains, position tables, the expected dense sum) live in a `Tables` object
that a caller may hand to several runs (a `zensim simulate` over many schemes) to compute them once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from zensim.memo import Memo
from zensim.sparse.chunk import SparseChunk

PRE, COMM, POST = 0, 1, 2
STEPS = ("pre", "comm", "post")


class Tables:
    """Derived tables keyed by what they depend on, computed on first use and shared by every run
    given this object (`get(key, make)`)."""

    def __init__(self) -> None:
        self._tables: dict[Hashable, Any] = {}

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The table for `key`, made by `make()` the first time."""
        if key not in self._tables:
            self._tables[key] = make()
        return self._tables[key]


class Meter:
    """Local work per (stage, rank, phase, kind) in elements; with `timed`, also the wall and CPU
    (thread) seconds of every step: pre, comm and post of each (rank, stage)."""

    def __init__(self, n: int, num_stages: int, timed: bool = False) -> None:
        self.counts: dict[tuple[int, int, int, str], int] = {}
        self.where = (0, 0, PRE)
        self.timed = timed
        self.wall = np.zeros((n, num_stages, len(STEPS))) if timed else None
        self.cpu = np.zeros((n, num_stages, len(STEPS))) if timed else None
        self._t0 = self._c0 = 0.0
        self.finished_at: float | None = None  # time.monotonic() when the last stage ended (timed)

    def add(self, kind: str, elements: int) -> None:
        """Count `elements` (> 0) of work `kind` at the current (stage, rank, phase)."""
        if elements:
            key = (*self.where, kind)
            self.counts[key] = self.counts.get(key, 0) + int(elements)

    def step(self, stage: int, rank: int, step: int) -> None:
        """The following work belongs to (stage, rank, step); timed meters start the clocks."""
        self.where = (stage, rank, step and 1)  # work phase: pre (0), or post (comm has none)
        if self.timed:
            self._t0, self._c0 = time.monotonic(), time.thread_time()

    def done(self, stage: int, rank: int, step: int) -> None:
        """End of the step started by `step()` (timed meters record its seconds)."""
        if self.timed:
            self.wall[rank, stage, step] += time.monotonic() - self._t0
            self.cpu[rank, stage, step] += time.thread_time() - self._c0


class RunContext:
    """What one run owns besides the ranks' states: `meter`, `tables`, `values` (whether the run
    carries values or indices only), `like` (an array of the library and device the run's chunks
    are in: what a bytes transport's payloads are decoded into), a small memo of merges
    (`memo`), values a scheme discarded on the way (`discard`), values flushed to zero by a narrow
    wire dtype (`flushed`), and statistics programs report (`stats`)."""

    MEMO_SIZE = 8

    def __init__(self, meter: Meter, tables: Tables | None = None, values: bool = False,
                 like: Any = None) -> None:
        self.meter = meter
        self.values = values  # whether the run carries values (else indices only)
        self.like = like  # an array of the run's library and device, for what bytes decode to
        self.tables = tables if tables is not None else Tables()
        self.memo: Memo[Any] = Memo(self.MEMO_SIZE)
        self.discarded: dict[int, list[SparseChunk]] = {}
        self.flushed = 0
        self.stats: dict[str, Any] = {}

    def add(self, kind: str, elements: int) -> None:
        """Count local work (shortcut for `meter.add`)."""
        self.meter.add(kind, elements)

    def discard(self, rank: int, chunk: SparseChunk) -> None:
        """Rank `rank` dropped these values (a top-k re-selection on the way): kept for the caller,
        e.g. to return them to the worker's residual."""
        if chunk.nnz:
            self.discarded.setdefault(rank, []).append(chunk)

    def remember(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """An LRU memo of the last MEMO_SIZE results keyed by `key` (exact: keys name immutable inputs)."""
        return self.memo.get(key, make)
