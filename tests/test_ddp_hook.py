"""zensim_hook in real DDP training on gloo ranks: natural sparsity trains exactly as DDP's default
all-reduce hook (bit for bit on 2 ranks, to float rounding on 4 where the two sum in other orders);
top-k with error feedback trains as the reference team of sparsifiers; torch's fp16 wrapper composes."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from zensim.ddp import zensim_hook
from zensim.errors import ConfigError
from zensim.sparsify import Team

STEPS, VOCAB, DIM, BATCH = 4, 300, 8, 6
TIMES = ("seconds", "cpu_seconds", "transport_seconds", "transport_cpu_seconds", "own_seconds", "own_cpu_seconds")


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Embedding(VOCAB, DIM), torch.nn.Linear(DIM, 3))


def batch(step: int, rank: int) -> torch.Tensor:
    """Token ids of one rank's micro-batch: a few rows of the embedding (natural sparsity)."""
    return torch.from_numpy(np.random.default_rng([step, rank]).integers(0, VOCAB, BATCH))


def loss_of(model, ids: torch.Tensor) -> torch.Tensor:
    return model(ids).pow(2).mean()


def train(rank: int, world: int, hook, device: str = "cpu") -> dict[str, torch.Tensor]:
    """STEPS of SGD on this rank's batches, DDP with `hook` (None: DDP's default); final parameters."""
    model = make_model().to(device)
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.001)
    if hook is not None:
        ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
    for step in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss_of(ddp, batch(step, rank).to(device)).backward()
        opt.step()
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def rank_main(rank: int, world: int, tmp: str) -> None:
    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=world)
    try:
        zen, mixed = zensim_hook("zen"), zensim_hook("zen", dense_above=0.01)
        runs = {"default": train(rank, world, None), "zen": train(rank, world, zen),
                "zen-dense": train(rank, world, mixed),
                "sparcml": train(rank, world, zensim_hook("sparcml")),
                "topk": train(rank, world, zensim_hook("zen", sparsifier="topk", density=0.05)),
                "fp16-default": train(rank, world, default_hooks.fp16_compress_wrapper(default_hooks.allreduce_hook)),
                "fp16-zen": train(rank, world, default_hooks.fp16_compress_wrapper(zensim_hook("zen")))}
        runs["stats"] = {"zen_sent": zen.stats.sent, "zen_buckets": zen.stats.buckets,
                         "mixed_dense": mixed.stats.dense, "mixed_buckets": mixed.stats.buckets,
                         "zen_times": {k: getattr(zen.stats, k) for k in TIMES}}
        torch.save(runs, f"{tmp}/rank{rank}.pt")
    finally:
        gc.collect()
        dist.destroy_process_group()


def reference_topk(world: int, density: float) -> dict[str, torch.Tensor]:
    """Top-k with error feedback by the book (zensim.sparsify.Team, no network): every step each worker
    sends its selection from gradient + residual, the update is the sum of what was sent / n."""
    model = make_model()
    replicas = [make_model() for _ in range(world)]
    team = Team("topk", world, density)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for step in range(STEPS):
        for r, rep in enumerate(replicas):
            rep.load_state_dict(model.state_dict())
            rep.zero_grad(set_to_none=True)
            loss_of(rep, batch(step, r)).backward()
        for name, p in model.named_parameters():
            grads = [dict(rep.named_parameters())[name].grad.reshape(-1).clone() for rep in replicas]
            sent = team.step(name, grads).sent
            total = np.zeros(p.numel(), np.float32)
            for c in sent:
                total[c.indices] += c.values / world
            p.grad = torch.from_numpy(total).reshape(p.shape)
        opt.step()
    return model.state_dict()


@pytest.fixture(scope="module", params=[2, 4])
def trained(request, tmp_path_factory):
    world = request.param
    tmp = str(tmp_path_factory.mktemp(f"ddp{world}"))
    mp.spawn(rank_main, args=(world, tmp), nprocs=world, join=True)
    return world, [torch.load(f"{tmp}/rank{r}.pt") for r in range(world)]


