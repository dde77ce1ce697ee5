"""Run a user's unmodified training script in this process, with callbacks on what it builds.

`zensim capture --hook` and `zensim layers record --script` both run the script as `__main__` (its
arguments in `sys.argv`) while `DistributedDataParallel.__init__` and `DataLoader.__init__` are
wrapped: the caller hears of every DDP model and every DataLoader's batch size the script builds,
and attaches its recorder (and may rewrite a DataLoader's arguments first). `one_rank_world` gives
a script that initializes torch.distributed from torchrun's variables a world of one process.
Everything is restored afterwards, whatever the script raised.
"""

from __future__ import annotations

import contextlib
import gc
import os
import runpy
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader

from zensim.errors import ConfigError


def check_script(script: str, what: str) -> None:
    """ConfigError unless `script` is a file (`what`: the option that named it)."""
    if not Path(script).is_file():
        raise ConfigError(f"{what} {script}: no such file")


def batch_size_of(given: int | None, loaders: list[int | None]) -> tuple[int | None, str]:
    """(batch size, where it comes from): the one given, else the DataLoaders' if they all agree."""
    if given is not None:
        return given, "--batch-size"
    sizes = set(loaders)
    if len(sizes) == 1 and None not in sizes:
        return sizes.pop(), "DataLoader"
    return None, "unknown (no DataLoader with a batch_size before the first recorded iteration, or several sizes)"


LoaderArgs = Callable[[tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]]


def run_script(script: str, script_args: list[str], on_ddp: Callable[[DistributedDataParallel], None],
               on_loader: Callable[[int | None], None], loader_args: LoaderArgs | None = None) -> None:
    """Run `script` as __main__ with `script_args`; `on_ddp(model)` after each DistributedDataParallel
    it builds, `on_loader(batch_size)` after each DataLoader; `loader_args(args, kwargs)`, if given,
    returns the arguments each DataLoader is built with instead of the script's."""
    ddp_init, loader_init = DistributedDataParallel.__init__, DataLoader.__init__

    def init(self: DistributedDataParallel, *args: Any, **kwargs: Any) -> None:
        ddp_init(self, *args, **kwargs)
        on_ddp(self)

    def init_loader(self: DataLoader, *args: Any, **kwargs: Any) -> None:
        if loader_args is not None:
            args, kwargs = loader_args(args, kwargs)
        loader_init(self, *args, **kwargs)
        on_loader(self.batch_size)

    saved_argv = sys.argv
    DistributedDataParallel.__init__ = init  # type: ignore[method-assign]
    DataLoader.__init__ = init_loader  # type: ignore[method-assign]
    sys.argv = [script, *script_args]
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        DistributedDataParallel.__init__ = ddp_init  # type: ignore[method-assign]
        DataLoader.__init__ = loader_init  # type: ignore[method-assign]
        sys.argv = saved_argv
        # free the script's DDP model and its gloo work objects now: left to interpreter
        # finalization, gloo's threads release tensors without a live interpreter (SIGABRT, seen
        # as 'terminate called without an active exception' once in ~10 runs)
        gc.collect()


@contextlib.contextmanager
def one_rank_world(why: str) -> Iterator[None]:
    """torchrun's variables for a world of one process while the block runs, where they are absent;
    ConfigError for a world of several (`why` says why the caller needs one process)."""
    world = os.environ.get("WORLD_SIZE", "1")
    if world != "1":
        raise ConfigError(f"--script: WORLD_SIZE is {world}; {why}")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    added = {key: value for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"),
                                           ("LOCAL_WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1"),
                                           ("MASTER_PORT", str(port))) if key not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)
