"""`zensim capture --script --virtual-ranks N`: N ranks of an unmodified DDP script (written here, not a
built-in workload) in one process record what N real gloo processes running the same script record."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from zensim.cli import main
from zensim.trace.format import Trace
from zensim.trace.merge import merge_shards

ROOT = Path(__file__).resolve().parents[1]
RANKS, WARMUP, ITERATIONS = 3, 3, 4  # 17 samples a rank, 5 micro-batches: the recorded steps cross an epoch

SCRIPT = '''
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class Bags(torch.nn.Module):
    """Bags of item ids (EmbeddingBag, mean) and a token embedding, summed into a classifier."""

    def __init__(self):
        super().__init__()
        self.items = torch.nn.EmbeddingBag(500, 6, mode="mean")
        self.tokens = torch.nn.Embedding(90, 6)
        self.out = torch.nn.Linear(6, 3)

    def forward(self, items, token):
        return self.out(torch.tanh(self.items(items) + self.tokens(token)))


dist.init_process_group("gloo")
torch.manual_seed(0)
ids = (torch.rand(50, 5) ** 3 * 500).long()  # skewed: low ids are popular
data = TensorDataset(ids, torch.randint(0, 90, (50,)), torch.randint(0, 3, (50,)))
sampler = DistributedSampler(data, shuffle=True, seed=7)
loader = DataLoader(data, batch_size=4, sampler=sampler)
model = DistributedDataParallel(Bags())
opt = torch.optim.Adam(model.parameters(), lr=0.05)
for epoch in range(int(sys.argv[1])):
    sampler.set_epoch(epoch)
    for items, token, label in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(items, token), label).backward()
        opt.step()
dist.destroy_process_group()
'''


def free_port() -> int:
    """A port free right now on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def zensim(args: list[str], **env: str) -> subprocess.Popen:
    """`zensim ARGS` in a fresh process (the script initializes a process group)."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "GLOO_SOCKET_IFNAME": "lo", **env}
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        if key not in env:
            environ.pop(key, None)
    return subprocess.Popen([sys.executable, "-m", "zensim.cli", *args], env=environ, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> None:
    """Wait for a process; fail with its stderr unless it succeeded."""
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Trace, Trace]:
    """The script as 3 virtual ranks, and as 3 real gloo processes with the recording hook (merged)."""
    tmp = tmp_path_factory.mktemp("ranks")
    script = tmp / "bags.py"
    script.write_text(SCRIPT)
    steps = ["--warmup", str(WARMUP), "--iterations", str(ITERATIONS), "--values"]
    virtual = zensim(["capture", "--script", str(script), "--virtual-ranks", str(RANKS), *steps,
                      "-o", str(tmp / "virtual.zt"), "--", "2"])
    finish(virtual)
    port = str(free_port())
    real = [zensim(["capture", "--hook", str(script), *steps, "-o", str(tmp / "real-{rank}.zt"), "--", "2"],
                   RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(RANKS), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            for r in range(RANKS)]
    for proc in real:
        finish(proc)
    merge_shards([str(tmp / f"real-{r}.zt") for r in range(RANKS)], str(tmp / "real.zt"))
    return Trace.open(tmp / "virtual.zt"), Trace.open(tmp / "real.zt")


def test_virtual_ranks_record_the_index_sets_of_real_ranks(traces) -> None:
    virtual, real = traces
    assert virtual.workers == real.workers == RANKS and virtual.iterations == real.iterations == ITERATIONS
    assert [t.name for t in virtual.tensors] == [t.name for t in real.tensors] == \
        ["items.weight", "tokens.weight", "out.weight", "out.bias"]
    assert virtual.meta["batch_size"] == 4 and virtual.meta["provenance"]["virtual_ranks"] == RANKS
    for it in range(ITERATIONS):
        for rank in range(RANKS):
            for name in ("items.weight", "tokens.weight", "out.weight", "out.bias"):
                np.testing.assert_array_equal(virtual.indices(it, rank, name), real.indices(it, rank, name))
                # the parameters follow the N-rank average: equal values up to float summation order
                np.testing.assert_allclose(virtual.values(it, rank, name), real.values(it, rank, name),
                                           rtol=1e-4, atol=1e-6)
    # ranks read different micro-batches: their index sets differ
    assert not np.array_equal(virtual.indices(0, 0, "items.weight"), virtual.indices(0, 1, "items.weight"))


def test_bad_input_is_one_line_before_the_script_runs(tmp_path, capsys) -> None:
    script = tmp_path / "bags.py"
    script.write_text(SCRIPT)
    out = str(tmp_path / "t.zt")
    base = ["capture", "--iterations", "1"]
    for argv, message in (
            (["--script", str(script), "-o", out], "--ranks: required with --script"),
            (["--hook", str(script), "--ranks", "4", "-o", out], "--ranks: not used with --hook"),
            (["--script", str(script), "--ranks", "0", "-o", out], "--ranks 0: must be at least 1"),
            (["--script", str(script), "--ranks", "4", "-o", str(tmp_path / "t-{rank}.zt")], "no {rank}"),
            (["--script", str(script), "--ranks", "4", "-o", str(tmp_path / "no" / "t.zt")],
             "does not exist"),
            (["--script", str(tmp_path / "none.py"), "--ranks", "4", "-o", out], "no such file"),
            (["--script", str(script), "--ranks", "4", "--sparsifier", "topk", "--density", "0.1",
              "-o", out], "natural sparsity only")):
        assert main([*base, *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (argv, err)
    assert not Path(out).exists()


@pytest.mark.parametrize("old,new,message", (
    ("batch_size=4, sampler=sampler", "batch_size=4, shuffle=False", "no DataLoader over a DistributedSampler"),
    ("batch_size=4, sampler=sampler", "batch_size=None, sampler=sampler", "with batch_size=None"),
    ("opt.step()", "[p.data.sub_(0.1 * p.grad) for p in model.parameters()]", "no torch optimizer stepped")))
def test_scripts_virtual_ranks_cannot_run_are_refused(tmp_path, old: str, new: str, message: str) -> None:
    script = tmp_path / "plain.py"
    script.write_text(SCRIPT.replace(old, new))
    out = tmp_path / "t.zt"
    proc = zensim(["capture", "--script", str(script), "--virtual-ranks", "2", "--iterations", "1", "-o", str(out),
                   "--", "1"])
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2 and message in err.strip().splitlines()[-1], err
    assert not out.exists()