def test_natural_sparsity_trains_as_the_default_hook(trained):
    world, ranks = trained
    for r, runs in enumerate(ranks):
        for name in ("zen", "sparcml", "zen-dense"):
            for key, want in runs["default"].items():
                got = runs[name][key]
                assert torch.equal(got, ranks[0][name][key]), (name, key, r)  # every replica identical
                if world == 2:  # a + b in one order: bit for bit
                    assert torch.equal(got, want), (name, key)
                else:  # the ring and the scheme sum 4 terms in other orders
                    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7)
    stats = ranks[0]["stats"]
    assert stats["zen_buckets"] >= STEPS and stats["zen_sent"] > 0  # every iteration went through the hook
    # with dense_above, a bucket denser than 1% after its first iteration is all-reduced densely
    assert 0 < stats["mixed_dense"] < stats["mixed_buckets"]


def test_hook_time_splits_into_transport_and_own_work(trained):
    """HookStats: the thread's wall and CPU seconds, the transport's share of each, the hook's own the rest."""
    for runs in trained[1]:
        t = runs["stats"]["zen_times"]
        assert 0 < t["transport_seconds"] < t["seconds"] and 0 < t["own_seconds"]
        assert 0 <= t["transport_cpu_seconds"] <= t["cpu_seconds"] and 0 < t["own_cpu_seconds"]
        assert t["own_seconds"] == t["seconds"] - t["transport_seconds"]
        assert t["own_cpu_seconds"] == t["cpu_seconds"] - t["transport_cpu_seconds"]
        # one thread's CPU time cannot exceed its wall time (clock granularity aside)
        assert t["cpu_seconds"] <= t["seconds"] + 0.01 and t["transport_cpu_seconds"] <= t["transport_seconds"] + 0.01


def test_topk_with_error_feedback_trains_as_the_reference(trained):
    world, ranks = trained
    want = reference_topk(world, 0.05)
    for key, w in want.items():
        torch.testing.assert_close(ranks[0]["topk"][key], w, rtol=1e-5, atol=1e-6)
        assert not torch.equal(ranks[0]["topk"][key], ranks[0]["default"][key]) or key.endswith("bias")


def test_torch_fp16_wrapper_composes(trained):
    world, ranks = trained
    for key, want in ranks[0]["fp16-default"].items():
        torch.testing.assert_close(ranks[0]["fp16-zen"][key], want, rtol=2e-3, atol=1e-4)


def cuda_rank(rank: int, world: int, tmp: str) -> None:
    """On the GPU (every rank on device 0, gloo): the default hook and zen, final parameters saved."""
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=world)
    try:
        torch.save({"default": train(rank, world, None, "cuda"), "zen": train(rank, world, zensim_hook("zen"), "cuda")},
                   f"{tmp}/cuda{rank}.pt")
    finally:
        gc.collect()
        dist.destroy_process_group()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_on_cuda_trains_as_the_default_hook(tmp_path):
    mp.spawn(cuda_rank, args=(2, str(tmp_path)), nprocs=2, join=True)
    runs = torch.load(tmp_path / "cuda0.pt")
    for key, want in runs["default"].items():
        assert torch.equal(runs["zen"][key], want), key


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(ConfigError, match="dense_above 2"):
        zensim_hook("zen", dense_above=2)
    with pytest.raises(ConfigError, match="unknown scheme"):
        zensim_hook("no-such")
    with pytest.raises(ConfigError, match="usable in DDP: topk"):
        zensim_hook("zen", sparsifier="cltk", density=0.1)
    with pytest.raises(ConfigError, match="needs a density"):
        zensim_hook("zen", sparsifier="topk")
    with pytest.raises(ConfigError, match="not initialized"):
        zensim_hook("zen")
