"""The two capture paths agree: DDP with the recording hook on 2 gloo processes vs virtual workers."""

from __future__ import annotations

import gc
import os
import shlex
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

from zensim.errors import ConfigError
from zensim.trace.capture import VirtualWorkers, make_sparsifier, record_ddp
from zensim.trace.capture.hook import select_params
from zensim.trace.capture.workloads.lstm import LSTMLM
from zensim.trace.format import Trace
from zensim.trace.merge import merge_shards

WORLD = 2
WARMUP, ITERATIONS = 1, 3  # DDP rebuilds its buckets after the first iteration: recorded ones follow it
SPARSIFIERS = (("natural", None, False), ("topk", 0.1, False), ("dgc", 0.1, False), ("topk", 0.1, True))


def label(kind: str, dense: bool) -> str:
    """File name of one configuration's shards."""
    return f"{kind}-dense" if dense else kind


def tiny_workload(seed: int = 3) -> LSTMLM:
    """A tiny LSTM LM on Zipf-distributed synthetic tokens (no corpus)."""
    rng = np.random.default_rng(seed)
    vocab = 40
    p = 1.0 / np.arange(1, vocab + 1)
    tokens = rng.choice(vocab, size=2000, p=p / p.sum())
    return LSTMLM(tokens, vocab, batch_size=3, seed=seed, embed=4, hidden=16, seq_len=5)


