"""The simulator side of a comparison: message logs of the schemes on a trace, timed under link figures.

The same stage programs and the same per-rank data as the emulation (emulate.driver.rank_chunk),
run by the in-memory driver; the logs are timed by zensim.net on n machines of one GPU each behind
one switch, every NIC at the profile's bandwidth and latency (and efficiency by concurrent flows),
local work at its costs; with the profile's `host_cores`, the local work of all ranks shares that many
processors, as all emulated ranks run on this one host.
"""

from __future__ import annotations

import numpy as np

from emulate.driver import rank_chunk
from emulate.schemes import build_program
from zensim.net.engine import MODELS, replay
from zensim.net.profile import Profile
from zensim.net.topology import ClusterSpec, Topology
from zensim.schemes.driver import run_scheme
from zensim.schemes.log import MessageLog
from zensim.trace import Trace


def scheme_logs(trace: Trace, iteration: int, n: int, schemes: list[str], options: dict) -> dict[str, MessageLog]:
    """The in-memory driver's message log of every scheme on ranks 0..n-1 of `iteration` (results checked
    against the dense sum)."""
    chunks = [rank_chunk(trace, iteration, w) for w in range(n)]
    return {name: run_scheme(build_program(name, n, trace.numel, options, chunks), chunks, check=True).log
            for name in schemes}


def sim_times(logs: dict[str, MessageLog], profile: Profile, models: tuple[str, ...] = MODELS) -> dict[str, dict[str, float]]:
    """Simulated makespan per scheme and sharing model under `profile` (its nic_bandwidth and nic_latency,
    work costs, NIC efficiency and host cores; all ranks on one host)."""
    n = next(iter(logs.values())).n if logs else 1
    topo = Topology(ClusterSpec(machines=n, gpus_per_machine=1, nic_bandwidth=profile.links["nic_bandwidth"],
                                nic_latency=profile.links["nic_latency"]))
    one_host = np.zeros(n, dtype=np.int64)
    return {name: {m: replay(log, topo, model=m, work=profile.work, nic_efficiency=profile.nic_efficiency,
                             host_cores=profile.host_cores, host_of_rank=one_host).makespan for m in models}
            for name, log in logs.items()}
