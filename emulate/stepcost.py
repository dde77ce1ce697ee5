"""Local work measured, not modelled: run a scheme's ranks in one process and time every step.

The emulator's rank program (emulate.driver.run_program) does, per stage, a `pre` step (stage 0's
`start`, `sends`, serialization to bytes) and a `post` step (decoding the received bytes, `receive`).
`timed_log` runs exactly those steps for every rank, one after the other in this process (the same
loop, zensim.run.run_ranks, over the bytes transport instead of torch.distributed), and records each step's CPU time (the thread's, so nothing else
running on the host counts). The result is the scheme's MessageLog with `measured` filled in: the
simulator can then replay the same messages with the local work this implementation really costs on
this host, one rank alone on a processor, and share the host's processors among the ranks itself
(profile `host_cores`, scaled by `cpu_slowdown`). The median of `repeats` runs is kept per step.

Each rank's pieces come from bytes, as in the emulator, so no step reuses another rank's results; one-
time set-up shared by all ranks (a hash partition's domains and position table) is done by a first,
untimed run, as the emulator's warm-up run does it. The garbage collector is paused while timing
(zensim.run.run_ranks does that).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zensim.run import InBytes, MessageLog, Tables, run_ranks
from zensim.run.context import POST, PRE
from zensim.sparse.chunk import SparseChunk


def timed_log(prog, chunks: Sequence[SparseChunk], repeats: int = 3, check: bool = True) -> MessageLog:
    """The MessageLog of `prog` on `chunks` with `measured` = median CPU seconds per (rank, stage, phase)
    over `repeats` timed runs (after one untimed run) of zensim.run's loop over the bytes transport;
    lossless results checked against the dense sum."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    tables = Tables()
    runs = [run_ranks(prog, chunks, InBytes(), check=check and i == repeats, timed=True, tables=tables)
            for i in range(repeats + 1)][1:]
    log = runs[-1].log
    log.measured = np.median(np.stack([run.context.meter.cpu[:, :, [PRE, POST]] for run in runs]), axis=0)
    return log
