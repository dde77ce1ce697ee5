"""The rank program started by torchrun itself (`torchrun --standalone --nproc-per-node 4`, gloo over
loopback, no namespaces): exactly the in-memory driver's message bytes and result bits. The same
code on CUDA with NCCL runs where at least two GPUs are present."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from test_run_torchdist import RANKS, SCHEMES, assert_as_in_memory, write_trace


def torchrun(nproc: int, rank_args: list[str], tmp_path: Path) -> list[dict]:
    """`torchrun --standalone --nproc-per-node nproc -m emulate.rank ARGS`; the ranks' JSON outputs."""
    exe = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "torch.distributed.run"]
    cmd += ["--standalone", "--nproc-per-node", str(nproc), "-m", "emulate.rank", *rank_args,
            "--out", str(tmp_path / "rank{rank}.json")]
    done = subprocess.run(cmd, env={**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(nproc)]


@pytest.mark.parametrize("kernels", ["numpy", "torch"])
def test_torchrun_standalone_gloo_equals_the_in_memory_driver(tmp_path, kernels):
    trace = write_trace(tmp_path / "t.zt")
    outs = torchrun(RANKS, ["--backend", "gloo", "--device", "cpu", "--trace", trace, "--schemes", ",".join(SCHEMES),
                            "--peers", "none", "--warmup", "0", "--timeout", "120", "--kernels", kernels], tmp_path)
    assert [o["rank"] for o in outs] == list(range(RANKS)) and {o["backend"] for o in outs} == {"gloo"}
    assert_as_in_memory(outs, trace, SCHEMES, {})


GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.skipif(GPUS < 2, reason=f"NCCL needs one GPU per rank and at least 2 ranks; this machine has {GPUS} "
                    "CUDA device(s)")
def test_torchrun_nccl_on_cuda_equals_the_in_memory_driver(tmp_path):
    nproc = min(RANKS, GPUS)
    trace = write_trace(tmp_path / "t.zt")
    outs = torchrun(nproc, ["--backend", "nccl", "--device", "cuda", "--trace", trace, "--schemes", ",".join(SCHEMES),
                            "--peers", "dense", "--warmup", "0", "--timeout", "120"], tmp_path)
    assert {o["backend"] for o in outs} == {"nccl"} and all(o["device"].startswith("cuda") for o in outs)
    assert_as_in_memory(outs, trace, SCHEMES, {})
