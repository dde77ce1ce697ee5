"""What made a result: zensim's version and git commit, the command or scenario, the trace's content hash.

Every record carries this (docs/results-format.md), so a CSV row found months later says which code,
which command and which exact trace produced it."""

from __future__ import annotations

import datetime
import functools
import hashlib
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import zensim

PACKAGE_DIR = Path(zensim.__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the zensim source this process runs ('+dirty' when tracked files differ), or None when
    it does not run from a git checkout (an installed wheel)."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(PACKAGE_DIR), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", str(PACKAGE_DIR.parent))
    return commit + ("+dirty" if dirty else "")


def version_line() -> str:
    """'zensim 0.1.0 (commit abc123...)': what `zensim --version` prints."""
    commit = git_commit()
    return f"zensim {zensim.__version__}" + (f" (commit {commit})" if commit else "")


def command_line(argv: list[str]) -> str:
    """The zensim command with these arguments as a shell would take it back ('zensim simulate --trace ...')."""
    return shlex.join(["zensim", *argv])


def provenance(command: str | None = None, scenario: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The provenance block of a record: version, commit, the command (or None from the Python API), the
    scenario file if any, and when (UTC)."""
    return {"zensim": zensim.__version__, "commit": git_commit(), "command": command,
            "scenario": str(scenario) if scenario is not None else None,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's content, hex (cached per path, size and modification time)."""
    st = os.stat(path)
    return _sha256(os.path.realpath(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def trace_info(trace: Any, iteration: int) -> dict[str, Any]:
    """The trace block of a record for an open `zensim.trace.Trace`: path, content hash, iteration,
    workers, elements, workload."""
    return {"path": str(trace.path), "sha256": file_sha256(trace.path), "iteration": iteration,
            "workers": trace.workers, "numel": trace.numel, "workload": trace.meta.get("workload")}


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """zensim's version and a hash of all its source files ('0.1.0+src.1a2b3c4d5e6f'): what a stored result
    or message log depends on besides its inputs (any change to the code gives another version)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode() + b"\0" + path.read_bytes())
    return f"{zensim.__version__}+src.{digest.hexdigest()[:12]}"
