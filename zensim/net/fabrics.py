"""The fabrics by name (`ClusterSpec.fabric`, the CLI's --fabric, a scenario's `fabric`): each a
class that makes a cluster's zensim.net.links.Topology from its spec and labels it (`label(spec)`),
and declares its settings as a sharing model does: `options = {key: default}` (given as
`--fabric-option KEY=VALUE` or a scenario's `cluster.fabric_options`, typed as the default, read
back with `spec.fabric_option(key)`), `required` and a `title`. Adding a fabric, with settings or
not, is a file with its class (a graph fabric: a function building its graph, zensim/net/ring.py)
and its line below; `build_topology` is what the models and reports call.
"""

from __future__ import annotations

from typing import Any

from zensim.net.links import Topology
from zensim.net.options import declared_option
from zensim.net.ring import RingTopology
from zensim.net.tree import FatTreeTopology, LeafSpineTopology, TreeTopology

FABRICS: dict[str, Any] = {
    "switch": TreeTopology,
    "leafspine": LeafSpineTopology,
    "fattree": FatTreeTopology,
    "ring": RingTopology,
}


def build_topology(spec: Any) -> Topology:
    """The links and routes of cluster `spec` (a ClusterSpec), by its fabric's class."""
    return FABRICS[spec.fabric](spec)


def fabric_option(fabric: str, key: str, value: object) -> object:
    """Option `key` of fabric `fabric` (one it declares), `value` (text or a YAML scalar) read as the type
    of its default; a ConfigError saying the problem otherwise (the caller names the flag or key)."""
    return declared_option(f"fabric {fabric}", FABRICS[fabric].options if fabric in FABRICS else {}, key, value)


def declared_by(key: str) -> str:
    """The title of the fabrics that declare option `key` ('leaf-spine'), for 'only for a ... fabric'."""
    return " or ".join(cls.title or name for name, cls in FABRICS.items() if key in cls.options)
