"""Local work measured, not modelled: run a scheme's ranks in one process and time every step.

The emulator's rank program (emulate.driver.run_program) does, per stage, a `pre` step (stage 0's
`start`, `sends`, serialization to bytes) and a `post` step (decoding the received bytes, `receive`).
`timed_log` runs exactly those steps for every rank, one after the other in this process, passing
the bytes between ranks in memory, and records each step's CPU time (the thread's, so nothing else
running on the host counts). The result is the scheme's MessageLog with `measured` filled in: the
simulator can then replay the same messages with the local work this implementation really costs on
this host, one rank alone on a processor, and share the host's processors among the ranks itself
(profile `host_cores`, scaled by `cpu_slowdown`). The median of `repeats` runs is kept per step.

Each rank's pieces come from bytes, as in the emulator, so no step reuses another rank's results; one-
time set-up shared by all ranks (a hash partition's domains and position table) is done by a first,
untimed run, as the emulator's warm-up run does it. The garbage collector is paused while timing.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence

import numpy as np

from zensim.schemes.driver import WorkMeter, check_results
from zensim.schemes.log import PHASES, Message, MessageLog
from zensim.sparse.chunk import SparseChunk


def _run_once(prog, chunks: Sequence[SparseChunk]) -> tuple[np.ndarray, MessageLog, list[SparseChunk]]:
    """One run of every rank's steps: (CPU seconds per (rank, stage, phase), the log, every rank's result)."""
    n, stages = prog.n, prog.num_stages
    cpu = np.zeros((n, stages, len(PHASES)))
    meter, log = WorkMeter(), MessageLog(n, stages)
    states: list = [None] * n
    for s in range(stages):
        outboxes = []
        for r in range(n):
            meter.at = (s, r, "pre")
            t0 = time.thread_time()
            if s == 0:
                states[r] = prog.start(r, chunks[r], meter)
            outbox = {dst: msg.to_bytes() for dst, msg in prog.sends(s, r, states[r], meter).items()}
            cpu[r, s, 0] = time.thread_time() - t0
            outboxes.append(outbox)
            log.messages += [Message(s, r, dst, len(buf), prog.fmt(s).name) for dst, buf in outbox.items()]
        for r in range(n):
            meter.at = (s, r, "post")
            t0 = time.thread_time()
            inbox = {src: prog.decode_message(s, r, src, outboxes[src][r]) for src in prog.sources(s, r)}
            states[r] = prog.receive(s, r, states[r], inbox, meter)
            cpu[r, s, 1] = time.thread_time() - t0
    log.work = meter.records()
    return cpu, log, [prog.result(r, states[r]) for r in range(n)]


def timed_log(prog, chunks: Sequence[SparseChunk], repeats: int = 3, check: bool = True) -> MessageLog:
    """The MessageLog of `prog` on `chunks` with `measured` = median CPU seconds per (rank, stage, phase)
    over `repeats` timed runs (after one untimed run); lossless results checked against the dense sum."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    enabled = gc.isenabled()
    gc.disable()
    try:
        runs = [_run_once(prog, chunks) for _ in range(repeats + 1)][1:]
    finally:
        if enabled:
            gc.enable()
    _, log, results = runs[-1]
    if check and prog.lossless:
        check_results(prog.name, chunks, results, prog.numel, prog.push.value.name)
    log.measured = np.median(np.stack([cpu for cpu, _, _ in runs]), axis=0)
    return log
