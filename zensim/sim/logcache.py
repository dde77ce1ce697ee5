"""The message-log cache: what the stage-program driver produced for one scheme on one cluster shape,
kept content-addressed so that a sweep over bandwidth, latency, sharing model, profile or fabric runs
each scheme's driver once.

A driver run depends only on the trace's content, the iteration, the cluster's shape (machines, GPUs
per machine, layout), whether values are carried, the scheme and its options, and the code (zensim's
version and a hash of its sources); the key is the SHA-256 of exactly those (`driver_key`). Entries are
pickles of `Driven` in a `zensim.sim.store.Store` ('logs' under the cache folder), written atomically,
so concurrent Dask workers computing the same entry never leave a torn one. Only load a cache folder
you trust (it holds pickles).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, Callable

from zensim.report.provenance import code_version
from zensim.run import MessageLog
from zensim.sim.store import Store, content_key


@dataclass
class Driven:
    """One scheme's driver run on one cluster shape: the cluster-wide message log and the figures that
    need the runs themselves (ZEN's push and pull imbalance, received-bytes imbalance, flushed values,
    the phase of each stage)."""

    log: MessageLog
    push: float | None
    pull: float | None
    recv: float | None
    flushed: int
    phases: list[str]


def driver_key(trace_sha256: str, iteration: int, machines: int, gpus_per_machine: int, layout: str, values: bool,
               scheme: str, options: dict[str, Any]) -> str:
    """The cache key of a driver run (everything it depends on, nothing else)."""
    return content_key({"trace": trace_sha256, "iteration": iteration, "machines": machines,
                        "gpus_per_machine": gpus_per_machine, "layout": layout, "values": values,
                        "scheme": scheme, "options": options, "code": code_version()})


class LogCache:
    """`get_or_run(key, run)`: the cached Driven of `key`, or `run()`'s, stored."""

    def __init__(self, root: Any) -> None:
        self.store = Store(root, "logs")
        self.hits = self.misses = 0

    def get_or_run(self, key: str, run: Callable[[], Driven]) -> tuple[Driven, bool]:
        """(the driver run, whether it came from the cache)."""
        data = self.store.get(key)
        if data is not None:
            try:
                driven = pickle.loads(data)
            except Exception:  # an entry this code cannot read: run again and replace it
                driven = None
            if isinstance(driven, Driven):
                self.hits += 1
                return driven, True
        driven = run()
        self.store.put(key, pickle.dumps(driven, protocol=pickle.HIGHEST_PROTOCOL))
        self.misses += 1
        return driven, False
