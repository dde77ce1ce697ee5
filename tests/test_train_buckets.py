"""DDP's bucket rule: closed cases, and the buckets torch's own DistributedDataParallel builds for real models."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from zensim.errors import ConfigError
from zensim.train.buckets import MIB, DDPBuckets, PerTensor, Single, make_bucketing
from zensim.train.hooks import LayerRecorder
from zensim.train.layers import ParamTime
from zensim.trace.capture.workloads.lstm import LSTMLM
from zensim.trace.capture.workloads.gpt import GPTModel


def params(*sizes: int, dtype: str = "float32") -> list[ParamTime]:
    return [ParamTime(f"p{i}", n, i, 0.0, 0.0, dtype) for i, n in enumerate(sizes)]


def names(buckets) -> list[list[str]]:
    return [list(b.names) for b in buckets]


def test_the_parameter_that_crosses_the_limit_stays_and_the_first_bucket_is_smaller() -> None:
    # 1 MiB first limit, then 2 MiB: float32 sizes in elements
    quarter = MIB // 16  # 1/4 MiB of float32
    ps = params(quarter, quarter, quarter, quarter, quarter, 8 * quarter, quarter)
    got = DDPBuckets(bucket_cap_mb=2, first_bucket_mb=1).assign(ps)
    # 4 x 1/4 MiB reaches 1 MiB exactly (>= closes); then 1/4 + 2 MiB crosses 2 MiB; the last is left open
    assert names(got) == [["p0", "p1", "p2", "p3"], ["p4", "p5"], ["p6"]]
    assert [b.nbytes for b in got] == [MIB, MIB // 4 + 2 * MIB, MIB // 4]


def test_torch_limits_an_explicit_cap_has_no_smaller_first_bucket() -> None:
    assert (DDPBuckets().first, DDPBuckets().cap) == (MIB, 25 * MIB)
    assert (DDPBuckets(10).first, DDPBuckets(10).cap) == (10 * MIB, 10 * MIB)
    assert (DDPBuckets(10, 2).first, DDPBuckets(10, 2).cap) == (2 * MIB, 10 * MIB)


def test_element_types_get_separate_buckets_and_sparse_ones_their_own() -> None:
    ps = params(MIB // 4, MIB // 2, MIB // 4) + [ParamTime("h", MIB // 2, 3, 0.0, 0.0, "float16"),
                                                   ParamTime("s", 10, 4, 0.0, 0.0, "float32")]
    got = DDPBuckets(bucket_cap_mb=8, first_bucket_mb=8).assign(ps, own={"s"})
    assert names(got) == [["s"], ["p0", "p1", "p2"], ["h"]]
    assert got[0].own and not got[1].own
    assert [b.nbytes for b in got] == [40, 4 * MIB, MIB]


def test_per_tensor_and_single() -> None:
    ps = params(5, 6, 7)
    assert names(PerTensor().assign(ps)) == [["p0"], ["p1"], ["p2"]]
    assert names(Single().assign(ps, own={"p1"})) == [["p1"], ["p0", "p2"]]
    assert names(Single().assign(ps, own={"p2"})) == [["p0", "p1"], ["p2"]]


def test_bad_bucket_options() -> None:
    with pytest.raises(ConfigError, match="--bucket-mb 0"):
        DDPBuckets(0)
    with pytest.raises(ConfigError, match="only for --bucketing ddp"):
        make_bucketing("single", 25)
    with pytest.raises(ConfigError, match="unknown"):
        make_bucketing("nope")


class SparseEmbeddingModel(nn.Module):
    """An embedding with sparse gradients (DDP gives it a bucket of its own) and dense layers."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(500, 16, sparse=True)
        self.fc0 = nn.Linear(16, 16)
        self.fc1 = nn.Linear(16, 20_000)  # with fc2, past DDP's 1 MiB first bucket
        self.fc2 = nn.Linear(20_000, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(self.fc0(self.emb(ids).mean(1))))).sum()


def lstm_lm() -> LSTMLM:
    rng = np.random.default_rng(0)
    vocab = 2000
    p = 1.0 / np.arange(1, vocab + 1)
    return LSTMLM(rng.choice(vocab, size=20_000, p=p / p.sum()), vocab, batch_size=4, seed=0)


def gpt_step(model: nn.Module) -> torch.Tensor:
    tokens = torch.randint(0, 4000, (1, 8), generator=torch.Generator().manual_seed(0))
    return model(tokens).square().mean()


CASES = {
    # a 10.4M-parameter GPT: DDP's defaults, 25 MiB buckets after a 1 MiB first one
    "gpt-default": (lambda: GPTModel(4000, 384, 8, 5, 8), {}, {}, gpt_step),
    # the LSTM LM workload, an explicit 0.1 MiB cap: first bucket the same size
    "lstm-0.1MiB": (lambda: lstm_lm().model, {"bucket_cap_mb": 0.1}, {"bucket_cap_mb": 0.1},
                    lambda m: m(*lstm_lm().batch(0, 0, 1))),
    # a sparse-gradient embedding in a bucket of its own
    "sparse-embedding": (SparseEmbeddingModel, {}, {}, lambda m: m(torch.arange(40).view(4, 10))),
}


@pytest.fixture(scope="module")
def gloo(tmp_path_factory: pytest.TempPathFactory):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path_factory.mktemp('gloo')}/rendezvous",
                            rank=0, world_size=1)
    yield
    gc.collect()  # free DDP's gloo work objects while the interpreter is alive
    dist.destroy_process_group()


@pytest.mark.parametrize("case", CASES)
def test_ddp_buckets_equal_the_buckets_torch_builds(gloo, case: str) -> None:
    build, ddp_kwargs, ours, step = CASES[case]
    torch.manual_seed(0)
    model = build()
    ddp = DistributedDataParallel(model, init_sync=False, **ddp_kwargs)  # one rank: nothing to sync
    recorder = LayerRecorder(model)  # the gradient-ready order, from the same backward passes DDP sees
    for _ in range(2):  # the reducer rebuilds its buckets in ready order after the first iteration
        model.zero_grad(set_to_none=True)
        step(ddp).backward()
    recorder.detach()
    by_id = {id(p): n for n, p in model.named_parameters()}
    torch_buckets = [[by_id[id(p)] for p in b.parameters()] for b in ddp.reducer._get_zeros_like_grad_buckets()]
    sparse = {n for n, m in model.named_modules() if isinstance(m, nn.Embedding) and m.sparse for n in [n + ".weight"]}
    profile = recorder.profile(warmup=1)
    got = DDPBuckets(**ours).assign(profile.params, own=sparse)
    assert names(got) == torch_buckets
    assert len(torch_buckets) >= 3
    del ddp
