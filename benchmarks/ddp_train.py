"""Real DDP training of a built-in workload's model, synchronized by DDP's default hook or a zensim scheme.

Run it as torchrun runs a training script, on a real cluster or on the emulated one:

    zensim emulate --ranks 4 --bandwidth 25mbit --script benchmarks/ddp_train.py -- --hook zen --steps 30
    torchrun --nproc-per-node 4 benchmarks/ddp_train.py --hook default --steps 30

`--hook default` is DDP's all-reduce; any other name is `zensim_hook(scheme=NAME)` (natural
sparsity, or `--sparsifier topk --density 0.01` with error feedback); `--dense-above 0.5` all-reduces
the buckets whose gradient is dense (the LSTM's and the softmax's) and leaves the sparse ones (the
embedding's) to the scheme, as ZEN does. Rank 0 prints the hook's traffic and the last loss and,
with `--save FILE`, writes the trained parameters (torch.save of the state dict) so that two runs
can be compared. The workload is `lstm-lm` by default: the model of the shipped LSTM traces
(embedding 12,768 x 32, LSTM 32 -> 64, adaptive softmax) on the KJV corpus, every rank its own
micro-batches (a DistributedSampler's split).
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from zensim.ddp import zensim_hook
from zensim.trace.capture.workloads import make_workload


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", default="lstm-lm")
    p.add_argument("--hook", default="default", help="'default' (DDP's all-reduce) or a zensim scheme name")
    p.add_argument("--sparsifier", default=None, help="topk, dgc or threshold (with --density)")
    p.add_argument("--density", type=float, default=None)
    p.add_argument("--dense-above", type=float, default=None, help="all-reduce buckets denser than this")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=None, help="per-rank micro-batch (workload default)")
    p.add_argument("--bucket-mb", type=float, default=0.1, help="DDP bucket_cap_mb (default 0.1: lstm-lm's "
                   "softmax layers in buckets apart from the embedding, which shares one with the LSTM)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", default=None, help="rank 0 writes the trained parameters here")
    args = p.parse_args()

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        work = make_workload(args.workload, args.batch_size, args.seed)
        ddp = DistributedDataParallel(work.model, bucket_cap_mb=args.bucket_mb)
        hook = None
        if args.hook != "default":
            hook = zensim_hook(args.hook, sparsifier=args.sparsifier, density=args.density,
                               dense_above=args.dense_above)
            ddp.register_comm_hook(None, hook)
        opt = work.optimizer()
        t0 = time.monotonic()
        for step in range(args.steps):
            opt.zero_grad(set_to_none=True)
            loss = work.loss(ddp, work.batch(step, rank, world))
            loss.backward()
            opt.step()
        seconds = time.monotonic() - t0
        if rank == 0:
            params = sum(p.numel() for p in work.model.parameters())
            print(f"{args.workload}: {params} parameters, {world} ranks, hook {args.hook}, {args.steps} steps in "
                  f"{seconds:.2f} s, last loss {loss.item():.4f}")
            if hook is not None:
                s = hook.stats
                print(f"hook: {s.buckets} buckets ({s.dense} all-reduced densely), {s.sent} payload bytes sent, "
                      f"{s.nnz} non-zeros contributed, {s.seconds:.2f} s in the hook's thread")
            if args.save:
                torch.save(work.model.state_dict(), args.save)
    finally:
        gc.collect()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
