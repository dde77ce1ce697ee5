"""`zensim capture --hook SCRIPT`: run an unmodified training script with the recording hook.

Every rank (started by torchrun, or a single process) runs the script in-process; while it runs,
`DistributedDataParallel.__init__` is wrapped so that the first DDP model the script builds gets
`record_ddp` with the command line's options. Each rank writes its shard; merge them with
`zensim trace merge`.
"""

from __future__ import annotations

import gc
import runpy
import sys
from pathlib import Path
from typing import Any

from torch.nn.parallel import DistributedDataParallel

from zensim.errors import ConfigError
from zensim.trace.capture.hook import DDPRecorder, record_ddp


def run_hooked(script: str, script_args: list[str], path: str, iterations: int, **options: Any) -> DDPRecorder:
    """Run `script` as __main__ with `script_args`, recording its first DDP model; returns the recorder."""
    if not Path(script).is_file():
        raise ConfigError(f"--hook {script}: no such file")
    recorders: list[DDPRecorder] = []
    original = DistributedDataParallel.__init__

    def init(self: DistributedDataParallel, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if not recorders:
            recorders.append(record_ddp(self, path, iterations, **options))

    saved_argv = sys.argv
    DistributedDataParallel.__init__ = init  # type: ignore[method-assign]
    sys.argv = [script, *script_args]
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException:  # an error in the script, Ctrl-C or SIGTERM: no shard and no temporary file left
        for recorder in recorders:
            recorder.abort()
        raise
    finally:
        DistributedDataParallel.__init__ = original  # type: ignore[method-assign]
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
