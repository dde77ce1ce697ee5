"""The torch.distributed transport: one rank per process, point-to-point (gloo on CPU, NCCL on GPU).

`TorchP2P` is what the emulator's rank program and the training hook run stage programs over; its
`exchange` is also what the network calibration times. The process group must be initialized.

Every message carries its size (one int64, counted as control bytes) and its payload bytes. On
gloo both travel as one message into a receive posted before any send of the stage (`EAGER_BYTES`
of capacity; larger payloads send their rest in a second message); on NCCL, which matches a
receive only to a send of its size, the size header goes first and the payload's receive is posted
when it arrives. The stage ends when every receive and every send of this rank has completed, as
the timing contract in docs/architecture.md says.

Payloads on a GPU over gloo (the training hook's case: gloo moves host memory only) go through
`HostStaging`: each payload is copied once to reused page-locked host memory and sent from there,
and each received payload lands in reused page-locked memory and is copied once to the device, the
copies asynchronous on the device's stream; the exchange is then the sized one (exact-size receives,
no eager capacity).

Messages from a lower to a higher rank and those the other way travel in two process groups of
their own (`open_channels`), so each direction between two ranks has its own connection. Gloo has
one TCP connection per pair of ranks in a group; a pairwise exchange over one connection carries
one direction's data and the other direction's acknowledgements in the same queues, and measured
at 16 ranks one direction of most pairs then ran at half the rate of the other. Full-duplex links,
as the simulator has them, need the two directions apart.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.distributed as dist

from zensim.run.transports import wire_buffer
from zensim.sparse import xp as backend

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


class Channels:
    """The two process groups that carry messages from lower to higher ranks and back; `open()` is a
    collective call (every rank, in the same order). `Channels()` unopened uses the default group."""

    def __init__(self) -> None:
        self.groups: dict[bool, object] = {}

    @classmethod
    def open(cls) -> "Channels":
        """Create both direction groups (every rank must call this, right after joining)."""
        channels = cls()
        world = list(range(dist.get_world_size()))
        channels.groups = {True: dist.new_group(world), False: dist.new_group(world)}
        return channels

    def of(self, src: int, dst: int):
        """The process group of messages from `src` to `dst` (None: the default group)."""
        return self.groups.get(src < dst)

    def backend(self) -> str:
        """The backend the channels run on (gloo, nccl)."""
        return str(dist.get_backend(self.groups.get(True)))


def _tags(stage: int) -> tuple[int, int, int]:
    """Distinct gloo tags for one stage's first messages (size header, or eager message), payloads
    and delivery receipts."""
    return 3 * stage, 3 * stage + 1, 3 * stage + 2


# gloo: a message of up to EAGER_BYTES travels as one: [int64 size | payload] into a receive posted
# at the stage's start with this capacity (gloo accepts a message shorter than its receive). Its
# pages are only touched as far as the message fills them.
EAGER_BYTES = 16 << 20


RECEIPT_BYTES = 1  # a delivery receipt (exchange's `receipts`), control traffic


def exchange(stage: int, outbox: dict[int, object], sources: list[int], device: torch.device,
             channels: Channels, receipts: bool = False,
             staging: HostStaging | None = None) -> tuple[dict[int, object], StageBytes]:
    """Send `outbox[dst]` (bytes-like, or a uint8 array of any library) to every dst and receive one
    message from every rank in `sources`.

    Returns the received payloads by source (gloo on the CPU: read-only host views; otherwise uint8
    tensors on `device`) and the byte counts of this stage for this rank. On gloo with CPU payloads
    one message per (src, dst) (`_exchange_eager`); otherwise (NCCL matches a receive to a send of
    the same size; `staging` given: device payloads through host memory) a size header, then the
    payload (`_exchange_sized`).

    `receipts` (gloo): every receiver returns a receipt of RECEIPT_BYTES once a message has arrived
    whole, and the exchange ends when every receipt for this rank's sends is in: its sends are then
    delivered, as the timing contract (docs/architecture.md) and the simulator have it. Without,
    a send ends once gloo has handed it to the kernel's socket buffer, and a rank that sends in
    several stages in a row (a tree's root broadcasting) posts them all at once, sharing its NIC,
    where the contract has each wait for the one before.
    """
    if staging is None and device.type == "cpu" and channels.backend() == "gloo":
        return _exchange_eager(stage, outbox, sources, channels, receipts)
    return _exchange_sized(stage, outbox, sources, device, channels, staging)


def _exchange_eager(stage: int, outbox: dict[int, bytes], sources: list[int],
                    channels: Channels, receipts: bool = False) -> tuple[dict[int, memoryview], StageBytes]:
    """One gloo message per (src, dst): [int64 size | payload]; payloads beyond EAGER_BYTES send the
    rest as a second message, received once the first has said the size.

    gloo moves a message only once its receive is posted (the receiver's notification crosses the
    link first); a size header followed by a payload whose receive waits for the header costs two
    such crossings per message, and a stage of the dense ring at 16 ranks then took 14 ms longer
    (1.25x the wire bound instead of 1.06x over 30 stages). Here every receive is posted before any
    send, so each message needs at most the one crossing, overlapped with the sender's own."""
    head_tag, body_tag, receipt_tag = _tags(stage)
    me = dist.get_rank()
    stats = StageBytes()
    boxes = {src: torch.empty(EAGER_BYTES, dtype=torch.uint8) for src in sources}
    firsts = {src: dist.irecv(boxes[src], src, group=channels.of(src, me), tag=head_tag) for src in sources}
    sends = []
    receipts_in = []
    if receipts:  # a receipt comes back over the connection the message went out on
        receipts_in = [dist.irecv(torch.empty(RECEIPT_BYTES, dtype=torch.uint8), dst, group=channels.of(me, dst),
                                  tag=receipt_tag) for dst in outbox]
        stats.control_received += RECEIPT_BYTES * len(outbox)
    for dst, payload in outbox.items():
        payload = backend.host(backend.as_buffer(payload))  # gloo sends host memory
        nbytes = len(payload)
        first = min(nbytes, EAGER_BYTES - HEADER_BYTES)
        message = np.empty(HEADER_BYTES + first, np.uint8)
        message[:HEADER_BYTES] = np.frombuffer(np.int64(nbytes).tobytes(), np.uint8)
        message[HEADER_BYTES:] = payload[:first]
        sends.append(dist.isend(torch.from_numpy(message), dst, group=channels.of(me, dst), tag=head_tag))
        if nbytes > first:
            rest = torch.from_numpy(payload[first:].copy())
            sends.append(dist.isend(rest, dst, group=channels.of(me, dst), tag=body_tag))
        stats.control_sent += HEADER_BYTES
        stats.sent += nbytes
        stats.sent_to[dst] = nbytes
    inbox: dict[int, memoryview] = {}
    for src, req in firsts.items():
        req.wait()
        raw = boxes[src].numpy()
        nbytes = int(raw[:HEADER_BYTES].view(np.int64)[0])
        first = min(nbytes, EAGER_BYTES - HEADER_BYTES)
        if nbytes > first:
            whole = np.empty(nbytes, np.uint8)
            whole[:first] = raw[HEADER_BYTES:HEADER_BYTES + first]
            dist.irecv(torch.from_numpy(whole[first:]), src, group=channels.of(src, me), tag=body_tag).wait()
            inbox[src] = memoryview(whole).toreadonly()
        else:
            inbox[src] = memoryview(raw[HEADER_BYTES:HEADER_BYTES + nbytes]).toreadonly()
        if receipts:
            sends.append(dist.isend(torch.zeros(RECEIPT_BYTES, dtype=torch.uint8), src, group=channels.of(src, me),
                                    tag=receipt_tag))
            stats.control_sent += RECEIPT_BYTES
        stats.control_received += HEADER_BYTES
        stats.received += nbytes
    for req in sends + receipts_in:
        req.wait()
    return inbox, stats


def _exchange_sized(stage: int, outbox: dict[int, bytes], sources: list[int], device: torch.device,
                    channels: Channels, staging: HostStaging | None = None) -> tuple[dict[int, torch.Tensor], StageBytes]:
    """A size header (int64), then the payload when non-empty, per (src, dst); payload receives are
    posted as their headers arrive. Payloads stay on `device` end to end: a payload already there
    (a device chunk's serialization) is sent as it is, and what arrives is handed over as a device
    tensor, decoded there (no host copy on NCCL). With `staging` (gloo, payloads on a GPU) headers
    and payloads travel in host memory: one copy out of the device per payload sent, one copy back
    per payload received."""
    head_tag, body_tag, _ = _tags(stage)
    me = dist.get_rank()
    stats = StageBytes()
    wire = torch.device("cpu") if staging is not None else device
    bodies_out = {dst: backend.like(backend.as_buffer(payload), torch.empty(0, device=device))
                  for dst, payload in outbox.items()}
    if staging is not None:
        bodies_out = staging.outgoing(bodies_out)
    headers = {src: torch.zeros(1, dtype=torch.int64, device=wire) for src in sources}
    head_reqs = {src: dist.irecv(headers[src], src, group=channels.of(src, me), tag=head_tag) for src in sources}
    sends = []
    for dst, body in bodies_out.items():
        nbytes = int(body.shape[0])
        header = torch.tensor([nbytes], dtype=torch.int64, device=wire)
        sends.append(dist.isend(header, dst, group=channels.of(me, dst), tag=head_tag))
        stats.control_sent += HEADER_BYTES
        if nbytes:
            sends.append(dist.isend(body.contiguous(), dst, group=channels.of(me, dst), tag=body_tag))
        stats.sent += nbytes
        stats.sent_to[dst] = nbytes
    bodies: dict[int, torch.Tensor] = {}
    body_reqs = []
    for src, req in head_reqs.items():
        req.wait()
        stats.control_received += HEADER_BYTES
        nbytes = int(headers[src].item())
        bodies[src] = staging.incoming(src, nbytes) if staging is not None else \
            torch.empty(nbytes, dtype=torch.uint8, device=device)
        if nbytes:
            body_reqs.append(dist.irecv(bodies[src], src, group=channels.of(src, me), tag=body_tag))
    for req in body_reqs:
        req.wait()
    for req in sends:
        req.wait()
    if staging is not None:
        bodies = staging.delivered(bodies)
    for body in bodies.values():
        stats.received += int(body.shape[0])
    return bodies, stats


class HostStaging:
    """Host memory through which a gloo exchange moves payloads that live on a device (gloo sends
    and receives host memory only): a buffer per destination and per source, reused from stage to
    stage and from run to run (grown to the next power of two when a message is larger), page-locked
    when the device is a GPU so that the copies are asynchronous DMA on the device's stream.

    `outgoing` copies every payload of a stage to its buffer and waits once for those copies;
    `incoming` hands out the buffer a payload is received into; `delivered` copies the received
    payloads to fresh device tensors (the buffers are free again once those copies have run: the
    next stage waits for them before receiving into the buffers)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.pinned = device.type == "cuda"
        self._buffers: dict[tuple[str, int], torch.Tensor] = {}
        self._copied_in: object | None = None  # the event after the last copies to the device

    def _buffer(self, role: str, peer: int, nbytes: int) -> torch.Tensor:
        """The first `nbytes` of the reused buffer (role, peer)."""
        buf = self._buffers.get((role, peer))
        if buf is None or buf.shape[0] < nbytes:
            size = 1 << max(nbytes - 1, 0).bit_length()
            buf = torch.empty(size, dtype=torch.uint8, pin_memory=self.pinned)
            self._buffers[role, peer] = buf
        return buf[:nbytes]

    def _event(self):  # noqa: ANN202
        """A recorded event on the device's current stream (None off a GPU: copies are synchronous)."""
        if not self.pinned:
            return None
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(self.device))
        return event

    def outgoing(self, bodies: dict[int, torch.Tensor]) -> dict[int, torch.Tensor]:
        """Each payload copied to its destination's host buffer (the buffers, once the copies are done)."""
        if not bodies:
            return {}
        out = {}
        for dst, body in bodies.items():
            buf = self._buffer("send", dst, int(body.shape[0]))
            buf.copy_(body, non_blocking=self.pinned)
            out[dst] = buf
        event = self._event()
        if event is not None:
            event.synchronize()
        return out

    def incoming(self, src: int, nbytes: int) -> torch.Tensor:
        """The host buffer to receive `src`'s payload of `nbytes` into."""
        self._wait_copied_in()
        return self._buffer("receive", src, nbytes)

    def delivered(self, bodies: dict[int, torch.Tensor]) -> dict[int, torch.Tensor]:
        """The received payloads copied to the device (fresh tensors, copies issued asynchronously)."""
        out = {src: torch.empty(buf.shape[0], dtype=torch.uint8, device=self.device).copy_(buf, non_blocking=self.pinned)
               for src, buf in bodies.items()}
        self._copied_in = self._event()
        return out

    def _wait_copied_in(self) -> None:
        """Wait until the last copies out of the receive buffers have run."""
        if self._copied_in is not None:
            self._copied_in.synchronize()
            self._copied_in = None


