"""The message log: what crossed the wire (stage, src, dst, bytes) and the local work of each rank."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

PHASES = ("pre", "post")


@dataclass(frozen=True)
class Message:
    """One payload sent at `stage` from rank `src` to rank `dst`, `nbytes` exactly as on the wire."""

    stage: int
    src: int
    dst: int
    nbytes: int
    fmt: str


@dataclass(frozen=True)
class Work:
    """Local work of `rank` at `stage`: `elements` processed by `kind`, before sends (`pre`) or after receives (`post`)."""

    stage: int
    rank: int
    phase: str
    kind: str
    elements: int


@dataclass
class MessageLog:
    """Everything one run of a scheme did, in the order the driver produced it."""

    n: int
    num_stages: int
    messages: list[Message] = field(default_factory=list)
    work: list[Work] = field(default_factory=list)
    # seconds of local work per (rank, stage, phase) as timed when the log was made (emulate.stepcost),
    # None when only the element counts of `work` are known
    measured: np.ndarray | None = None

    def arrays(self) -> dict[str, np.ndarray]:
        """Messages as numpy columns: stage, src, dst, nbytes (int64)."""
        cols = np.array([(m.stage, m.src, m.dst, m.nbytes) for m in self.messages], dtype=np.int64).reshape(-1, 4)
        return {"stage": cols[:, 0], "src": cols[:, 1], "dst": cols[:, 2], "nbytes": cols[:, 3]}

    def bytes_sent(self) -> np.ndarray:
        """Bytes each rank sent, summed over stages."""
        a = self.arrays()
        return np.bincount(a["src"], weights=a["nbytes"], minlength=self.n).astype(np.int64)

    def bytes_received(self) -> np.ndarray:
        """Bytes each rank received, summed over stages."""
        a = self.arrays()
        return np.bincount(a["dst"], weights=a["nbytes"], minlength=self.n).astype(np.int64)
