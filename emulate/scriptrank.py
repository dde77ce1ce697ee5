"""One rank of `zensim emulate --script`: run the user's training script as torchrun would, and time it.

`python -m emulate.scriptrank --out FILE -- SCRIPT ARGS` runs SCRIPT as __main__ with ARGS in this
process (the launcher has set torchrun's environment: RANK, WORLD_SIZE, MASTER_ADDR, ...). While it
runs, `DistributedDataParallel.__init__` is wrapped so that the first DDP model the script builds
gets a forward pre-hook stamping the clock at every forward that will synchronize gradients (not
those under `no_sync()`): iteration i runs from stamp i to stamp i+1 (data loading, forward,
backward with its gradient synchronization, optimizer step). Each stamp also takes the process's
CPU time (every thread: the script's, DDP's, gloo's, the hook's). The stamps, the script's wall time and
the bytes this rank's interface carried go to FILE as JSON. The script's own hooks, optimizer and
output are untouched. `--hook SCHEME` registers `zensim_hook(SCHEME)` on that model right after it is
built (as if the script had called `register_comm_hook(None, zensim_hook(SCHEME))`), so an unmodified
script trains with a zensim scheme; its HookStats go to FILE too.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import runpy
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from zensim.atomic import write_atomic


def interface_bytes() -> tuple[int, int] | None:
    """(tx, rx) byte counters of this rank's interface ($GLOO_SOCKET_IFNAME), None if unknown."""
    dev = os.environ.get("GLOO_SOCKET_IFNAME")
    try:
        base = f"/sys/class/net/{dev}/statistics"
        return int(Path(f"{base}/tx_bytes").read_text()), int(Path(f"{base}/rx_bytes").read_text())
    except (OSError, ValueError, TypeError):
        return None


def run_timed(script: str, args: list[str], hook: str | None = None) -> dict[str, Any]:
    """Run `script` with `args` as __main__; the clock stamps of its first DDP model's synchronizing
    forwards, its wall time and the interface bytes (see the module docstring). `hook`: a zensim
    scheme that synchronizes that model's buckets (`zensim_hook(hook)`), None for the script's own."""
    from torch.nn.parallel import DistributedDataParallel

    from zensim.ddp import zensim_hook

    stamps: list[float] = []
    cpu_stamps: list[float] = []  # the process's CPU seconds (every thread, user + system) at each stamp
    hooked: list[DistributedDataParallel] = []
    comm_hooks: list[Any] = []
    original = DistributedDataParallel.__init__

    def stamp(module: DistributedDataParallel, inputs: Any) -> None:
        if module.require_backward_grad_sync:  # False inside no_sync(): no synchronization follows
            stamps.append(time.monotonic())
            cpu_stamps.append(time.process_time())

    def init(self: DistributedDataParallel, *a: Any, **kw: Any) -> None:
        original(self, *a, **kw)
        if not hooked:
            hooked.append(self)
            self.register_forward_pre_hook(stamp)
            if hook is not None:
                comm_hooks.append(zensim_hook(hook))
                self.register_comm_hook(None, comm_hooks[0])

    wire0, t0 = interface_bytes(), time.monotonic()
    saved_argv = sys.argv
    DistributedDataParallel.__init__ = init  # type: ignore[method-assign]
    sys.argv = [script, *args]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:  # a script may end with sys.exit(0); anything else is its failure
        if exc.code not in (None, 0):
            raise
    finally:
        DistributedDataParallel.__init__ = original  # type: ignore[method-assign]
        sys.argv = saved_argv
        hooked.clear()
        gc.collect()  # free DDP's gloo work objects while the interpreter lives (see capture's hookrun)
    t1, wire1 = time.monotonic(), interface_bytes()
    out: dict[str, Any] = {"stamps": stamps, "cpu_stamps": cpu_stamps, "start": t0, "end": t1, "ddp": bool(stamps)}
    if wire0 and wire1:
        out.update(wire_tx=wire1[0] - wire0[0], wire_rx=wire1[1] - wire0[1])
    if comm_hooks:
        out["hook"] = {"scheme": hook, **asdict(comm_hooks[0].stats)}
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point of one rank (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m emulate.scriptrank", description=__doc__)
    p.add_argument("--out", required=True, help="this rank's JSON")
    p.add_argument("--hook", default=None, help="a zensim scheme synchronizing the DDP model (default: the script's own)")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    ns = p.parse_args(argv)
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    out = run_timed(ns.script, args, ns.hook)
    out.update(rank=int(os.environ.get("RANK", "0")), world=int(os.environ.get("WORLD_SIZE", "1")))
    write_atomic(ns.out, json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
