"""`zensim capture --hook SCRIPT`: run an unmodified training script with the recording hook.

Every rank (started by torchrun, or a single process) runs the script in-process; while it runs,
`DistributedDataParallel.__init__` is wrapped so that the first DDP model the script builds gets
`record_ddp` with the command line's options. Each rank writes its shard; merge them with
`zensim trace merge`. What can be checked without the model (the shard path for torchrun's
$WORLD_SIZE, its folder) is checked before the script starts. The shard's provenance records the
zensim command line, the script's arguments, torch's version and the per-rank batch size: the one
given (`--batch-size`), else that of the DataLoaders the script built before its first recorded
iteration if they all agree, else none (`batch_size_source` says which).
"""

from __future__ import annotations

import gc
import os
import runpy
import sys
from pathlib import Path
from typing import Any

from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader

from zensim.errors import ConfigError
from zensim.trace.capture.hook import DDPRecorder, check_shard_path, environment, record_ddp


def torchrun_world() -> int:
    """The world size torchrun announces ($WORLD_SIZE), 1 for a plain process."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        raise ConfigError(f"$WORLD_SIZE: not an integer ({os.environ['WORLD_SIZE']!r})") from None


def _batch_size(given: int | None, loaders: list[int | None]) -> tuple[int | None, str]:
    """(batch size, where it comes from) for the provenance."""
    if given is not None:
        return given, "--batch-size"
    sizes = set(loaders)
    if len(sizes) == 1 and None not in sizes:
        return sizes.pop(), "DataLoader"
    return None, "unknown (no DataLoader with a batch_size before the first recorded iteration, or several sizes)"


def run_hooked(script: str, script_args: list[str], path: str, iterations: int, batch_size: int | None = None,
               **options: Any) -> DDPRecorder:
    """Run `script` as __main__ with `script_args`, recording its first DDP model; returns the recorder."""
    if not Path(script).is_file():
        raise ConfigError(f"--hook {script}: no such file")
    check_shard_path(path, torchrun_world())
    recorders: list[DDPRecorder] = []
    loaders: list[int | None] = []
    ddp_init, loader_init = DistributedDataParallel.__init__, DataLoader.__init__
    provenance = {**environment(), "script": script, "script_args": script_args, **options.pop("provenance", {})}

    def init(self: DistributedDataParallel, *args: Any, **kwargs: Any) -> None:
        ddp_init(self, *args, **kwargs)
        if not recorders:
            recorders.append(record_ddp(self, path, iterations, provenance=provenance, **options))
            recorders[0].set_batch_size(*_batch_size(batch_size, loaders))

    def init_loader(self: DataLoader, *args: Any, **kwargs: Any) -> None:
        loader_init(self, *args, **kwargs)
        loaders.append(self.batch_size)
        if recorders:
            recorders[0].set_batch_size(*_batch_size(batch_size, loaders))

    saved_argv = sys.argv
    DistributedDataParallel.__init__ = init  # type: ignore[method-assign]
    DataLoader.__init__ = init_loader  # type: ignore[method-assign]
    sys.argv = [script, *script_args]
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException:  # an error in the script, Ctrl-C or SIGTERM: no shard and no temporary file left
        for recorder in recorders:
            recorder.abort()
        raise
    finally:
        DistributedDataParallel.__init__ = ddp_init  # type: ignore[method-assign]
        DataLoader.__init__ = loader_init  # type: ignore[method-assign]
        sys.argv = saved_argv
        # free the script's DDP model and its gloo work objects now: left to interpreter
        # finalization, gloo's threads release tensors without a live interpreter (SIGABRT, seen
        # as 'terminate called without an active exception' once in ~10 runs)
        gc.collect()
    if not recorders:
        raise ConfigError(f"--hook {script}: the script built no DistributedDataParallel model")
    recorder = recorders[0]
    if not recorder.done:
        recorder.abort()
        raise ConfigError(f"--hook {script}: training ran {recorder.step} iterations, "
                          f"fewer than --warmup {recorder.warmup} + --iterations {recorder.iterations}; no shard written")
    return recorder
