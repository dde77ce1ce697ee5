"""Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one process per scheme, one track per rank.

Each rank's stages are complete events (`ph: "X"`, microseconds) named `stage s`, with the stage's
bytes sent and received in `args`; thread/process names are metadata events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from zensim.net.replay import Timing
from zensim.run.log import MessageLog

US = 1e6


def timeline_events(pid: int, label: str, timing: Timing, log: MessageLog) -> list[dict[str, Any]]:
    """Trace events of one run: a named process `pid`, one named thread per rank, one span per stage."""
    cols = log.arrays()
    slot = log.num_stages
    sent = np.bincount(cols["src"] * slot + cols["stage"], weights=cols["nbytes"], minlength=log.n * slot)
    recv = np.bincount(cols["dst"] * slot + cols["stage"], weights=cols["nbytes"], minlength=log.n * slot)
    events: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": label}}]
    for r in range(log.n):
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": r, "args": {"name": f"rank {r}"}})
        for s in range(log.num_stages):
            start, end = timing.stage_start[r, s], timing.stage_end[r, s]
            events.append({"name": f"stage {s}", "ph": "X", "pid": pid, "tid": r, "ts": start * US,
                           "dur": (end - start) * US,
                           "args": {"sent_bytes": int(sent[r * slot + s]), "received_bytes": int(recv[r * slot + s])}})
    return events


def chrome_trace(runs: Sequence[tuple[str, Timing, MessageLog]]) -> dict[str, Any]:
    """The trace-event document of several runs (label, timing, log), one process each."""
    events = [e for pid, (label, timing, log) in enumerate(runs) for e in timeline_events(pid, label, timing, log)]
    return {"traceEvents": events, "displayTimeUnit": "ms"}
