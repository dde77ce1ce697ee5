"""`zensim layers record --script`: the layer profile of a DDP script that is not a built-in workload
(written here), with the host's load, CPU and wall time of its steps, the step's time outside the model
and zensim_hook's work per bucket, and a warning on stderr and in
the profile when the steps waited (the script sleeps in its step: wall >> CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zensim.cli import main
from zensim.train.record import BUSY_BELOW

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = '''
import argparse, time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--nap", type=float, default=0.0)
p.add_argument("--between", type=float, default=0.0)
args = p.parse_args()


class Tagger(torch.nn.Module):
    """A model no built-in workload has: token embedding, a GRU, a classifier."""

    def __init__(self):
        super().__init__()
        self.tokens = torch.nn.Embedding(300, 12)
        self.rnn = torch.nn.GRU(12, 16, batch_first=True)
        self.out = torch.nn.Linear(16, 5)

    def forward(self, x):
        if args.nap:
            time.sleep(args.nap)  # waiting, not computing: wall >> CPU
        return self.out(self.rnn(self.tokens(x))[0][:, -1])


dist.init_process_group("gloo")
torch.manual_seed(0)
model = DistributedDataParallel(Tagger())
data = DataLoader(TensorDataset(torch.randint(0, 300, (96, 7)), torch.randint(0, 5, (96,))), batch_size=8)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(args.epochs):
    for x, y in data:
        time.sleep(args.between)  # the step's time outside forward, backward and optimizer
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
dist.destroy_process_group()
'''

PARAMS = {"tokens.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0", "rnn.bias_hh_l0", "out.weight",
          "out.bias"}


def record(tmp_path: Path, *script_args: str) -> tuple[dict, str]:
    """`zensim layers record --script` on the script, in a process of its own; the profile and stderr."""
    script = tmp_path / "tagger.py"
    script.write_text(SCRIPT)
    out = tmp_path / "tagger.layers.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("WORLD_SIZE", None)
    done = subprocess.run([sys.executable, "-m", "zensim.cli", "layers", "record", "--script", str(script),
                           "--warmup", "2", "--iterations", "6", "-o", str(out), "--", *script_args],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text()), done.stderr


def test_a_foreign_scripts_model_is_profiled_with_the_hosts_figures(tmp_path) -> None:
    profile, _ = record(tmp_path, "--between", "0.02")
    # the step outside the model (here 20 ms asleep before zero_grad) and the hook's work per bucket
    assert 0.02 <= profile["step_other_s"] < 0.02 + profile["forward_s"] + profile["optimizer_s"] + 0.05
    hook = ["hook_before_s", "hook_before_element_s", "hook_after_s", "hook_after_element_s"]
    assert all(profile.get(k, 0.0) >= 0 for k in hook) and any(profile.get(k, 0.0) > 0 for k in hook)
    assert {p["name"] for p in profile["params"]} == PARAMS
    assert all(p["forward_s"] > 0 and p["backward_s"] > 0 for p in profile["params"])
    assert profile["forward_s"] > 0 and profile["optimizer_s"] > 0 and profile["iterations"] == 6
    assert profile["batch_size"] == 8 and profile["workload"] == "tagger"  # the DataLoader's, the script's name
    host = profile["extra"]["host"]
    assert len(host["load_before"]) == len(host["load_after"]) == 3 and host["cpus"] >= 1
    assert host["steps"] == 6 and host["wall_s"] > 0 and host["cpu_s"] > 0
    assert 0 < host["step_cpu_s"] <= host["cpu_s"] and 0 < host["step_wall_s"] <= host["wall_s"]
    assert host["busy"] == ("warning" in host) == (host["cpu_per_wall"] < BUSY_BELOW)


def test_steps_that_wait_are_flagged_on_stderr_and_in_the_profile(tmp_path) -> None:
    profile, stderr = record(tmp_path, "--nap", "0.03")
    host = profile["extra"]["host"]
    assert host["busy"] and host["cpu_per_wall"] < 0.5
    lines = [line for line in stderr.splitlines() if "warning" in line]
    assert len(lines) == 1 and "busy" in lines[0] and host["warning"] in lines[0]


def test_bad_uses_are_one_line_errors(tmp_path, capsys) -> None:
    plain = tmp_path / "plain.py"
    plain.write_text("import torch\nprint(torch.nn.Linear(2, 2)(torch.ones(2)).sum().item())\n")
    out = str(tmp_path / "p.json")
    for argv, message in (
            (["--script", str(plain)], "built no DistributedDataParallel model"),
            (["--script", str(tmp_path / "none.py")], "no such file"),
            (["--script", str(plain), "--workload", "deepfm"], "one of them"),
            (["--script", str(plain), "--device", "cpu"], "--device: not with --script"),
            (["--workload", "deepfm", "--", "--x"], "unexpected argument")):
        assert main(["layers", "record", "-o", out, *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (argv, err)


def test_a_built_in_workloads_profile_has_the_hosts_figures_too() -> None:
    from zensim.trace.capture.workloads import make_workload
    from zensim.train.record import record_workload

    profile = record_workload(make_workload("digits-cnn", 8, 0, None), "cpu", iterations=2, warmup=1)
    host = profile.extra["host"]
    assert host["steps"] == 2 and host["wall_s"] > 0 and host["cpu_s"] > 0 and len(host["load_before"]) == 3
    assert host["busy"] == ("warning" in host) == (host["cpu_per_wall"] < BUSY_BELOW)
