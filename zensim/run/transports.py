"""How messages get from one rank to another while `run_ranks` steps the ranks.

A transport serves the ranks this process runs (`local_ranks`) and has three calls, one per step
of the timing contract: `post` in a rank's `pre` step (hand over one message, return the bytes
that go on the wire), `deliver` in its `comm` step (the exchange), `take` in its `post` step (one
received message, decoded where bytes travelled). Every transport logs exactly the bytes it sends.

- `InMemory`: all ranks here, payload objects passed as they are (the simulator's transport);
- `InBytes`: all ranks here, every payload through `to_buffer` (its exact wire bytes, a uint8 array
  on the payload's device) and the program's `decode` (what the byte tests and the step-cost
  measurement use);
- `zensim.run.torchdist.TorchP2P`: one rank here, the others in other processes, point-to-point
  over torch.distributed (gloo or NCCL): the emulator's and the training hook's transport.
"""

from __future__ import annotations

from typing import Any, Protocol

from zensim.run.context import RunContext
from zensim.run.program import StageProgram


class Transport(Protocol):
    """The three calls the driver makes (see the module docstring). `exchanges`: whether `deliver`
    does anything (the driver skips the comm step of an untimed run otherwise)."""

    exchanges: bool

    def local_ranks(self, n: int) -> list[int]:
        """The ranks this process runs, for a program of n ranks."""

    def post(self, stage: int, src: int, dst: int, message: Any) -> int:
        """Hand `message` from `src` to `dst`; the number of bytes sent."""

    def deliver(self, stage: int, rank: int, sources: list[int]) -> None:
        """Complete `rank`'s exchange of `stage` (its sends and its receives from `sources`)."""

    def take(self, stage: int, dst: int, src: int, program: StageProgram, ctx: RunContext) -> Any:
        """The message `src` sent `dst` at `stage`, as the program's `receive` takes it."""


def wire_buffer(stage: int, src: int, dst: int, message: Any) -> Any:
    """`message.to_buffer()` (its wire bytes, a uint8 array on the payload's device), checked to be
    exactly the size the format announced."""
    buf = message.to_buffer()
    if buf.shape[0] != message.nbytes:
        raise AssertionError(f"stage {stage} {src}->{dst}: serialized {buf.shape[0]} bytes, sized {message.nbytes}")
    return buf


class InMemory:
    """Every rank in this process; payload objects handed over as they are."""

    exchanges = False

    def __init__(self) -> None:
        self.box: dict[tuple[int, int], Any] = {}

    def local_ranks(self, n: int) -> list[int]:
        """All n ranks."""
        return list(range(n))

    def post(self, stage: int, src: int, dst: int, message: Any) -> int:
        """Keep the object; its exact size is `message.nbytes`."""
        self.box[src, dst] = message
        return int(message.nbytes)

    def deliver(self, stage: int, rank: int, sources: list[int]) -> None:
        """Nothing to do: every rank posted before any rank takes."""

    def take(self, stage: int, dst: int, src: int, program: StageProgram, ctx: RunContext) -> Any:
        """The posted object."""
        return self.box.pop((src, dst))


class InBytes(InMemory):
    """Every rank in this process; every payload serialized to its exact wire bytes and decoded by
    the receiver, as across a network."""

    def post(self, stage: int, src: int, dst: int, message: Any) -> int:
        """Serialize; the bytes must be exactly the size the format announced."""
        buf = self.box[src, dst] = wire_buffer(stage, src, dst, message)
        return int(buf.shape[0])

    def take(self, stage: int, dst: int, src: int, program: StageProgram, ctx: RunContext) -> Any:
        """Decode the bytes as the receiving program does."""
        return program.decode(stage, dst, src, self.box.pop((src, dst)), ctx)
