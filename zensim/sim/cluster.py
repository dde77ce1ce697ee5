"""A ClusterSpec from link figures given explicitly, a calibration profile's, or the defaults."""

from __future__ import annotations

from pathlib import Path

from zensim.net.profile import Profile, load_profile
from zensim.net.topology import ClusterSpec


def build_cluster(machines: int, gpus_per_machine: int, *, nic: str | float | None = None,
                  nic_latency: str | float | None = None, nvlink: str | float | None = None,
                  nvlink_latency: str | float | None = None, fabric: str = "switch", oversub: float = 1.0,
                  machines_per_leaf: int = 4, profile: str | Path | None = None) -> tuple[ClusterSpec, Profile | None]:
    """ClusterSpec from link figures given explicitly (None = not given) > the profile's > the defaults."""
    prof = load_profile(profile) if profile else None
    links = dict(prof.links) if prof else {}

    def pick(key: str, given: str | float | None, default: str | float) -> str | float:
        return given if given is not None else links.get(key, default)

    spec = ClusterSpec.parse(machines, gpus_per_machine, pick("nic_bandwidth", nic, "25Gbps"),
                             pick("nic_latency", nic_latency, 0.0), pick("nvlink_bandwidth", nvlink, "300GB/s"),
                             pick("nvlink_latency", nvlink_latency, 0.0), fabric, oversub, machines_per_leaf)
    return spec, prof
