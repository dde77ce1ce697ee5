"""Whatever ends `zensim emulate` while its ranks run, nothing is left: no rank process, no run folder,
no namespace; SIGTERM / SIGHUP / SIGINT exit with 143 / 129 / 130 and one line, no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from test_emulate_cluster import WAIT, emulation_lock, needs_netns

from emulate import netns
from emulate.netns import project_host_links, project_namespaces
from emulate.shield import NOTE
from zensim.trace import LayerSpec, TensorSpec, TraceWriter

RANKS = 4


def _trace(path: Path) -> str:
    """400,000 elements: the dense all_reduce of 1.6 MB at 2 Mbit/s takes seconds."""
    numel = 400_000
    spec = TensorSpec("emb", numel=numel, layers=(LayerSpec("emb", 0, numel),))
    rng = np.random.default_rng(5)
    with TraceWriter(str(path), [spec], workers=RANKS, iterations=1, value_dtype="float32") as w:
        for k in range(RANKS):
            idx = np.unique(rng.integers(0, numel, 2000)).astype(np.int64)
            w.write(0, k, 0, idx, rng.standard_normal(len(idx)).astype(np.float32))
    return str(path)


def _start(tmp_path: Path, args: list[str] | None = None, ranks: int = RANKS,
           started: Callable[[Path], bool] | None = None) -> tuple[subprocess.Popen, Path, list[int]]:
    """`zensim emulate` (of a trace, or with `args`) in a fresh process (its run folders in a temporary
    directory of this test, torch's compile cache folder the command's own), once its ranks run
    (`started(that directory)`, default: rank 0 has joined the group); returns (process, that temporary
    directory, the rank processes' pids)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    args = args or ["--trace", _trace(tmp_path / "t.zt"), "--scheme", "zen", "--peers", "dense"]
    started = started or (lambda tmp: bool(list(tmp.glob(f"{netns.RUN_PREFIX}*/launch-*/progress"))))
    cmd = [sys.executable, "-m", "zensim.cli", "emulate", "--ranks", str(ranks), "--bandwidth", "2mbit",
           "--wait", str(WAIT), *args]
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"} | {"TMPDIR": str(tmp)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + WAIT + 120
    while not started(tmp):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    pids = [int(p) for r in range(ranks) for p in subprocess.run(
        ["ip", "netns", "pids", netns.rank_ns(r, proc.pid)], capture_output=True, text=True).stdout.split()]
    assert len(pids) == ranks
    return proc, tmp, pids


def _alive(pid: int) -> bool:
    """Whether `pid` is still a rank program (a reused pid would run something else)."""
    try:
        return b"\0emulate." in Path(f"/proc/{pid}/cmdline").read_bytes()  # emulate.rank or emulate.scriptrank
    except OSError:
        return False


def _nothing_left(proc: subprocess.Popen, tmp: Path, pids: list[int]) -> None:
    """Nothing of the run `proc` made is left (another emulation's namespaces may exist)."""
    assert not any(_alive(p) for p in pids)
    assert list(tmp.iterdir()) == []  # no run folder (nor anything else)
    assert project_namespaces(proc.pid) == [] and project_host_links() == []
    assert netns.PREFIX not in subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout


@needs_netns
@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_leave_nothing_and_exit_128_plus_the_signal(tmp_path, sig, status):
    proc, tmp, pids = _start(tmp_path)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == f"zensim: terminated by {sig.name}"
    with emulation_lock():
        _nothing_left(proc, tmp, pids)


@needs_netns
def test_a_second_ctrl_c_cannot_interrupt_the_teardown(tmp_path):
    proc, tmp, pids = _start(tmp_path)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    # Ctrl-C, then again (every 10 ms) until one has come during the teardown, which says so
    while proc.poll() is None and not any(NOTE in line for line in lines):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.01)
    assert proc.wait(timeout=60) == 130
    reader.join(timeout=10)
    err = "".join(lines)
    assert NOTE in err, err  # a later Ctrl-C came during the teardown
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "zensim: interrupted"
    with emulation_lock():
        _nothing_left(proc, tmp, pids)


@needs_netns
def test_a_killed_launcher_leaves_nothing(tmp_path):
    proc, tmp, pids = _start(tmp_path)
    proc.kill()  # SIGKILL: no code of the launcher runs; its ranks die with it, its reaper cleans
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    with emulation_lock():  # held by the reaper until it is done
        _nothing_left(proc, tmp, pids)


# a script whose ranks import torch._dynamo (as DDP's constructor does), which makes torch's compile cache
# folder, then say so and wait to be killed
DYNAMO_SCRIPT = """import os, sys, time
import torch._dynamo
open(os.path.join(sys.argv[1], "rank" + os.environ["RANK"]), "w").close()
time.sleep(600)
"""


@needs_netns
def test_a_killed_script_emulation_leaves_no_torch_cache_folder(tmp_path):
    script, marks = tmp_path / "wait.py", tmp_path / "marks"
    script.write_text(DYNAMO_SCRIPT)
    marks.mkdir()
    proc, tmp, pids = _start(tmp_path, ["--script", str(script), "--", str(marks)], ranks=2,
                             started=lambda tmp: len(list(marks.iterdir())) == 2)
    cache = [p.name for p in tmp.glob(f"{netns.RUN_PREFIX}*/torch")]  # the ranks' compile cache folder
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    with emulation_lock():
        _nothing_left(proc, tmp, pids)  # left $TMPDIR/zensim-torch-* (the command's folder) before
    assert cache == ["torch"]


def test_a_failed_rank_is_reported_with_its_own_last_line(tmp_path):
    from emulate.launch import _failure

    (tmp_path / "rank1.err").write_text(
        "[W1122 18:28:40.660621273 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved.\n"
        "Traceback (most recent call last):\nRuntimeError: boom\n"
        "[W1122 18:28:41.000000001 ProcessGroupGloo.cpp:1] Warning: a library line after it\n\n")
    (tmp_path / "rank2.err").write_text("[W1122 18:28:40.660621273 socket.cpp:207] [c10d] unrelated\n")
    assert _failure([(1, 1)], tmp_path) == "rank 1 exited with status 1: RuntimeError: boom; other ranks ended"
    # a rank killed by a signal wrote nothing about it; it is the cause, not the ranks that lost it
    assert _failure([(1, 1), (2, -9)], tmp_path) == "rank 2 was killed by signal 9 (SIGKILL); other ranks ended"
    assert _failure([(3, 2)], tmp_path) == "rank 3 exited with status 2; other ranks ended"  # no stderr file
