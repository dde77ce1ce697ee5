"""A ClusterSpec from link figures given explicitly, a calibration profile's, or the defaults."""

from __future__ import annotations

from pathlib import Path

from zensim.errors import ConfigError
from zensim.net.profile import Profile, load_profile
from zensim.net.topology import ClusterSpec


def build_cluster(machines: int, gpus_per_machine: int, *, nic: str | float | None = None,
                  nic_latency: str | float | None = None, nvlink: str | float | None = None,
                  nvlink_latency: str | float | None = None, fabric: str = "switch", oversub: float | None = None,
                  machines_per_leaf: int | None = None, profile: str | Path | None = None,
                  names: dict[str, str] | None = None) -> tuple[ClusterSpec, Profile | None]:
    """ClusterSpec from link figures given explicitly (None = not given) > the profile's > the defaults.

    `oversub` and `machines_per_leaf` describe a leaf-spine: given with another fabric they are an
    error, not ignored. `names` maps 'oversub'/'machines_per_leaf' to the names errors use (an option
    or a scenario key; default the command line's)."""
    names = {"oversub": "--oversub", "machines_per_leaf": "--machines-per-leaf", **(names or {})}
    if fabric != "leafspine":
        for key, value in (("oversub", oversub), ("machines_per_leaf", machines_per_leaf)):
            if value is not None:
                raise ConfigError(f"{names[key]}: only for a leaf-spine fabric (fabric is {fabric!r}; "
                                  "a leaf-spine with oversubscription 1 is non-blocking)")
    prof = load_profile(profile) if profile else None
    links = dict(prof.links) if prof else {}

    def pick(key: str, given: str | float | None, default: str | float) -> str | float:
        return given if given is not None else links.get(key, default)

    spec = ClusterSpec.parse(machines, gpus_per_machine, pick("nic_bandwidth", nic, "25Gbps"),
                             pick("nic_latency", nic_latency, 0.0), pick("nvlink_bandwidth", nvlink, "300GB/s"),
                             pick("nvlink_latency", nvlink_latency, 0.0), fabric, 1.0 if oversub is None else oversub,
                             4 if machines_per_leaf is None else machines_per_leaf)
    return spec, prof
