"""Where `zensim_hook`'s time goes inside real DDP training: run a training script with the hook and
the stage meter of every bucket's scheme run (`run_ranks(timed=True)`: per stage the pre / comm / post
wall and CPU seconds of the hook's thread), plus the CPU of the whole synchronization and of the scheme's
run; each rank writes them as JSON to $ZSIM_HOOK_STAGES/rank<r>.json when the script ends.

    ZSIM_HOOK_STAGES=/tmp/stages zensim emulate --ranks 8 --bandwidth 25mbit --script benchmarks/ddp_hook_stages.py \\
        -- zen benchmarks/recsys_ddp.py --items 32768 --users 4096 --dim 16 --batch 256 --samples 24576

The first argument is the scheme, the rest the script and its arguments (docs/ddp.md reads the output).
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
import time
from pathlib import Path

from torch.nn.parallel import DistributedDataParallel

import zensim.ddp.hook as hook_module
from zensim.ddp import zensim_hook

totals = {"calls": 0, "sync_cpu_s": 0.0, "run_cpu_s": 0.0, "stage_wall_s": [], "stage_cpu_s": []}


def timed_run_ranks(*args, **kwargs):
    """The hook's run_ranks with the stage meter on; per call the (stage, pre/comm/post) seconds."""
    c0 = time.thread_time()
    out = run_ranks(*args, **{**kwargs, "timed": True})
    totals["run_cpu_s"] += time.thread_time() - c0
    meter = out.context.meter
    totals["stage_wall_s"].append(meter.wall.sum(axis=0).tolist())  # one local rank: (stages, 3)
    totals["stage_cpu_s"].append(meter.cpu.sum(axis=0).tolist())
    return out


def timed_synchronize(self, *args):
    """The hook's whole synchronization of a bucket, its CPU counted."""
    c0 = time.thread_time()
    try:
        return synchronize(self, *args)
    finally:
        totals["sync_cpu_s"] += time.thread_time() - c0
        totals["calls"] += 1


def init(self, *args, **kwargs):
    """DDP's constructor, then the hook registered on the model (every rank at the same point)."""
    ddp_init(self, *args, **kwargs)
    self.register_comm_hook(None, zensim_hook(SCHEME))


def save() -> None:
    """This rank's figures, as JSON."""
    folder = Path(os.environ["ZSIM_HOOK_STAGES"])
    (folder / f"rank{os.environ.get('RANK', '0')}.json").write_text(json.dumps(totals))


SCHEME, script = sys.argv[1], sys.argv[2]
run_ranks, synchronize, ddp_init = hook_module.run_ranks, hook_module.ZensimHook.synchronize, DistributedDataParallel.__init__
hook_module.run_ranks = timed_run_ranks
hook_module.ZensimHook.synchronize = timed_synchronize
DistributedDataParallel.__init__ = init
atexit.register(save)
sys.argv = sys.argv[2:]
runpy.run_path(script, run_name="__main__")
