"""Point-to-point exchange of one stage's payloads with torch.distributed (gloo or NCCL).

Every message is a size header (one int64, counted as control bytes) followed, when the size is
non-zero, by the payload bytes. All headers are sent and all header receives are posted at once;
payload receives are posted as their headers arrive. The stage ends when every receive and every
send of this rank has completed, as the timing contract in docs/architecture.md says.

Messages from a lower to a higher rank and those the other way travel in two process groups of
their own (`open_channels`), so each direction between two ranks has its own connection. Gloo has
one TCP connection per pair of ranks in a group; a pairwise exchange over one connection carries
one direction's data and the other direction's acknowledgements in the same queues, and measured
at 16 ranks one direction of most pairs then ran at half the rate of the other. Full-duplex links,
as the simulator has them, need the two directions apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.distributed as dist

HEADER_BYTES = 8


@dataclass
class StageBytes:
    """Bytes one rank moved in one stage: payload bytes exactly as encoded, and header bytes apart."""

    sent: int = 0
    received: int = 0
    control_sent: int = 0
    control_received: int = 0
    sent_to: dict[int, int] = field(default_factory=dict)

    def add(self, other: "StageBytes") -> None:
        """Accumulate another stage's counts into this one."""
        self.sent += other.sent
        self.received += other.received
        self.control_sent += other.control_sent
        self.control_received += other.control_received
        for dst, nbytes in other.sent_to.items():
            self.sent_to[dst] = self.sent_to.get(dst, 0) + nbytes


_CHANNELS: dict[bool, object] = {}


def open_channels() -> None:
    """Create the two direction groups (a collective call: every rank, right after joining)."""
    world = list(range(dist.get_world_size()))
    _CHANNELS.update({True: dist.new_group(world), False: dist.new_group(world)})


def _channel(src: int, dst: int):
    """The process group of messages from `src` to `dst` (the default group before open_channels)."""
    return _CHANNELS.get(src < dst)


def _tags(stage: int) -> tuple[int, int]:
    """Distinct gloo tags for one stage's headers and payloads."""
    return 2 * stage, 2 * stage + 1


def exchange(stage: int, outbox: dict[int, bytes], sources: list[int], device: torch.device) -> tuple[dict[int, bytes], StageBytes]:
    """Send `outbox[dst]` to every dst and receive one message from every rank in `sources`.

    Returns the received payloads by source and the byte counts of this stage for this rank.
    """
    head_tag, body_tag = _tags(stage)
    me = dist.get_rank()
    stats = StageBytes()
    sends = []
    for dst, payload in outbox.items():
        nbytes = len(payload)
        header = torch.tensor([nbytes], dtype=torch.int64, device=device)
        sends.append(dist.isend(header, dst, group=_channel(me, dst), tag=head_tag))
        stats.control_sent += HEADER_BYTES
        if nbytes:
            body = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(device)
            sends.append(dist.isend(body, dst, group=_channel(me, dst), tag=body_tag))
        stats.sent += nbytes
        stats.sent_to[dst] = nbytes
    headers = {src: torch.zeros(1, dtype=torch.int64, device=device) for src in sources}
    head_reqs = {src: dist.irecv(headers[src], src, group=_channel(src, me), tag=head_tag) for src in sources}
    bodies: dict[int, torch.Tensor] = {}
    body_reqs = []
    for src, req in head_reqs.items():
        req.wait()
        stats.control_received += HEADER_BYTES
        nbytes = int(headers[src].item())
        bodies[src] = torch.empty(nbytes, dtype=torch.uint8, device=device)
        if nbytes:
            body_reqs.append(dist.irecv(bodies[src], src, group=_channel(src, me), tag=body_tag))
    for req in body_reqs:
        req.wait()
    for req in sends:
        req.wait()
    inbox = {}
    for src, body in bodies.items():
        inbox[src] = body.cpu().numpy().tobytes()
        stats.received += len(inbox[src])
    return inbox, stats


def payload_of(nbytes: int, seed: int) -> bytes:
    """Deterministic filler payload of `nbytes` bytes (calibration messages)."""
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8).tobytes()
