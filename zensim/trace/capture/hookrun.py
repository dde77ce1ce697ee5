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

import os
from typing import Any

from torch.nn.parallel import DistributedDataParallel

from zensim.errors import ConfigError
from zensim.script import batch_size_of, check_script, run_script
from zensim.trace.capture.hook import DDPRecorder, check_shard_path, environment, record_ddp


def torchrun_world() -> int:
    """The world size torchrun announces ($WORLD_SIZE), 1 for a plain process."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        raise ConfigError(f"$WORLD_SIZE: not an integer ({os.environ['WORLD_SIZE']!r})") from None


def run_hooked(script: str, script_args: list[str], path: str, iterations: int, batch_size: int | None = None,
               **options: Any) -> DDPRecorder:
    """Run `script` as __main__ with `script_args`, recording its first DDP model; returns the recorder."""
    check_script(script, "--hook")
    check_shard_path(path, torchrun_world())
    recorders: list[DDPRecorder] = []
    loaders: list[int | None] = []
    provenance = {**environment(), "script": script, "script_args": script_args, **options.pop("provenance", {})}

    def on_ddp(model: DistributedDataParallel) -> None:
        if not recorders:
            recorders.append(record_ddp(model, path, iterations, provenance=provenance, **options))
            recorders[0].set_batch_size(*batch_size_of(batch_size, loaders))

    def on_loader(size: int | None) -> None:
        loaders.append(size)
        if recorders:
            recorders[0].set_batch_size(*batch_size_of(batch_size, loaders))

    try:
        run_script(script, script_args, on_ddp, on_loader)
    except BaseException:  # an error in the script, Ctrl-C or SIGTERM: no shard and no temporary file left
        for recorder in recorders:
            recorder.abort()
        raise
    if not recorders:
        raise ConfigError(f"--hook {script}: the script built no DistributedDataParallel model")
    recorder = recorders[0]
    if not recorder.done:
        recorder.abort()
        raise ConfigError(f"--hook {script}: training ran {recorder.step} iterations, "
                          f"fewer than --warmup {recorder.warmup} + --iterations {recorder.iterations}; no shard written")
    return recorder
