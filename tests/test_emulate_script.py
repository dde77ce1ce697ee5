"""`zensim emulate --script`: an unmodified DDP script on emulated ranks, torchrun's environment, shaped
links (iterations no faster than the wire allows), iteration times, nothing left behind."""

from __future__ import annotations

import json
import os

import pytest

from test_emulate_cluster import WAIT, emulation_lock, needs_netns

from emulate import netns
from emulate.script import summarize_script, torchrun_env
from zensim.cli import main
from zensim.errors import ConfigError

NUMEL = 262_144  # 1 MiB of float32 gradient per iteration
SCRIPT = '''
import json, os, sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")  # env://, as under torchrun
names = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "GLOO_SOCKET_IFNAME")
with open(os.path.join(sys.argv[1], f"env{dist.get_rank()}.json"), "w") as f:
    json.dump({k: os.environ.get(k) for k in names}, f)
model = DistributedDataParallel(torch.nn.Linear(%d, 1, bias=False))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(sys.argv[2])):
    opt.zero_grad()
    model(torch.ones(1, %d)).sum().backward()
    opt.step()
dist.destroy_process_group()
''' % (NUMEL, NUMEL)


@needs_netns
def test_a_ddp_script_runs_on_shaped_ranks_with_torchruns_environment(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    logs = tmp_path / "logs"
    argv = ["emulate", "--ranks", "2", "--bandwidth", "16mbit", "--script", str(script), "--logs", str(logs),
            "--wait", str(WAIT), "--json", "--", str(tmp_path), "4"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    for r in range(2):
        env = json.loads((tmp_path / f"env{r}.json").read_text())
        assert env == {"RANK": str(r), "LOCAL_RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "1",
                       "GROUP_RANK": str(r), "MASTER_ADDR": netns.rank_addr(0), "GLOO_SOCKET_IFNAME": netns.rank_dev(r)}
        assert (logs / f"rank{r}.log").exists()
    assert result["ranks"] == 2 and result["iterations"] == 3 and len(result["iteration_s"]) == 3
    # a ring all-reduce of 1 MiB on 2 ranks moves 1 MiB out of each NIC: 0.52 s at 16 Mbit/s
    wire_bound = NUMEL * 4 * 8 / 16e6
    assert result["median_s"] >= 0.95 * wire_bound
    assert min(result["wire_tx"]) >= 4 * NUMEL * 4  # every iteration's gradient went over the shaped link
    with emulation_lock():
        assert netns.project_namespaces(os.getpid()) == [] and netns.project_run_dirs(os.getpid()) == []


def test_torchrun_environment_and_summary():
    env = torchrun_env(3, 8, "run")
    assert env["RANK"] == "3" and env["GROUP_RANK"] == "3" and env["LOCAL_RANK"] == "0" and env["WORLD_SIZE"] == "8"
    assert env["MASTER_ADDR"] == netns.rank_addr(0) and env["TORCHELASTIC_USE_AGENT_STORE"] == "False"
    outs = [{"rank": 1, "ddp": True, "stamps": [0.0, 1.0, 3.0, 4.0], "start": 0, "end": 5},
            {"rank": 0, "ddp": True, "stamps": [0.1, 1.5, 3.0, 4.5], "start": -1, "end": 4.5}]
    s = summarize_script(outs, warmup=1)
    assert s["iteration_s"] == [1.4, 2.0, 1.5] and s["median_s"] == 1.75 and s["script_s"] == 6
    with pytest.raises(ConfigError, match="different numbers of iterations"):
        summarize_script([outs[0], dict(outs[1], stamps=[0.0])], 0)
    with pytest.raises(ConfigError, match="no DistributedDataParallel"):
        summarize_script([dict(o, ddp=False, stamps=[]) for o in outs], 0)
