"""A ClusterSpec from link figures given explicitly, a calibration profile's, a machine preset's, or the
defaults."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zensim.errors import ConfigError
from zensim.net.fabrics import FABRICS, declared_by
from zensim.net.presets import NVLINK_LATENCY, TRANSPORT_LATENCY, machine_preset
from zensim.net.profile import Profile, load_profile
from zensim.net.topology import ClusterSpec, parse_tiers


def build_cluster(machines: int, gpus_per_machine: int | None = None, *, nic: str | float | None = None,
                  nic_latency: str | float | None = None, nvlink: str | float | None = None,
                  nvlink_latency: str | float | None = None, fabric: str = "switch", oversub: float | None = None,
                  machines_per_leaf: int | None = None, profile: str | Path | None = None,
                  preset: str | None = None, nics: str | None = None, transport: str | None = None,
                  tiers: str | None = None, fabric_options: Sequence[tuple[str, Any]] = (),
                  names: dict[str, str] | None = None) -> tuple[ClusterSpec, Profile | None]:
    """ClusterSpec from figures given explicitly (None = not given) > the profile's > the preset's
    (zensim.net.presets) > the defaults: 1 GPU per machine, 25Gbps and one NIC per machine, tcp, NIC
    latency by transport (tcp 25us, rdma 2us), NVLink 300GB/s and 1us.

    `fabric_options` ((key, value), typed): the options the fabric declares (zensim.net.fabrics);
    `oversub`, `machines_per_leaf` (a leaf-spine's) and `tiers` ('4:1,8:2': a fat-tree's, per tier
    from the bottom, members per group and oversubscription) are three of them by their own flags.
    An option the fabric does not declare is an error, not ignored, and so is a required one missing.
    `names` maps 'oversub'/'machines_per_leaf'/'tiers'/'fabric_option'/'preset' to the names errors use
    (an option or a scenario key; default the command line's)."""
    names = {"oversub": "--oversub", "machines_per_leaf": "--machines-per-leaf", "tiers": "--tiers",
             "fabric_option": "--fabric-option", "preset": "--preset", **(names or {})}
    declared = FABRICS[fabric]
    given = dict(fabric_options)
    for key, value in (("oversub", oversub), ("machines_per_leaf", machines_per_leaf), ("tiers", tiers)):
        if value is None:
            continue
        if key in given:
            raise ConfigError(f"{names[key]} and {names['fabric_option']} {key}: give one")
        if key not in declared.options:
            raise ConfigError(f"{names[key]}: only for a {declared_by(key)} fabric (fabric is {fabric!r})")
        given[key] = value
    for key, example in declared.required.items():
        if key not in given:
            raise ConfigError(f"{names.get(key, names['fabric_option'])}: a {declared.title} needs its {key}, "
                              f"{example}")
    spec_fields = {f.name for f in dataclasses.fields(ClusterSpec)}
    own = {k: v for k, v in given.items() if k not in spec_fields}  # the fabric's options beyond the spec's fields
    tier_list = parse_tiers(str(given["tiers"]), names["tiers"]) if "tiers" in given else ()
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
        pick("nvlink_latency", nvlink_latency, None, NVLINK_LATENCY), fabric, float(given.get("oversub", 1.0)),
        int(given.get("machines_per_leaf", 4)), pick("nics", nics, base and base.nics, "machine"),
        transport, tier_list, tuple(own.items()))
    return spec, prof
