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
a folder of its own run, removed at exit (zensim.cli), which covers a user's script that a command runs
(its ranks inherit the variable)."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

VARIABLE = "TORCHINDUCTOR_CACHE_DIR"


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
