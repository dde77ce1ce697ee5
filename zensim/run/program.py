"""What a stage program is: the `StageProgram` protocol every driver, placement and counted log takes.

A scheme instance for n ranks declares its sizes (`name, n, numel, num_stages, value_dtype`), where
its second step begins (`step2_start`: the first pull stage; `num_stages` for a program without
one), what it needs and promises (`caps`), its rank-local steps (`start, sends, sources,
destinations, receive, decode, result`, driven by `zensim.run.run_ranks` under the timing contract
of zensim.run.driver) and its counted log (`sized_log`: the log `run_ranks` would write for
indices-only chunks, made from counts where the program's plan knows how, else None).
`zensim.schemes.program.ComposedProgram` (plans x aggregation x partition x formats) is the
composed member; the catalog's hand-written programs (ExDyna, Ok-Topk) declare the same members.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from zensim.run.context import RunContext, Tables
from zensim.run.log import MessageLog
from zensim.sparse.chunk import SparseChunk

ClosedForm = Callable[..., float]  # (SparsityStats, bandwidth bytes/s) -> seconds


@dataclass(frozen=True)
class Capabilities:
    """What a program needs and is, derived from its parts.

    needs_values: cannot run indices-only; lossless: every rank ends with the dense sum;
    replicas_identical: every rank ends with bit-identical values; keeps_zeros: an explicit 0.0
    survives (dense and blocks show only non-zero positions); closed_form: the scheme's formula
    (SparsityStats, bandwidth) -> seconds, or None; collective: every message's size is its domain's
    (dense formats), so nothing between stages waits for the host to learn a size and the program
    runs as one collective kernel per rank, NCCL's: the driver marks its log `fused` (one launch per
    rank, not one per piece of work)."""

    needs_values: bool = False
    lossless: bool = True
    replicas_identical: bool = True
    keeps_zeros: bool = True
    closed_form: ClosedForm | None = None
    collective: bool = False


@runtime_checkable
class StageProgram(Protocol):
    """A scheme instance for n ranks, as the drivers, `zensim.layout.place` and the metrics use it
    (see the module docstring)."""

    name: str
    n: int
    numel: int
    num_stages: int
    step2_start: int
    value_dtype: str
    caps: Capabilities

    def start(self, rank: int, chunk: SparseChunk, ctx: RunContext) -> Any:
        """Rank `rank`'s state made from its input chunk (stage 0's pre step begins with it)."""

    def sources(self, stage: int, rank: int) -> list[int]:
        """Ranks that send to `rank` at `stage`, ascending."""

    def destinations(self, stage: int, rank: int) -> list[int]:
        """Ranks `rank` sends to at `stage`, ascending."""

    def sends(self, stage: int, rank: int, state: Any, ctx: RunContext) -> Mapping[int, Any]:
        """Rank `rank`'s messages of `stage`, by destination in `destinations` order."""

    def receive(self, stage: int, rank: int, state: Any, inbox: dict[int, Any], ctx: RunContext) -> Any:
        """Rank `rank`'s state after taking its messages of `stage` (by source)."""

    def decode(self, stage: int, rank: int, src: int, buf: Any, ctx: RunContext) -> Any:
        """The message `src` sent `rank` at `stage`, from its wire bytes."""

    def result(self, rank: int, state: Any, ctx: RunContext) -> SparseChunk:
        """Rank `rank`'s aggregate once every stage has run."""

    def sized_log(self, chunks: Sequence[SparseChunk],
                  tables: Tables | None = None) -> tuple[MessageLog, RunContext] | None:
        """The log and context `run_ranks(self, chunks, check=False)` would make, from counts, or None
        where only the driver can make them."""


class DriverOnly:
    """Base of a hand-written program that needs values (the catalog's ExDyna, Ok-Topk): no push /
    pull split (every stage is reported as push) and no counted log (only the driver runs it)."""

    num_stages: int

    @property
    def step2_start(self) -> int:
        """`num_stages`: the program has no second step."""
        return self.num_stages

    def sized_log(self, chunks: Sequence[SparseChunk],
                  tables: Tables | None = None) -> tuple[MessageLog, RunContext] | None:
        """None: the program needs values, so only the driver runs it (StageProgram.sized_log)."""
        return None
