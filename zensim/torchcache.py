"""torch's compile cache folder, which zensim never uses, left where it was (issue 26, item 5).

An optimizer's constructor (and its `step()`) imports torch._dynamo, and that import creates torch's
compile cache folder, $TMPDIR/torchinductor_$USER (or $TORCHINDUCTOR_CACHE_DIR), empty, and sets
TORCHINDUCTOR_CACHE_DIR in the process's environment. zensim compiles nothing with torch, so the Python
entry points that train a model of zensim's (the converge and selection loops, capture's virtual workers,
layer recording) make its optimizer through `optimizer_of`, which first imports torch._dynamo through
`import_dynamo`: that removes the folder again when the import made it, and restores the variable. torch
makes the folder again whenever something compiles (its cache functions create it on each call).
zensim_hook cannot: DistributedDataParallel's constructor imports torch._dynamo itself, before a hook
exists, in any DDP script, zensim or not (docs/ddp.md). The command line points TORCHINDUCTOR_CACHE_DIR at
a folder of its own run, removed at exit (`run_folder`), which covers a user's script that a command runs
(its processes inherit the variable). Processes that may outlive the command's own cleanup get a folder
that their own cleanup removes instead (`for_children`: an emulation's ranks, in its run folder, which the
reaper removes when the command is killed with SIGKILL)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

VARIABLE = "TORCHINDUCTOR_CACHE_DIR"


def _prefix() -> str:
    """The path every folder `run_folder` names in this process begins with."""
    return os.path.join(tempfile.gettempdir(), f"zensim-torch-{os.getpid()}-")


@contextlib.contextmanager
def run_folder() -> Iterator[None]:
    """torch's compile cache folder in a folder of this run, removed with it. An optimizer (or DDP) imports
    torch._dynamo, which creates $TMPDIR/torchinductor_$USER (TORCHINDUCTOR_CACHE_DIR's default) and leaves it
    behind; zensim compiles nothing with torch, so nothing in it is worth keeping. The folder is named, not
    made: torch makes it if something imports torch._dynamo, so a run killed before (SIGKILL runs no code of
    ours) leaves nothing. A TORCHINDUCTOR_CACHE_DIR set by the user is kept; child processes (ranks, workers)
    inherit the variable."""
    if VARIABLE in os.environ:
        yield
        return
    folder = _prefix() + secrets.token_hex(4)
    os.environ[VARIABLE] = folder
    try:
        yield
    finally:
        os.environ.pop(VARIABLE, None)  # torch sets it too, to the same folder
        shutil.rmtree(folder, ignore_errors=True)


def for_children(folder: str) -> dict[str, str]:
    """The environment that makes `folder` the compile cache folder of child processes whose own cleanup
    removes `folder` (module docstring): {VARIABLE: folder}, or {} if the user set TORCHINDUCTOR_CACHE_DIR
    (then it is theirs, kept as `run_folder` keeps it)."""
    current = os.environ.get(VARIABLE)
    return {} if current is not None and not current.startswith(_prefix()) else {VARIABLE: folder}


def import_dynamo() -> None:
    """Import torch._dynamo (once a process) leaving no compile cache folder and no variable behind
    (module docstring); a folder that was there before, or that is not empty after, is kept."""
    if "torch._dynamo" in sys.modules:
        return
    variable = os.environ.get(VARIABLE)
    # the folder's parent: importing torch's function for the default folder would import torch._dynamo
    parent = os.path.dirname(os.path.abspath(variable)) if variable else tempfile.gettempdir()
    before = _entries(parent)
    import torch._dynamo  # noqa: F401  (the import is the point)

    folder = os.environ.get(VARIABLE)  # torch sets it to the folder it made
    if variable is None:
        os.environ.pop(VARIABLE, None)
    else:
        os.environ[VARIABLE] = variable
    if folder and os.path.dirname(folder) == parent and os.path.basename(folder) not in before:
        try:
            os.rmdir(folder)
        except OSError:  # not empty (another process wrote in it meanwhile) or already gone
            pass


def optimizer_of(workload: Any) -> Any:
    """`workload.optimizer()` (a torch optimizer), made after `import_dynamo`."""
    import_dynamo()
    return workload.optimizer()


def _entries(folder: str) -> set[str]:
    """The names in `folder` (none if it cannot be read)."""
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()
