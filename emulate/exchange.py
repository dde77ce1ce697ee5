"""Point-to-point exchange of one stage's payloads with torch.distributed (gloo or NCCL).

Every message is a size header (one int64, counted as control bytes) followed, when the size is
non-zero, by the payload bytes. All headers are sent and all header receives are posted at once;
payload receives are posted as their headers arrive. The stage ends when every receive and every
send of this rank has completed, as the timing contract in docs/architecture.md says.
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


def _tags(stage: int) -> tuple[int, int]:
    """Distinct gloo tags for one stage's headers and payloads."""
    return 2 * stage, 2 * stage + 1


def exchange(stage: int, outbox: dict[int, bytes], sources: list[int], device: torch.device) -> tuple[dict[int, bytes], StageBytes]:
    """Send `outbox[dst]` to every dst and receive one message from every rank in `sources`.

    Returns the received payloads by source and the byte counts of this stage for this rank.
    """
    head_tag, body_tag = _tags(stage)
    stats = StageBytes()
    sends = []
    for dst, payload in outbox.items():
        nbytes = len(payload)
        header = torch.tensor([nbytes], dtype=torch.int64, device=device)
        sends.append(dist.isend(header, dst, tag=head_tag))
        stats.control_sent += HEADER_BYTES
        if nbytes:
            body = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(device)
            sends.append(dist.isend(body, dst, tag=body_tag))
        stats.sent += nbytes
        stats.sent_to[dst] = nbytes
    headers = {src: torch.zeros(1, dtype=torch.int64, device=device) for src in sources}
    head_reqs = {src: dist.irecv(headers[src], src, tag=head_tag) for src in sources}
    bodies: dict[int, torch.Tensor] = {}
    body_reqs = []
    for src, req in head_reqs.items():
        req.wait()
        stats.control_received += HEADER_BYTES
        nbytes = int(headers[src].item())
        bodies[src] = torch.empty(nbytes, dtype=torch.uint8, device=device)
        if nbytes:
            body_reqs.append(dist.irecv(bodies[src], src, tag=body_tag))
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
