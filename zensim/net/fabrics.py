"""The fabrics by name (`ClusterSpec.fabric`, the CLI's --fabric, a scenario's `fabric`): each a
class that makes a cluster's zensim.net.links.Topology from its spec and labels it (`label(spec)`).
Adding a fabric is a file with its class (a graph fabric: a function building its graph,
zensim/net/ring.py) and its line below; `build_topology` is what the models and reports call.
"""

from __future__ import annotations

from typing import Any

from zensim.net.links import Topology
from zensim.net.ring import RingTopology
from zensim.net.tree import TreeTopology

FABRICS: dict[str, Any] = {
    "switch": TreeTopology,
    "leafspine": TreeTopology,
    "fattree": TreeTopology,
    "ring": RingTopology,
}


def build_topology(spec: Any) -> Topology:
    """The links and routes of cluster `spec` (a ClusterSpec), by its fabric's class."""
    return FABRICS[spec.fabric](spec)
