"""The torch.distributed exchange on gloo: one message per (src, dst) up to EAGER_BYTES, the rest of a
larger payload in a second message; exact bytes either way, empty payloads included, with and without
delivery receipts. The sized exchange NCCL takes (a size header, then the payload, tensors on the
device end to end) runs here on gloo with CPU tensors, and so does the same exchange through host staging
(reused buffers the hook moves GPU payloads through on gloo)."""

from __future__ import annotations

import os

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from zensim.run import torchdist

WORLD = 3
SIZES = (0, 1, 55, 56, 57, 200, 1000)  # around an eager capacity of 64 bytes: 56 of payload fit


def payload(src: int, dst: int, size: int) -> bytes:
    return np.random.default_rng([src, dst, size]).integers(0, 256, size, dtype=np.uint8).tobytes()


def rank_main(rank: int, tmp: str) -> None:
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=WORLD)
    try:
        torchdist.EAGER_BYTES = 64  # small, so that both paths run
        channels = torchdist.Channels.open()
        others = [r for r in range(WORLD) if r != rank]
        for stage, (size, receipts) in enumerate((s, r) for r in (False, True) for s in SIZES):
            # an all-to-all per size, sizes differing per destination; with and without receipts
            outbox = {dst: payload(rank, dst, size + dst) for dst in others}
            inbox, stats = torchdist.exchange(stage, outbox, others, torch.device("cpu"), channels, receipts)
            for src in others:
                assert bytes(inbox[src]) == payload(src, rank, size + rank), (stage, src)
            assert stats.sent == sum(size + d for d in others) and stats.received == (size + rank) * len(others)
            control = (torchdist.HEADER_BYTES + receipts * torchdist.RECEIPT_BYTES) * len(others)
            assert stats.control_sent == stats.control_received == control
            assert stats.sent_to == {d: size + d for d in others}
        # a one-way stage (a tree's root sending, its children only receiving) with receipts
        outbox = {dst: payload(rank, dst, 7) for dst in others} if rank == 0 else {}
        inbox, stats = torchdist.exchange(len(SIZES) * 2, outbox, [] if rank == 0 else [0], torch.device("cpu"),
                                          channels, True)
        assert rank == 0 or bytes(inbox[0]) == payload(0, rank, 7)
        assert stats.control_sent == (torchdist.HEADER_BYTES * len(others) if rank == 0 else torchdist.RECEIPT_BYTES)
        # the sized exchange (NCCL's, run here on gloo's CPU tensors): device payloads in, device tensors out
        for stage, size in enumerate(SIZES, start=len(SIZES) * 2 + 1):
            outbox = {dst: torch.frombuffer(bytearray(payload(rank, dst, size + dst)) or bytearray(1),
                                            dtype=torch.uint8)[: size + dst] for dst in others}
            inbox, stats = torchdist._exchange_sized(stage, outbox, others, torch.device("cpu"), channels)
            for src in others:
                assert isinstance(inbox[src], torch.Tensor) and inbox[src].dtype == torch.uint8
                assert inbox[src].numpy().tobytes() == payload(src, rank, size + rank), (stage, src)
            assert stats.sent == sum(size + d for d in others) and stats.received == (size + rank) * len(others)
        # through host staging (the hook's path for GPU payloads on gloo; here its copies on the CPU): the
        # buffers are reused and grown from stage to stage, what each stage handed over stays intact
        staging = torchdist.HostStaging(torch.device("cpu"))
        kept = []
        for stage, size in enumerate(SIZES + SIZES[::-1], start=len(SIZES) * 3 + 1):
            outbox = {dst: torch.from_numpy(np.frombuffer(payload(rank, dst, size + dst), np.uint8).copy())
                      for dst in others}
            inbox, stats = torchdist.exchange(stage, outbox, others, torch.device("cpu"), channels, staging=staging)
            kept.append((size, inbox))
            assert stats.sent == sum(size + d for d in others) and stats.received == (size + rank) * len(others)
            assert stats.control_sent == stats.control_received == torchdist.HEADER_BYTES * len(others)
        for size, inbox in kept:
            for src in others:
                assert inbox[src].numpy().tobytes() == payload(src, rank, size + rank), (size, src)
        assert {buf.shape[0] for buf in staging._buffers.values()} == {1024}  # grown to a power of two
    finally:
        dist.destroy_process_group()


def test_eager_and_split_messages_arrive_exactly(tmp_path):
    mp.spawn(rank_main, args=(str(tmp_path),), nprocs=WORLD, join=True)
