"""Start the rank program in every namespace of a LocalCluster, watch it, gather each rank's JSON.

A rank that exits with a non-zero status (or is killed) ends the run: the launcher kills the other
ranks at once (they would otherwise wait on their dead peer) and raises RankFailed naming the rank
and, if it exited with a status, the last line it wrote on stderr itself (not a log line of the
c10d/gloo library). The cluster's context manager then tears everything down, run folder included.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from emulate.netns import LocalCluster, rank_addr, rank_dev
from zensim.errors import ZensimError
from zensim.torchcache import for_children

MASTER_PORT = 29513
_PR_SET_PDEATHSIG = 1


class RankFailed(ZensimError):
    """A rank process died or the run timed out; the other ranks were ended."""


def _die_with_parent() -> None:
    """In the child before exec: get SIGKILL if the launcher dies, so no rank outlives it."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


# c10's log lines, e.g. `[W1122 18:28:40.660621273 socket.cpp:207] [c10d] The hostname of ...`: torch's
# library code logs them on its own; they are rarely why a rank ended
_LIBRARY_LOG = re.compile(r"^\[[IWEF]\d{4} ")


def _last_line(path: Path) -> str:
    """The last line a rank wrote on stderr itself (the error it died with, usually), passing over
    torch's library log lines; the last of those if there is nothing else."""
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    own = [ln for ln in lines if not _LIBRARY_LOG.match(ln)]
    return (own or lines or [""])[-1]


def _kill(procs: list[subprocess.Popen]) -> None:
    """SIGKILL every still-running rank (each leads its own process group) and reap it."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _read_progress(path: Path) -> tuple[int, int]:
    """(done, total) from the progress file rank 0 keeps, or (0, 0) before it exists."""
    try:
        done, total = path.read_text().split()
        return int(done), int(total)
    except (OSError, ValueError):
        return 0, 0


def rank_env(r: int) -> dict[str, str]:
    """What every rank process gets besides our environment: gloo bound to the rank's interface, one
    thread per process (n ranks share this host's cores), unbuffered output."""
    return dict(os.environ, GLOO_SOCKET_IFNAME=rank_dev(r), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                PYTHONUNBUFFERED="1")


def launch_local(cluster: LocalCluster, rank_args: list[str], timeout: float = 600.0,
                 desc: str = "emulate", on_start=None) -> list[dict]:
    """Run `python -m emulate.rank <rank_args>` on every rank of `cluster`; return the ranks' JSON outputs.

    `on_start(procs, workdir)` is called once every rank process has been started (tests use it).
    """
    def command(r: int, work: Path) -> list[str]:
        return [sys.executable, "-m", "emulate.rank", "--rank", str(r), "--world", str(cluster.n),
                "--master-addr", rank_addr(0), "--master-port", str(MASTER_PORT), "--out", str(work / f"rank{r}.json"),
                "--progress", str(work / "progress"), *rank_args]

    return launch(cluster, command, rank_env, timeout, desc, on_start)


def launch(cluster: LocalCluster, command: Callable[[int, Path], list[str]], env: Callable[[int], dict[str, str]],
           timeout: float = 600.0, desc: str = "emulate", on_start=None, logs: Path | None = None) -> list[dict]:
    """Run `command(r, workdir)` in rank r's namespace with environment `env(r)`, for every rank; return
    the JSON each rank wrote to `workdir/rank{r}.json`. Each rank's stdout and stderr go to
    `workdir/rank{r}.err` (copied into `logs` as `rank{r}.log` at the end, whatever the end, if given).
    torch's compile cache folder of the ranks (a script's ranks import torch._dynamo) is in the cluster's
    run folder, which every end removes, the reaper's after a SIGKILL included (zensim.torchcache).
    """
    n = cluster.n
    with tempfile.TemporaryDirectory(prefix="launch-", dir=cluster.run_dir) as tmp:
        work = Path(tmp)
        procs: list[subprocess.Popen] = []
        torch_cache = for_children(str(cluster.run_dir / "torch"))
        try:
            for r in range(n):
                with open(work / f"rank{r}.err", "wb") as err:
                    procs.append(subprocess.Popen([*cluster.exec_prefix(r), *command(r, work)],
                                                  env=env(r) | torch_cache, stdin=subprocess.DEVNULL, stdout=err,
                                                  stderr=subprocess.STDOUT, start_new_session=True,
                                                  preexec_fn=_die_with_parent))
            if on_start is not None:
                on_start(procs, work)
            _watch(procs, work, timeout, desc)
        finally:
            _kill(procs)
            for r in range(len(procs) if logs is not None else 0):
                with contextlib.suppress(OSError):
                    shutil.copyfile(work / f"rank{r}.err", logs / f"rank{r}.log")
        return [json.loads((work / f"rank{r}.json").read_text()) for r in range(n)]


def _failure(failed: list[tuple[int, int]], work: Path) -> str:
    """Why the run ended, from the ranks found failed in one poll: a rank killed by a signal first (the
    others, if any, failed for want of it), else the lowest rank."""
    rank, code = min(failed, key=lambda rc: (rc[1] > 0, rc[0]))
    if code < 0:  # killed: whatever it last wrote is not why it ended
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "an unknown signal"
        return f"rank {rank} was killed by signal {-code} ({name}); other ranks ended"
    last = _last_line(work / f"rank{rank}.err")
    return f"rank {rank} exited with status {code}" + (f": {last}" if last else "") + "; other ranks ended"


def _watch(procs: list[subprocess.Popen], work: Path, timeout: float, desc: str) -> None:
    """Wait for all ranks; on the first failure or at the timeout, raise RankFailed."""
    deadline = time.monotonic() + timeout
    bar = tqdm(total=0, desc=desc, unit="run", file=sys.stderr, leave=False, disable=None)
    try:
        while True:
            codes = [p.poll() for p in procs]
            failed = [(r, code) for r, code in enumerate(codes) if code not in (None, 0)]
            if failed:
                raise RankFailed(_failure(failed, work))
            if all(code == 0 for code in codes):
                return
            if time.monotonic() > deadline:
                raise RankFailed(f"emulation timed out after {timeout:.0f} s; all ranks ended")
            done, total = _read_progress(work / "progress")
            if total and (bar.total != total or bar.n != done):
                bar.total = total
                bar.n = done
                bar.refresh()
            time.sleep(0.05)
    finally:
        bar.close()
