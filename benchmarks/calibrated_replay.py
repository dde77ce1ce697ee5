"""Replay speed of validation's calibrated set-up: what `zensim validate` simulates after its emulation.

Every scheme's message log of one trace iteration at n ranks, with every step's local work measured in
this process (emulate.simulate.scheme_logs), replayed under a zensim-profile/1 profile by fifo and
maxmin with the local work as measured and at the profile's costs per element, all ranks on one host
(emulate.simulate.sim_parts, as emulate.validate does): exchange CPU, rendezvous, shared host
processors and the host efficiency all on. Prints per part the CPU seconds of the replays alone,
whether a compiled loop applied to each model, the sum of the makespans (the same on every code
version that gives the same times) and the load averages. `--nic-efficiency 1:0.95,15:0.6` adds a NIC
efficiency table (eff by flows on a NIC, zensim.net.profile.NicEfficiency) to the profile.

The logs are built once and kept in `--logs` (a pickle, made if absent, not timed), so that code
versions compared A B A B replay the very same logs (measured work differs from one build to the next).

    flock /tmp/zsim-bench.lock .venv/bin/python benchmarks/calibrated_replay.py --trace /tmp/zfid-val.zt \\
        --profile docs/validation-data/profile-25mbit-n16.json --logs /tmp/val-logs-n16.pkl
    (--ranks 64 --schemes zen,sparcml,dense-allreduce on a trace of 64 workers: the profile at a size no
    emulation reaches)
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
from dataclasses import replace
from pathlib import Path

from emulate.simulate import scheme_logs, sim_parts
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.network import Network
from zensim.net.profile import NicEfficiency, load_profile
from zensim.net.replay import compiled
from zensim.net.topology import ClusterSpec
from zensim.schemes import all_schemes
from zensim.trace import Trace


def main() -> None:
    """Build or load the logs, replay them as the validation does, print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--logs", required=True, help="pickle of the logs: read if it exists, else built and written")
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--iteration", type=int, default=0)
    ap.add_argument("--schemes", default="all", help="all, or a comma list (when the logs are built)")
    ap.add_argument("--nic-efficiency", help="K:EFF,... a NIC efficiency table added to the profile")
    args = ap.parse_args()
    nic = None
    if args.nic_efficiency:
        try:
            nic = NicEfficiency(tuple((int(k), float(e)) for k, e in (p.split(":") for p in args.nic_efficiency.split(","))))
        except ValueError as err:
            ap.error(f"--nic-efficiency {args.nic_efficiency}: {err} (K:EFF,..., K >= 1, 0 < EFF <= 1)")
    path = Path(args.logs)
    if path.exists():
        logs = pickle.loads(path.read_bytes())
    else:
        names = all_schemes() if args.schemes == "all" else args.schemes.split(",")
        logs = scheme_logs(Trace.open(args.trace), args.iteration, args.ranks, names, {}, repeats=1)
        path.write_bytes(pickle.dumps(logs))
    profile = load_profile(args.profile)
    if nic is not None:
        profile = replace(profile, nic_efficiency=nic)
    print(f"load before: {os.getloadavg()}")
    cluster = ClusterSpec(args.ranks, 1, profile.links["nic_bandwidth"], nic_latency=profile.links["nic_latency"])
    for measured in (True, False):
        costs = Costs.of(cluster, profile, measured_work=measured)
        applies = {m: compiled(Network(costs, m)) is not None for m in MODELS}
        cpu = time.process_time()
        parts = sim_parts(logs, profile, measured_work=measured)
        cpu = time.process_time() - cpu
        total = {m: sum(p[m]["time"] for p in parts.values()) for m in MODELS}
        print(f"{'measured work' if measured else 'per-element work'}: {len(logs)} schemes x {len(MODELS)} models, "
              f"replay CPU {cpu:.2f} s, compiled {applies}, makespan sums {total}")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
