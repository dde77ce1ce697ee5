"""Commands that train, and the Python API's entry points that train, leave nothing in $TMPDIR (issue 26,
item 5): an optimizer's first step imports torch._dynamo, which made $TMPDIR/torchinductor_$USER and left it
behind after every run (zensim.torchcache)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zensim.torchcache import run_folder

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["converge", "--workers", "4", "--iterations", "2", "--scheme", "spardl"],
                                     ["capture", "--workload", "digits-cnn", "--workers", "2", "--iterations", "2",
                                      "-o", "{out}/digits.zt"]])
def test_training_command_leaves_nothing_in_tmpdir(command, tmp_path):
    tmp, out = tmp_path / "tmp", tmp_path / "out"
    tmp.mkdir(), out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env.update(TMPDIR=str(tmp), PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "zensim.cli", *(c.format(out=out) for c in command)], env=env,
                         cwd=out, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in tmp.iterdir()) == []  # was ['torchinductor_root']


# the converge loop through its Python function
CONVERGE_SCRIPT = """
from zensim.net.costs import Costs
from zensim.replay import make_methods
from zensim.replay.training import train
from zensim.sim.cluster import build_cluster
from zensim.trace.capture.workloads import make_workload
make = lambda: make_workload("digits-cnn", None, 0, None)
numel = sum(p.numel() for p in make().model.parameters() if p.requires_grad)
cluster, profile = build_cluster(4, 1, nic="10Gbps", nic_latency="20us", profile=None)
train(make, make_methods("spardl", None, 0.01, 4, numel, 0, {}, []), 2, Costs.of(cluster, profile))
"""
# layer recording of a built-in workload through its Python function
RECORD_SCRIPT = """
from zensim.train.record import record_workload
from zensim.trace.capture.workloads import make_workload
record_workload(make_workload("digits-cnn", None, 0, None), iterations=1, warmup=0)
"""


@pytest.mark.parametrize("script", [CONVERGE_SCRIPT, RECORD_SCRIPT], ids=["converge-train", "record-workload"])
def test_python_api_leaves_nothing_in_tmpdir(script, tmp_path):
    tmp, out = tmp_path / "tmp", tmp_path / "out"
    tmp.mkdir(), out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env.update(TMPDIR=str(tmp), PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", script], env=env, cwd=out, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in tmp.iterdir()) == []  # was ['torchinductor_root']


def test_a_torch_cache_folder_that_was_there_is_kept(tmp_path):
    tmp = tmp_path / "tmp"
    (tmp / "torchinductor_mine").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env.update(TMPDIR=str(tmp), PYTHONPATH=str(ROOT), TORCHINDUCTOR_CACHE_DIR=str(tmp / "torchinductor_mine"))
    run = subprocess.run([sys.executable, "-c", "import os; from zensim.torchcache import import_dynamo; import_dynamo(); "
                          "print(os.environ['TORCHINDUCTOR_CACHE_DIR'])"], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(tmp / "torchinductor_mine")
    assert sorted(p.name for p in tmp.iterdir()) == ["torchinductor_mine"]


def test_a_torch_cache_folder_the_user_set_is_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    with run_folder():
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")


def test_the_run_own_torch_cache_folder_is_removed(monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    with run_folder():
        folder = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
        assert not folder.exists()  # named, not made: a run killed before torch makes it leaves nothing
        (folder / "sub").mkdir(parents=True)  # what torch makes when something imports torch._dynamo
        (folder / "sub" / "f").write_text("x")
    assert not folder.exists() and "TORCHINDUCTOR_CACHE_DIR" not in os.environ


def test_child_processes_get_a_folder_of_their_own_unless_the_user_set_one(monkeypatch, tmp_path):
    from zensim.torchcache import for_children

    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    assert for_children("/run/torch") == {"TORCHINDUCTOR_CACHE_DIR": "/run/torch"}
    with run_folder():  # the command's own folder: the children's replaces it
        assert for_children("/run/torch") == {"TORCHINDUCTOR_CACHE_DIR": "/run/torch"}
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    with run_folder():
        assert for_children("/run/torch") == {}
