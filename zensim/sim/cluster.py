"""A ClusterSpec from link figures given explicitly, a calibration profile's, a machine preset's, or the
defaults."""

from __future__ import annotations

from pathlib import Path

from zensim.errors import ConfigError
from zensim.net.presets import NVLINK_LATENCY, TRANSPORT_LATENCY, machine_preset
from zensim.net.profile import Profile, load_profile
from zensim.net.topology import ClusterSpec, parse_tiers


def build_cluster(machines: int, gpus_per_machine: int | None = None, *, nic: str | float | None = None,
                  nic_latency: str | float | None = None, nvlink: str | float | None = None,
                  nvlink_latency: str | float | None = None, fabric: str = "switch", oversub: float | None = None,
                  machines_per_leaf: int | None = None, profile: str | Path | None = None,
                  preset: str | None = None, nics: str | None = None, transport: str | None = None,
                  tiers: str | None = None, names: dict[str, str] | None = None) -> tuple[ClusterSpec, Profile | None]:
    """ClusterSpec from figures given explicitly (None = not given) > the profile's > the preset's
    (zensim.net.presets) > the defaults: 1 GPU per machine, 25Gbps and one NIC per machine, tcp, NIC
    latency by transport (tcp 25us, rdma 2us), NVLink 300GB/s and 1us.

    `oversub` and `machines_per_leaf` describe a leaf-spine, `tiers` ('4:1,8:2': per tier from the
    bottom, members per group and oversubscription) a fat-tree: given with another fabric they are an
    error, not ignored. `names` maps 'oversub'/'machines_per_leaf'/'tiers'/'preset' to the names errors
    use (an option or a scenario key; default the command line's)."""
    names = {"oversub": "--oversub", "machines_per_leaf": "--machines-per-leaf", "tiers": "--tiers",
             "preset": "--preset", **(names or {})}
    if fabric != "leafspine":
        for key, value in (("oversub", oversub), ("machines_per_leaf", machines_per_leaf)):
            if value is not None:
                raise ConfigError(f"{names[key]}: only for a leaf-spine fabric (fabric is {fabric!r}; "
                                  "a leaf-spine with oversubscription 1 is non-blocking"
                                  + ("; a fat-tree gives each tier's in its tiers)" if fabric == "fattree" else ")"))
    if (tiers is not None) != (fabric == "fattree"):
        raise ConfigError(f"{names['tiers']}: only for a fat-tree fabric (fabric is {fabric!r})" if tiers is not None
                          else f"{names['tiers']}: a fat-tree needs its tiers, e.g. 4:1,8:2 (leaves of 4 machines, "
                          "pods of 8 leaves with 2:1 uplinks)")
    tier_list = parse_tiers(tiers, names["tiers"]) if tiers is not None else ()
    base = machine_preset(preset, names["preset"]) if preset else None
    prof = load_profile(profile) if profile else None
    links = dict(prof.links) if prof else {}

    def pick(key: str, given, preset_value, default):
        if given is not None:
            return given
        if key in links:
            return links[key]
        return preset_value if preset_value is not None else default

    transport = pick("transport", transport, base and base.transport, "tcp")
    spec = ClusterSpec.parse(
        machines, pick("gpus", gpus_per_machine, base and base.gpus_per_machine, 1),
        pick("nic_bandwidth", nic, base and base.nic, "25Gbps"),
        pick("nic_latency", nic_latency, base and base.nic_latency, TRANSPORT_LATENCY.get(transport, 0.0)),
        pick("nvlink_bandwidth", nvlink, base and base.nvlink, "300GB/s"),
        pick("nvlink_latency", nvlink_latency, None, NVLINK_LATENCY), fabric, 1.0 if oversub is None else oversub,
        4 if machines_per_leaf is None else machines_per_leaf, pick("nics", nics, base and base.nics, "machine"),
        transport, tier_list)
    return spec, prof
