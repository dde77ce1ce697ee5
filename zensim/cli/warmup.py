"""`zensim warmup`: compile zensim's numba loops ahead, into numba's on-disk cache (zensim.jit).

`make install` runs it after pip, so that a newcomer's first simulation does not spend a minute of
CPU compiling. Each loop is compiled by running it on a tiny case through the code path a real run
takes (so with the argument types a real run gives it); a loop already cached only loads.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `warmup` command."""
    cmd = subparsers.add_parser("warmup", help="compile the network loops ahead (numba; once per machine, about a "
                                               "minute of CPU), so that no later command waits for it")
    cmd.set_defaults(func=cmd_warmup)


def loops() -> list[tuple[str, Callable[[], None]]]:
    """Each compiled loop's name and a tiny run of it through the path real runs take."""
    import numpy as np

    from zensim.net.costs import Costs
    from zensim.net.network import Network
    from zensim.net.replay import LogReplay, replay
    from zensim.run.log import Message, MessageLog
    from zensim.sim.cluster import build_cluster
    from zensim.layout import dense_ring_log
    from zensim.sparsify.kernels import at_least

    costs = Costs.of(build_cluster(2, 2, nic="25Gbps")[0])
    log = dense_ring_log(2, 2, 1024, "flat")

    # the general path's steps, each taken: an all-to-all of unequal flows, every component batched
    # (shared flows solved, departures deferred and checked)
    shared = MessageLog(4, 1, [Message(0, r, d, 10**4 * (1 + r + d), "coo")
                               for r in range(4) for d in range(4) if d != r])

    def general(model: str, log: MessageLog, options: dict | None = None) -> None:
        """`log` on the general path: the model's compiled steps driven from the Python event loop."""
        net = Network(costs, model, options)
        LogReplay(net, log).start()
        net.run()

    return [("fifo network loop (zensim.net.fastfifo)", lambda: replay(log, costs, "fifo")),
            ("fifo steps (zensim.net.fastfifo's steps)", lambda: general("fifo", log)),
            ("maxmin network loop (zensim.net.fastmaxmin)", lambda: replay(log, costs, "maxmin")),
            ("maxmin solver and steps (zensim.net.waterfill, fastmaxmin's steps)",
             lambda: general("maxmin", shared, {"exact_flows": 0})),
            ("threshold kernel (zensim.sparsify.kernels)",
             lambda: [at_least(np.ones(4, dtype), 0.5) for dtype in (np.float32, np.float64)])]


def cmd_warmup(args: argparse.Namespace) -> int:
    """Compile (or load) every loop, saying which and how long each took."""
    print("warmup: compiling zensim's numba loops into numba's cache (once per machine; cached ones only load)",
          flush=True)
    start = time.perf_counter()
    for name, run in loops():
        began = time.perf_counter()
        run()
        print(f"warmup: {name}: {time.perf_counter() - began:.1f} s", flush=True)
    print(f"warmup: done in {time.perf_counter() - start:.1f} s", flush=True)
    return 0
