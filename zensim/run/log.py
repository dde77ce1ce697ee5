"""The message log: what crossed the wire (stage, src, dst, bytes, format) and each rank's local work.

Columnar: one numpy array per field, so that a run of 1024 ranks with a million messages is a few
arrays, not a million objects. `messages` and `work` give the records as named tuples for small logs
and tests; the network models read the columns (`arrays()`, `work_arrays()`).

Compact dtypes: ranks and stages are int32 (`IDS`), the phase int8, the format and kind codes int16;
bytes and element counts stay int64. A log whose ranks x stages reach 2**31 (`LIMIT`, the (rank,
stage) slots the replay numbers) is refused with a ValueError. A message so takes 22 B of columns, not
34, and a work record 20 B, not 35.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

PHASES = ("pre", "post")
_INT = np.int64  # bytes, elements
IDS = np.int32  # ranks, stages
LIMIT = 2**31  # ranks x stages stay below it (int32 slot ids)


class Message(NamedTuple):
    """One payload sent at `stage` from rank `src` to rank `dst`, `nbytes` exactly as on the wire."""

    stage: int
    src: int
    dst: int
    nbytes: int
    fmt: str


class Work(NamedTuple):
    """Local work of `rank` at `stage`: `elements` processed by `kind`, before sends (`pre`) or after receives (`post`).
    `launches`: the kernel launches it pays (its kind's fixed cost each): 1, or inside a fused collective
    (`MessageLog.fused`) 1 on the rank's first piece of it and 0 on the rest."""

    stage: int
    rank: int
    phase: str
    kind: str
    elements: int
    launches: int = 1


def _codes(names: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Small-integer codes of `names` and the table of distinct names (first-seen order)."""
    table: dict[str, int] = {}
    codes = np.fromiter((table.setdefault(x, len(table)) for x in names), np.int16, len(names))
    return codes, tuple(table)


class MessageLog:
    """Everything one run of a scheme did: messages and work as columns, in the order they were made.

    `measured`, when set, holds the seconds of local work per (rank, stage, phase) as timed when the
    log was made (the bytes transport with a timed meter): replays of measured work use it."""

    def __init__(self, n: int, num_stages: int, messages: Iterable[Message] = (), work: Iterable[Work] = (),
                 measured: np.ndarray | None = None) -> None:
        msgs, wk = list(messages), list(work)
        fmt, fmt_names = _codes([m.fmt for m in msgs])
        kind, kind_names = _codes([w.kind for w in wk])
        cols = np.array([m[:4] for m in msgs], _INT).reshape(-1, 4)
        wcols = np.array([(w.stage, w.rank, PHASES.index(w.phase), w.elements) for w in wk], _INT).reshape(-1, 4)
        launches = np.array([w.launches for w in wk], np.int8)
        self._set(n, num_stages, cols.T, fmt, fmt_names, wcols.T, kind, kind_names, launches)
        self.measured = measured

    def _set(self, n: int, num_stages: int, cols: Sequence[np.ndarray], fmt: np.ndarray, fmt_names: tuple[str, ...],
             wcols: Sequence[np.ndarray], kind: np.ndarray, kind_names: tuple[str, ...],
             launches: np.ndarray | None = None) -> None:
        if n * max(num_stages, 1) >= LIMIT:
            raise ValueError(f"message log: {n} ranks x {num_stages} stages reach 2**31 (int32 slot ids)")
        self.n, self.num_stages = n, num_stages
        self.stage, self.src, self.dst = (_ids(c) for c in cols[:3])
        self.nbytes = np.ascontiguousarray(cols[3], _INT)
        self.fmt, self.fmt_names = np.asarray(fmt, np.int16), tuple(fmt_names)
        self.w_stage, self.w_rank = _ids(wcols[0]), _ids(wcols[1])
        self.w_phase, self.w_elements = np.ascontiguousarray(wcols[2], np.int8), np.ascontiguousarray(wcols[3], _INT)
        self.w_kind, self.kind_names = np.asarray(kind, np.int16), tuple(kind_names)
        self.w_launches = (np.ones(len(self.w_kind), np.int8) if launches is None
                           else np.ascontiguousarray(launches, np.int8))

    @classmethod
    def from_columns(cls, n: int, num_stages: int, cols: Sequence[np.ndarray], fmt: np.ndarray,
                     fmt_names: Sequence[str], wcols: Sequence[np.ndarray], kind: np.ndarray,
                     kind_names: Sequence[str], measured: np.ndarray | None = None,
                     launches: np.ndarray | None = None) -> "MessageLog":
        """A log from its columns: (stage, src, dst, nbytes), format codes into `fmt_names`,
        work (stage, rank, phase index, elements), kind codes into `kind_names` and the launches each
        piece pays (None: one each)."""
        log = cls.__new__(cls)
        log._set(n, num_stages, cols, fmt, tuple(fmt_names), wcols, kind, tuple(kind_names), launches)
        log.measured = measured
        return log

    def fused(self) -> "MessageLog":
        """This log run as one fused collective kernel per rank (NCCL's: its reductions, copies and
        slicing inside the kernel, no host synchronization between stages): each rank's work pays one
        launch in all, on its first piece (lowest stage, pre before post, then log order), the rest none.
        Per-element costs are unchanged."""
        launches = np.zeros(len(self.w_kind), np.int8)
        if len(launches):  # per rank its least (stage, phase, position): one int64 key per piece, no sort
            key = (self.w_stage.astype(np.int64) * 2 + self.w_phase) * len(launches) + np.arange(len(launches))
            first = np.full(self.n, np.iinfo(np.int64).max)
            np.minimum.at(first, self.w_rank, key)
            launches[first[first < np.iinfo(np.int64).max] % len(launches)] = 1
        return MessageLog.from_columns(self.n, self.num_stages, (self.stage, self.src, self.dst, self.nbytes),
                                       self.fmt, self.fmt_names, (self.w_stage, self.w_rank, self.w_phase, self.w_elements),
                                       self.w_kind, self.kind_names, self.measured, launches)

    def __len__(self) -> int:
        return len(self.nbytes)

    @property
    def messages(self) -> list[Message]:
        """The messages as records (built on demand: use the columns for large logs)."""
        names = self.fmt_names
        return [Message(s, a, b, nb, names[f]) for s, a, b, nb, f in
                zip(self.stage.tolist(), self.src.tolist(), self.dst.tolist(), self.nbytes.tolist(), self.fmt.tolist())]

    @property
    def work(self) -> list[Work]:
        """The work records (built on demand)."""
        names = self.kind_names
        return [Work(s, r, PHASES[p], names[k], e, x) for s, r, p, k, e, x in
                zip(self.w_stage.tolist(), self.w_rank.tolist(), self.w_phase.tolist(), self.w_kind.tolist(),
                    self.w_elements.tolist(), self.w_launches.tolist())]

    def arrays(self) -> dict[str, np.ndarray]:
        """Messages as numpy columns: stage, src, dst (int32), nbytes (int64)."""
        return {"stage": self.stage, "src": self.src, "dst": self.dst, "nbytes": self.nbytes}

    def work_arrays(self) -> dict[str, np.ndarray]:
        """Work as numpy columns: stage, rank (int32), phase (index into PHASES, int8), kind (index into
        `kind_names`), elements (int64), launches."""
        return {"stage": self.w_stage, "rank": self.w_rank, "phase": self.w_phase, "kind": self.w_kind,
                "elements": self.w_elements, "launches": self.w_launches}

    def bytes_sent(self) -> np.ndarray:
        """Bytes each rank sent, summed over stages."""
        return np.bincount(self.src, weights=self.nbytes, minlength=self.n).astype(_INT)

    def bytes_received(self) -> np.ndarray:
        """Bytes each rank received, summed over stages."""
        return np.bincount(self.dst, weights=self.nbytes, minlength=self.n).astype(_INT)

    def placed(self, rank_of: np.ndarray, stage_offset: int, n: int, num_stages: int) -> "MessageLog":
        """This log with rank r renamed `rank_of[r]` and every stage shifted by `stage_offset`, in a
        cluster of n ranks and `num_stages` stages (the multi-GPU layout places group logs so)."""
        rank_of = np.asarray(rank_of, _INT)
        return MessageLog.from_columns(
            n, num_stages, (self.stage + stage_offset, rank_of[self.src], rank_of[self.dst], self.nbytes),
            self.fmt, self.fmt_names, (self.w_stage + stage_offset, rank_of[self.w_rank], self.w_phase, self.w_elements),
            self.w_kind, self.kind_names, launches=self.w_launches)

    @staticmethod
    def concat(logs: Sequence["MessageLog"], n: int, num_stages: int) -> "MessageLog":
        """One log of all `logs` in order (their ranks and stages already in the same numbering)."""
        fmt_names = tuple(dict.fromkeys(f for lg in logs for f in lg.fmt_names))
        kind_names = tuple(dict.fromkeys(k for lg in logs for k in lg.kind_names))

        def recode(codes: np.ndarray, names: tuple[str, ...], table: tuple[str, ...]) -> np.ndarray:
            lookup = np.array([table.index(x) for x in names] or [0], np.int16)
            return lookup[codes] if len(codes) else codes

        def cat(arrays: list[np.ndarray], dtype) -> np.ndarray:
            return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype)

        cols = [cat([getattr(lg, f) for lg in logs], t) for f, t in zip(("stage", "src", "dst", "nbytes"), (IDS,) * 3 + (_INT,))]
        wcols = [cat([getattr(lg, f) for lg in logs], t) for f, t in
                 zip(("w_stage", "w_rank", "w_phase", "w_elements"), (IDS, IDS, np.int8, _INT))]
        fmt = cat([recode(lg.fmt, lg.fmt_names, fmt_names) for lg in logs], np.int16)
        kind = cat([recode(lg.w_kind, lg.kind_names, kind_names) for lg in logs], np.int16)
        launches = cat([lg.w_launches for lg in logs], np.int8)
        return MessageLog.from_columns(n, num_stages, cols, fmt, fmt_names, wcols, kind, kind_names, launches=launches)


def _ids(column: np.ndarray) -> np.ndarray:
    """A rank or stage column as int32 (`IDS`); ValueError if a value does not fit."""
    column = np.asarray(column)
    if column.dtype != IDS and column.size and not (-LIMIT <= column.min() and column.max() < LIMIT):
        raise ValueError(f"message log: rank or stage {column.max()} does not fit int32 ids")
    return np.ascontiguousarray(column, IDS)


class LogBuilder:
    """Collects messages as the driver makes them and work counts from the meter; `build()` makes
    the columnar log."""

    def __init__(self, n: int, num_stages: int) -> None:
        self.n, self.num_stages = n, num_stages
        self.rows: list[int] = []  # stage, src, dst, nbytes, fmt code (flat)
        self.fmts: dict[str, int] = {}

    def add(self, stage: int, src: int, dst: int, nbytes: int, fmt: str) -> None:
        """One message."""
        code = self.fmts.get(fmt)
        if code is None:
            code = self.fmts[fmt] = len(self.fmts)
        self.rows += (stage, src, dst, nbytes, code)

    def build(self, work: dict[tuple[int, int, int, str], int], measured: np.ndarray | None = None) -> MessageLog:
        """The log, with `work` {(stage, rank, phase index, kind): elements} in insertion order."""
        rows = np.array(self.rows, _INT).reshape(-1, 5)
        kinds: dict[str, int] = {}
        wrows = np.array([(s, r, p, e) for (s, r, p, k), e in work.items()], _INT).reshape(-1, 4)
        kind = np.fromiter((kinds.setdefault(k, len(kinds)) for (_, _, _, k) in work), np.int16, len(work))
        return MessageLog.from_columns(self.n, self.num_stages, rows[:, :4].T, rows[:, 4].astype(np.int16),
                                       tuple(self.fmts), wrows.T, kind, tuple(kinds), measured)
