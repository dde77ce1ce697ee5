"""The dense-allreduce scheme's message log from sizes alone, for dense buckets of millions of elements.

A dense gradient has every element present, so the `dense-allreduce` stage program's log (ring
reduce-scatter then all-gather of the n contiguous even partitions) depends only on (n, numel):
running the program on full index arrays to learn it costs seconds per bucket and n x numel memory
(at 128 ranks and 25 MiB buckets, gigabytes). This module writes the same log directly:

- reduce-scatter stage s = 0 .. n-2: rank r sends partition (r - s - 1) mod n to r + 1 (encode it;
  from s = 1 on, first merge it with what arrived: 2 x its size), decodes what arrives (partition
  (r - s - 2) mod n) and at the last stage merges it (2 x its size);
- all-gather stage n-1+s: rank r sends partition (r - s) mod n (encode), decodes and merges
  (copies into its result) partition (r - 1 - s) mod n.

Messages of empty partitions are sent with 0 bytes; work of 0 elements is not recorded; one rank
has one stage and nothing to do: all as the driver logs it. `tests/test_train_timeline.py` checks
the log equal to the program's own for many (n, numel).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from zensim.run.log import PHASES, MessageLog
from zensim.sparse.partition import even_boundaries

KINDS = ("encode", "decode", "merge")


@lru_cache(maxsize=256)
def dense_ring_log(n: int, numel: int, value_bytes: int = 4) -> MessageLog:
    """The log of `dense-allreduce` on n ranks of `numel` elements (values of `value_bytes` bytes)."""
    if n == 1:
        return MessageLog(1, 1)
    size = np.diff(even_boundaries(numel, n))
    r = np.arange(n)
    stage, src, dst, nbytes = [], [], [], []
    work = []  # (stage, rank, phase, kind index, elements)

    def add_work(s: int, phase: str, kind: str, elements: np.ndarray) -> None:
        work.append(np.stack([np.full(n, s), r, np.full(n, PHASES.index(phase)), np.full(n, KINDS.index(kind)),
                              elements], axis=1))

    for s in range(2 * (n - 1)):
        gather = s >= n - 1
        k = s - (n - 1) if gather else s
        send = size[(r - k) % n] if gather else size[(r - k - 1) % n]
        recv = size[(r - 1 - k) % n] if gather else size[(r - k - 2) % n]
        stage.append(np.full(n, s))
        src.append(r)
        dst.append((r + 1) % n)
        nbytes.append(send * value_bytes)
        if not gather and k >= 1:
            add_work(s, "pre", "merge", 2 * send)
        add_work(s, "pre", "encode", send)
        add_work(s, "post", "decode", recv)
        if gather:
            add_work(s, "post", "merge", recv)
        elif k == n - 2:
            add_work(s, "post", "merge", 2 * recv)
    w = np.concatenate(work)
    w = w[w[:, 4] > 0]
    cols = [np.concatenate(x).astype(np.int64) for x in (stage, src, dst, nbytes)]
    return MessageLog.from_columns(n, 2 * (n - 1), cols, np.zeros(len(cols[0]), np.int16), ("dense",),
                                   (w[:, 0], w[:, 1], w[:, 2], w[:, 4]), w[:, 3].astype(np.int16), KINDS)