def payload_of(nbytes: int, seed: int) -> bytes:
    """Deterministic filler payload of `nbytes` bytes (calibration messages)."""
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8).tobytes()


class TorchP2P:
    """The transport of one rank among processes joined by torch.distributed: `post` serializes,
    `deliver` runs the stage's exchange, `take` decodes. `stage_bytes` keeps each stage's counts
    (payload and header bytes, per destination); `seconds` and `cpu_seconds` the wall and thread CPU
    seconds its exchanges took (host copies of `staging` included). `receipts`: stages end when their
    sends are delivered (`exchange`; the emulator's timing contract), not when handed to the kernel.
    `staging`: device payloads over gloo go through these host buffers (`HostStaging`)."""

    exchanges = True

    def __init__(self, device: torch.device | None = None, channels: Channels | None = None,
                 receipts: bool = False, staging: HostStaging | None = None) -> None:
        self.device = device if device is not None else torch.device("cpu")
        self.channels = channels if channels is not None else Channels()
        self.receipts = receipts
        self.staging = staging
        self.seconds = self.cpu_seconds = 0.0
        self.rank = dist.get_rank()
        self.outbox: dict[int, bytes] = {}
        self.inbox: dict[int, bytes] = {}
        self.stage_bytes: list[StageBytes] = []

    def local_ranks(self, n: int) -> list[int]:
        """This process's rank (the world must have n ranks)."""
        if dist.get_world_size() != n:
            raise ValueError(f"program for {n} ranks, torch.distributed world of {dist.get_world_size()}")
        return [self.rank]

    def post(self, stage: int, src: int, dst: int, message) -> int:
        """Serialize for the exchange (on the chunk's device); the bytes must be the size the format
        announced."""
        buf = self.outbox[dst] = wire_buffer(stage, src, dst, message)
        return int(buf.shape[0])

    def deliver(self, stage: int, rank: int, sources: list[int]) -> None:
        """The stage's exchange: every posted message out, one message in from each source."""
        t0, c0 = time.monotonic(), time.thread_time()
        self.inbox, stats = exchange(stage, self.outbox, sources, self.device, self.channels, self.receipts,
                                     self.staging)
        self.outbox = {}
        self.stage_bytes.append(stats)
        self.seconds += time.monotonic() - t0
        self.cpu_seconds += time.thread_time() - c0

    def take(self, stage: int, dst: int, src: int, program, ctx):
        """Decode what `src` sent."""
        return program.decode(stage, dst, src, self.inbox.pop(src), ctx)

