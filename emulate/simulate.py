"""The simulator side of a comparison: message logs of the schemes on a trace, timed under link figures.

The same stage programs and the same per-rank data as the emulation (zensim.trace.values.worker_chunk), run
in one process with every step's CPU time measured (emulate.stepcost); the logs are timed by
zensim.net on n machines of one GPU each behind one switch, every NIC at the profile's bandwidth and
latency, NIC and host efficiency; local work at the profile's costs per element or as measured;
with the profile's `host_cores`, the local work of all ranks shares that many processors, as all
emulated ranks run on this one host.
"""

from __future__ import annotations

import numpy as np
from tqdm import tqdm

from emulate.stepcost import timed_log
from emulate.summary import comm_part
from zensim.net.costs import Costs
from zensim.net.models import MODELS
from zensim.net.profile import Profile
from zensim.net.replay import replay
from zensim.net.topology import ClusterSpec
from zensim.run.log import MessageLog
from zensim.schemes import build_scheme, needs_profile
from zensim.trace import Trace
from zensim.trace.values import worker_chunk


def scheme_logs(trace: Trace, iteration: int, n: int, schemes: list[str], options: dict,
                repeats: int = 3) -> dict[str, MessageLog]:
    """The message log of every scheme on ranks 0..n-1 of `iteration`, with the local work of every
    step measured in this process (emulate.stepcost; results checked against the dense sum)."""
    chunks = [worker_chunk(trace, iteration, w) for w in range(n)]
    return {name: timed_log(build_scheme(name, n, trace.numel, profile=chunks if needs_profile(name) else None,
                                         **options), chunks, repeats)
            for name in tqdm(schemes, desc=f"simulate n={n}", unit="scheme", leave=False, disable=None)}


def sim_parts(logs: dict[str, MessageLog], profile: Profile, models: tuple[str, ...] = tuple(MODELS),
              measured_work: bool = False) -> dict[str, dict[str, dict]]:
    """Per scheme and sharing model under `profile` (its nic_bandwidth and nic_latency, NIC and host
    efficiency, host cores; all ranks on one host): {"time": makespan, "comm": communication part,
    "comm_stages": per stage} (emulate.summary.comm_part of the replay's waits for messages). Local
    work at the profile's costs per element, or with `measured_work` as each log measured it
    (emulate.stepcost) x the profile's `cpu_slowdown`."""
    n = next(iter(logs.values())).n if logs else 1
    cluster = ClusterSpec(machines=n, gpus_per_machine=1, nic_bandwidth=profile.links["nic_bandwidth"],
                          nic_latency=profile.links["nic_latency"])
    costs = Costs.of(cluster, profile, measured_work=measured_work)
    one_host = np.zeros(n, dtype=np.int64)
    out: dict[str, dict[str, dict]] = {}
    for name, log in logs.items():
        out[name] = {}
        for m in models:
            timing = replay(log, costs, m, host_of_rank=one_host)
            comm, stages = comm_part(timing.comm_wait)
            out[name][m] = {"time": timing.makespan, "comm": comm, "comm_stages": stages}
    return out


def sim_times(logs: dict[str, MessageLog], profile: Profile, models: tuple[str, ...] = tuple(MODELS),
              measured_work: bool = False) -> dict[str, dict[str, float]]:
    """Simulated makespan per scheme and sharing model (`sim_parts`'s "time")."""
    return {name: {m: part["time"] for m, part in parts.items()}
            for name, parts in sim_parts(logs, profile, models, measured_work).items()}