def free_port() -> int:
    """A port free right now on 127.0.0.1 (for the one-process hook-mode store)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank: int, tmp: str) -> None:
    """One DDP rank: train a fresh tiny model per sparsifier with the hook, save final parameters."""
    torch.set_num_threads(1)
    # rendezvous through a file, not a TCP port picked in advance (another process may take it first);
    # gloo's own connections go over loopback on ports the OS assigns
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=WORLD)
    try:
        for kind, density, dense in SPARSIFIERS:
            work = tiny_workload()
            # tiny buckets: several per iteration, rebuilt (reordered) after the first iteration
            ddp = DistributedDataParallel(work.model, bucket_cap_mb=0.0005)
            record_ddp(ddp, f"{tmp}/{label(kind, dense)}-{{rank}}.zt", ITERATIONS, warmup=WARMUP, sparsifier=kind,
                       density=density, values=True, seed=work.seed, workload=work.name, dense=dense)
            opt = torch.optim.SGD(ddp.parameters(), lr=0.5)  # SGD: a wrong gradient scale shows
            for step in range(WARMUP + ITERATIONS):
                opt.zero_grad(set_to_none=True)
                work.loss(ddp, work.batch(step, rank, WORLD)).backward()
                opt.step()
            if rank == 0:
                torch.save(work.model.state_dict(), f"{tmp}/{label(kind, dense)}-final.pt")
    finally:
        gc.collect()  # free DDP's gloo work objects while the interpreter is alive (see hookrun.run_hooked)
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = str(tmp_path_factory.mktemp("ddp"))
    mp.spawn(rank_main, args=(tmp,), nprocs=WORLD, join=True)
    for kind, _, dense in SPARSIFIERS:
        name = label(kind, dense)
        merge_shards([f"{tmp}/{name}-{r}.zt" for r in range(WORLD)], f"{tmp}/{name}.zt")
    return tmp


@pytest.mark.parametrize("kind,density,dense", SPARSIFIERS)
def test_ddp_hook_and_virtual_workers_record_the_same(ddp_run: str, kind: str, density: float | None,
                                                      dense: bool) -> None:
    """Same chunks (or, dense, the same whole gradients before selection) and the same final model."""
    torch.set_num_threads(1)
    work = tiny_workload()
    sparsifiers = [make_sparsifier(kind, density, work.seed + w) for w in range(WORLD)]
    names = [n for n, _ in work.model.named_parameters()]
    runner = VirtualWorkers(work.model, torch.optim.SGD(work.model.parameters(), lr=0.5), work.loss,
                            sparsifiers, names, dense)
    trace = Trace.open(f"{ddp_run}/{label(kind, dense)}.zt")
    assert trace.is_dense == dense
    assert trace.workers == WORLD and trace.iterations == ITERATIONS
    assert [t.name for t in trace.tensors] == names
    for step in range(WARMUP + ITERATIONS):
        chunks = runner.step([work.batch(step, w, WORLD) for w in range(WORLD)])
        if step < WARMUP:
            continue
        for w in range(WORLD):
            for name in names:
                it = step - WARMUP
                if dense:
                    np.testing.assert_allclose(trace.dense(it, w, name), chunks[w][name], rtol=1e-5, atol=1e-7)
                    continue
                np.testing.assert_array_equal(trace.indices(it, w, name), chunks[w][name].indices)
                np.testing.assert_allclose(trace.values(it, w, name), chunks[w][name].values, rtol=1e-5, atol=1e-7)
    final = torch.load(f"{ddp_run}/{label(kind, dense)}-final.pt")
    for name, p in work.model.state_dict().items():
        torch.testing.assert_close(p, final[name], rtol=1e-5, atol=1e-6)


def test_natural_embedding_indices_are_the_rows_of_the_batch(ddp_run: str) -> None:
    work = tiny_workload()
    trace = Trace.open(f"{ddp_run}/natural.zt")
    embed = work.model.embedding.embedding_dim
    for it in range(ITERATIONS):
        for w in range(WORLD):
            rows = np.unique(work.batch(WARMUP + it, w, WORLD)[0].numpy())
            expected = (rows[:, None] * embed + np.arange(embed)).ravel()
            np.testing.assert_array_equal(trace.indices(it, w, "embedding.weight"), expected)


USER_SCRIPT = '''
import sys
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

open(sys.argv[2], "w").close()  # the script has started
dist.init_process_group("gloo")
try:
    torch.manual_seed(0)
    ddp = DistributedDataParallel(nn.Sequential(nn.Embedding(50, 3), nn.Linear(3, 2)))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(50)), batch_size=4)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step, (ids,) in zip(range(int(sys.argv[1])), loader):
        opt.zero_grad()
        ddp(ids).sum().backward()
        opt.step()
finally:
    dist.destroy_process_group()
'''


def run_capture_hook(args: list[str], world: int = 1) -> subprocess.CompletedProcess:
    """`zensim capture --hook ...` as rank 0 of `world` in a fresh process, as torchrun would start it.

    A fresh process per run: re-initialising a gloo process group inside one long-lived process
    (pytest's) was seen to hang now and then; the timeout turns any hang into a failure."""
    env = {**os.environ, "RANK": "0", "WORLD_SIZE": str(world), "LOCAL_RANK": "0",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "GLOO_SOCKET_IFNAME": "lo"}
    return subprocess.run([sys.executable, "-m", "zensim.cli", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def test_hook_mode_runs_an_unmodified_script(tmp_path) -> None:
    script = tmp_path / "train.py"
    script.write_text(USER_SCRIPT)
    started = tmp_path / "started"
    shard = tmp_path / "s-{rank}.zt"
    base = ["capture", "--hook", str(script), "--iterations", "2", "--warmup", "1", "-o", str(shard)]
    done = run_capture_hook([*base, "--skip-params", "1.*", "--", "3", str(started)])
    assert done.returncode == 0, done.stderr
    trace = Trace.open(tmp_path / "s-0.zt")
    assert [t.name for t in trace.tensors] == ["0.weight"]  # the Linear layer is skipped
    assert trace.workers == 1 and trace.meta["provenance"]["shard"] == {"rank": 0, "world_size": 1}
    prov = trace.meta["provenance"]
    assert prov["torch"] == torch.__version__ and prov["batch_size"] == 4 and trace.meta["batch_size"] == 4
    assert prov["batch_size_source"] == "DataLoader" and prov["script_args"] == ["3", str(started)]
    command = shlex.split(prov["command"])  # the zensim command line, exactly
    assert command[1:3] == ["capture", "--hook"] and command[-5:] == ["--skip-params", "1.*", "--", "3", str(started)]
    for it in range(2):  # step 1 + it reads the DataLoader's batch 1 + it: rows 4(1+it) .. 4(1+it)+3
        rows = np.arange(4 * (1 + it), 4 * (1 + it) + 4)
        np.testing.assert_array_equal(trace.indices(it, 0, "0.weight"), (rows[:, None] * 3 + np.arange(3)).ravel())
    (tmp_path / "s-0.zt").unlink()
    short = run_capture_hook([*base, "--params", "0.weight", "--", "2", str(started)])
    assert short.returncode == 2
    assert "fewer than --warmup 1 + --iterations 2; no shard written" in short.stderr
    assert not (tmp_path / "s-0.zt").exists()


def test_hook_mode_checks_the_shard_path_before_the_script_starts(tmp_path) -> None:
    script = tmp_path / "train.py"
    script.write_text(USER_SCRIPT)
    started = tmp_path / "started"
    for out, message in ((tmp_path / "s.zt", "a shard path for 2 ranks must contain {rank}"),
                         (tmp_path / "no" / "s-{rank}.zt", "does not exist")):
        run = run_capture_hook(["capture", "--hook", str(script), "--iterations", "1", "-o", str(out), "--",
                                "2", str(started)], world=2)
        assert run.returncode == 2 and message in run.stderr.strip().splitlines()[-1], run.stderr
        assert not started.exists()  # refused before the script ran


def test_parameter_filter() -> None:
    names = ["embedding.weight", "lstm.weight_ih_l0", "lstm.bias_ih_l0", "decoder.weight", "decoder.bias"]
    assert select_params(names) == names
    assert select_params(names, ["lstm.*", "embedding.weight"]) == names[:3]  # model order
    assert select_params(names, None, ["*bias*"]) == ["embedding.weight", "lstm.weight_ih_l0", "decoder.weight"]
    assert select_params(names, ["lstm.*"], ["*.bias*"]) == ["lstm.weight_ih_l0"]
    with pytest.raises(ConfigError, match="params: 'emb' matches no trainable parameter of the model .it has embedding"):
        select_params(names, ["emb"])
    with pytest.raises(ConfigError, match="skip_params: 'x.*' matches no"):
        select_params(names, None, ["x.*"])
    with pytest.raises(ConfigError, match="no trainable parameter left"):
        select_params(names, ["decoder.*"], ["decoder.*"])
