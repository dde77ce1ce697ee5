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
    outs = [{"rank": 1, "ddp": True, "stamps": [0.0, 1.0, 3.0, 4.0], "cpu_stamps": [0.0, 0.25, 0.5, 1.0], "start": 0,
             "end": 5},
            {"rank": 0, "ddp": True, "stamps": [0.1, 1.5, 3.0, 4.5], "cpu_stamps": [0.0, 0.5, 0.75, 1.0], "start": -1,
             "end": 4.5}]
    s = summarize_script(outs, warmup=1)
    assert s["iteration_s"] == [1.4, 2.0, 1.5] and s["median_s"] == 1.75 and s["script_s"] == 6
    assert s["cpu_s"] == [0.75, 0.5, 0.75] and s["median_cpu_s"] == 0.625  # both ranks' CPU, summed
    with pytest.raises(ConfigError, match="different numbers of iterations"):
        summarize_script([outs[0], dict(outs[1], stamps=[0.0])], 0)
    with pytest.raises(ConfigError, match="no DistributedDataParallel"):
        summarize_script([dict(o, ddp=False, stamps=[]) for o in outs], 0)


HOOK_STEPS = 3
SPARSE_SCRIPT = '''
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Embedding(1000, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(%d):
    opt.zero_grad()
    model(torch.tensor([10 * step + rank, 500 + step])).pow(2).sum().backward()  # 2 rows: 8 non-zeros a rank
    opt.step()
if rank == 0:
    torch.save(model.module.state_dict(), sys.argv[1])
dist.destroy_process_group()
''' % HOOK_STEPS


@needs_netns
def test_hook_trains_an_unmodified_script_with_a_zensim_scheme(tmp_path, capsys):
    """`--hook zen` registers zensim_hook("zen") on the script's DDP model (a script that never imports
    zensim): the hook synchronizes every step's bucket on every rank, with exactly the non-zeros the
    script's lookups make, and trains the parameters DDP's own all-reduce trains, bit for bit on 2 ranks."""
    import torch

    script = tmp_path / "train.py"
    script.write_text(SPARSE_SCRIPT)
    runs = {}
    for hook in ("default", "zen"):
        extra = [] if hook == "default" else ["--hook", hook]
        argv = ["emulate", "--ranks", "2", "--bandwidth", "16mbit", "--script", str(script), *extra, "--wait",
                str(WAIT), "--json", "--", str(tmp_path / f"{hook}.pt")]
        assert main(argv) == 0
        runs[hook] = json.loads(capsys.readouterr().out)
    assert runs["default"]["hook"] == "default" and runs["default"]["hook_stats"] == [None, None]
    zen = runs["zen"]
    assert zen["hook"] == "zen" and zen["iterations"] == HOOK_STEPS - 1
    for stats in zen["hook_stats"]:
        assert stats["scheme"] == "zen" and stats["buckets"] == HOOK_STEPS and stats["dense"] == 0
        assert stats["nnz"] == HOOK_STEPS * 2 * 4 and stats["sent"] > 0 and stats["by_numel"] == {"4000": HOOK_STEPS}
    default, zen_params = (torch.load(tmp_path / f"{h}.pt") for h in ("default", "zen"))
    assert torch.equal(default["weight"], zen_params["weight"])
    with emulation_lock():
        assert netns.project_namespaces(os.getpid()) == [] and netns.project_run_dirs(os.getpid()) == []


@pytest.mark.parametrize("extra, message", [
    (["--hook", "nope"], "--hook nope: unknown scheme 'nope'"),
    (["--hook", "zen-auto"], "--hook zen-auto: zen-auto chooses from every rank's data"),
])
def test_a_bad_hook_is_one_line_before_any_rank(extra, message, tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(SPARSE_SCRIPT)
    assert main(["emulate", "--ranks", "2", "--bandwidth", "16mbit", "--script", str(script), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not list(tmp_path.glob("*.pt"))


def test_a_negative_warmup_is_one_line_before_any_rank(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(SPARSE_SCRIPT)
    assert main(["emulate", "--ranks", "2", "--bandwidth", "16mbit", "--script", str(script), "--warmup", "-1"]) == 2
    assert capsys.readouterr().err == "zensim: error: --warmup -1: must be at least 0\n"


def test_hook_without_script_is_refused(tmp_path, capsys):
    trace = tmp_path / "t.zt"
    assert main(["emulate", "--ranks", "2", "--bandwidth", "16mbit", "--trace", str(trace), "--hook", "zen"]) == 2
    assert "--hook: only with --script" in capsys.readouterr().err
