"""The general path with messages declared a few at a time (as a SimPy process sends them): CPU seconds per
message as the messages grow, which stays flat where the sharing model's adapter takes each new message in
O(its hops) and grows where it does O(messages) work per injection (issue 27; models/fifo.py kept
rebuilding its whole state at every inject until fastfifo.declared).

On `--ranks` GPUs, one per machine (25 Gbit/s NICs, default work costs), a timer chain declares `--per`
messages of `--size` bytes between random GPUs every `--gap` seconds (Network.add_messages, then
Network.start: one group per round), `--messages` of them in all, for each size of the list; each set-up
of `--setups` replays that on its model's adapter on the network's Python event loop (zensim.net.Clock):
fifo without efficiency tables (`fifo`), with a host efficiency table (`fifo-host`), with a NIC efficiency
table (`fifo-nic`), and maxmin (`maxmin`, its default options). A small run first loads the compiled
steps, so what is timed (CPU seconds, time.process_time) is the replay. Printed per run: messages,
events, CPU seconds, microseconds per message, the makespan and a digest of every delivery time (to
compare two checkouts' results); then per set-up the growth exponent of CPU seconds between successive
sizes (log(cpu2/cpu1) / log(m2/m1): 1 is linear, 2 quadratic).

    .venv/bin/python benchmarks/few_at_a_time.py [--ranks 64] [--messages 4000,16000,64000] [--per 2]
        [--gap 2e-6] [--size 65536] [--setups fifo,fifo-host,fifo-nic,maxmin] [--seed 1]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
import time

import numpy as np

from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.profile import NicEfficiency
from zensim.net.topology import ClusterSpec

BANDWIDTH = 25e9 / 8
# the tables of tests/test_net_fastfifo.py: a host efficiency that does not level off at thousands in flight
SETUPS = {"fifo": ("fifo", {}),
          "fifo-host": ("fifo", {"host_efficiency": NicEfficiency(((1, 1.0), (64, 0.8), (4096, 0.5)))}),
          "fifo-nic": ("fifo", {"nic_efficiency": NicEfficiency(((1, 0.95), (3, 0.7), (8, 0.5)))}),
          "maxmin": ("maxmin", {})}


def run(setup: str, ranks: int, messages: int, per: int, gap: float, size: float, seed: int) -> dict:
    """Replay `messages` random messages declared `per` at a time every `gap` seconds on `setup`; its
    figures."""
    model, tables = SETUPS[setup]
    net = Network(Costs(ClusterSpec(ranks, 1, BANDWIDTH), **tables), model)
    rng = np.random.default_rng(seed)
    src = rng.integers(0, ranks, messages)
    dst = (src + rng.integers(1, ranks, messages)) % ranks  # never the sender itself
    rounds = -(-messages // per)

    def declare(i: int) -> None:
        first, stop = i * per, min((i + 1) * per, messages)
        net.start(net.add_messages(src[first:stop], dst[first:stop], np.full(stop - first, size)))
        if i + 1 < rounds:
            net.schedule(gap, declare, i + 1)

    net.schedule(0.0, declare, 0)
    c0 = time.process_time()
    net.run()
    cpu = time.process_time() - c0
    delivered = net.delivered_at[:net.count]
    return {"setup": setup, "messages": messages, "events": net.events, "cpu_s": cpu,
            "us_per_message": 1e6 * cpu / messages, "makespan": float(net.clock.now),
            "digest": hashlib.sha256(delivered.tobytes()).hexdigest()[:12]}


def sizes(text: str, option: str) -> list[int]:
    """A comma-separated list of positive integers; a one-line error naming the option otherwise."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        sys.exit(f"few_at_a_time.py: {option} {text!r}: must be positive integers separated by commas")
    return values


def main() -> None:
    """Run every set-up at every size; print the rows and the growth exponents."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--messages", default="4000,16000,64000")
    ap.add_argument("--per", type=int, default=2, help="messages declared and started together")
    ap.add_argument("--gap", type=float, default=2e-6, help="seconds between rounds")
    ap.add_argument("--size", type=float, default=65536.0, help="bytes per message")
    ap.add_argument("--setups", default="fifo,fifo-host,fifo-nic,maxmin")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    counts = sizes(args.messages, "--messages")
    setups = args.setups.split(",")
    for name in setups:
        if name not in SETUPS:
            sys.exit(f"few_at_a_time.py: --setups {name!r}: not one of {', '.join(SETUPS)}")
    if args.ranks < 2 or args.per < 1 or not args.gap >= 0 or not args.size >= 0:
        sys.exit("few_at_a_time.py: --ranks must be at least 2, --per at least 1, --gap and --size at least 0")
    print(f"{'set-up':10} {'messages':>9} {'events':>9} {'CPU s':>8} {'us/msg':>7} {'makespan s':>12} digest")
    for name in setups:
        run(name, 4, 64, 2, args.gap, args.size, args.seed)  # loads the compiled steps
        rows = [run(name, args.ranks, m, args.per, args.gap, args.size, args.seed) for m in counts]
        for r in rows:
            print(f"{name:10} {r['messages']:9d} {r['events']:9d} {r['cpu_s']:8.3f} {r['us_per_message']:7.1f} "
                  f"{r['makespan']:12.6f} {r['digest']}", flush=True)
        growth = [f"{math.log(b['cpu_s'] / a['cpu_s']) / math.log(b['messages'] / a['messages']):.2f}"
                  for a, b in zip(rows, rows[1:]) if a["cpu_s"] > 0 and b["cpu_s"] > 0]
        if growth:
            print(f"{name:10} CPU growth exponent between sizes: {' '.join(growth)}")


if __name__ == "__main__":
    main()
