"""What prices a simulated run, in one object: the cluster's links and the testbed's calibrated knobs.

`Costs` carries the link rates and latencies (its `cluster`, a ClusterSpec), the local-work cost
per element (`work`), or the log's measured step times scaled by `measured_work`, and the three
properties of a testbed that the closed forms leave out: NIC efficiency by flows on the NIC, host
efficiency by flows in the whole network, and the processors a host's ranks share for local work.
Build it from a cluster and a calibration profile with `Costs.of(cluster, profile)`; every network
client (zensim.net.replay, the sharing models, the simulate/run/sweep glue, the emulator's
validation) takes this object instead of loose parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from zensim.errors import ConfigError
from zensim.net.profile import ExchangeCost, NicEfficiency, Profile, WorkCost
from zensim.net.fabrics import build_topology
from zensim.net.links import Topology
from zensim.net.topology import ClusterSpec


@dataclass(frozen=True)
class Costs:
    """Links (the cluster), local-work costs and a testbed's efficiency and processor-sharing figures.

    `work`: the local-work costs (default: the default work model, zensim.net.profile.DEFAULT_PROFILE).
    `measured_work`: None to cost local work per element with `work`; a factor f to replay the
    seconds each log measured (MessageLog.measured) times f. `nic_efficiency`, `host_efficiency`,
    `host_cores`: see zensim.net.profile (None = the ideal host of the closed forms). `rendezvous`:
    a message moves only once its receiver has posted the stage's receives (zensim.net.replay).
    `exchange`: the CPU of a stage's exchange itself (zensim.net.profile.ExchangeCost; None: free).
    `host_others`: with `host_cores`, processes outside the simulation always runnable on every host
    (another user's jobs: the mean count of runnable ones), sharing its processors with the local work
    (zensim.net.cores); 0: the host is the simulation's alone.
    """

    cluster: ClusterSpec
    work: WorkCost = field(default_factory=WorkCost.default)
    nic_efficiency: NicEfficiency | None = None
    host_efficiency: NicEfficiency | None = None
    host_cores: int | None = None
    measured_work: float | None = None
    rendezvous: bool = False
    exchange: ExchangeCost | None = None
    host_others: float = 0.0

    def __post_init__(self) -> None:
        cores = self.host_cores
        if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
            raise ConfigError(f"host_cores: must be a positive integer, got {cores!r}")
        if not 0 <= self.host_others < float("inf"):
            raise ConfigError(f"host_others: must be a number of processes >= 0, got {self.host_others!r}")
        f = self.measured_work
        if f is not None and not 0 < f < float("inf"):
            raise ConfigError(f"measured work factor: must be a positive number, got {f!r}")

    @classmethod
    def of(cls, cluster: ClusterSpec, profile: Profile | None = None, *, measured_work: bool = False) -> "Costs":
        """The cluster as given (its links already chosen: explicit options > profile > defaults, see
        zensim.sim.cluster.build_cluster) and the profile's work costs, efficiencies and host cores;
        `measured_work` replays the logs' measured step times x the profile's cpu_slowdown."""
        if profile is None:
            return cls(cluster, measured_work=1.0 if measured_work else None)
        return cls(cluster, profile.work, profile.nic_efficiency, profile.host_efficiency, profile.host_cores,
                   profile.cpu_slowdown if measured_work else None, profile.rendezvous, profile.exchange)

    def with_cluster(self, cluster: ClusterSpec) -> "Costs":
        """The same knobs on another cluster."""
        return replace(self, cluster=cluster)

    @cached_property
    def topology(self) -> Topology:
        """The cluster's links and routes (built once per Costs object)."""
        return build_topology(self.cluster)
