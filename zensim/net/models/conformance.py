"""Properties every sharing model must have, checked through the public Network API (as scikit-learn's
`check_estimator` checks estimators). `check_model(name)` runs them all; tests/test_net_models.py runs
each check on each registered model.

Each check builds small networks with zero local-work cost and asserts closed forms that hold under
any sensible sharing of links: a message alone takes its route latency + bytes / bottleneck
bandwidth; k equal messages into one link end after k bytes / bandwidth; a chain of messages, each
sent on the delivery of the previous, takes the sum of its parts; a zero-byte message costs its route
latency; flows on disjoint links do not interact; no link carries more than its capacity; NIC and
host efficiencies scale NIC links (and only those); results do not depend on the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.profile import NicEfficiency, WorkCost
from zensim.net.links import LinkKind
from zensim.net.topology import ClusterSpec

B = 1e9  # NIC bytes/s
NVL = 8e9  # NVLink bytes/s
LAT = 3e-6  # NIC latency
REL = 1e-9


def _net(model: str, machines: int = 4, gpus: int = 1, **costs: object) -> Network:
    spec = ClusterSpec(machines, gpus, B, nic_latency=LAT, nvlink_bandwidth=NVL, nvlink_latency=1e-6,
                       fabric=str(costs.pop("fabric", "switch")), oversub=float(costs.pop("oversub", 1.0)),
                       machines_per_leaf=2)
    return Network(Costs(spec, WorkCost.zero(), **costs), model)


def _close(got: float, want: float, what: str) -> None:
    assert math.isclose(got, want, rel_tol=REL, abs_tol=1e-15), f"{what}: got {got!r}, want {want!r}"


def check_one_flow_alone(model: str) -> None:
    """Alone on its route: latency + bytes / bottleneck bandwidth, across machines, inside one, across a spine."""
    for src, dst, want in ((0, 2, LAT + 1e6 / B), (0, 1, 1e-6 + 1e6 / NVL)):
        net = _net(model, 2, 2)
        net.send(src, dst, 1e6)
        net.run()
        _close(net.delivered_at[0], want, f"one message GPU {src} -> {dst}")
    net = _net(model, 4, 1, fabric="leafspine", oversub=4.0)  # a leaf of 2 machines: uplink 2 B / 4 = B / 2
    net.send(0, 3, 1e6)
    net.run()
    _close(net.delivered_at[0], LAT + 1e6 / (B / 2), "one message across an oversubscribed spine")


def check_k_equal_flows_share_a_link(model: str) -> None:
    """k messages of s bytes from k machines into one at once: the last ends at latency + k s / B,
    none before latency + s / B."""
    for k in (2, 3, 7):
        net = _net(model, k + 1)
        net.add_messages(range(1, k + 1), [0] * k, [1e6] * k)
        for m in range(k):
            net.start([m])
        net.run()
        ends = net.delivered_at[:k]
        _close(ends.max(), LAT + k * 1e6 / B, f"{k} flows into one link, last delivery")
        assert ends.min() >= LAT + 1e6 / B * (1 - REL), f"{k} flows into one link: one beat the link alone"


def check_chain(model: str) -> None:
    """A chain of messages 0 -> 1 -> 2 -> 3, each sent when the previous arrives: the sum of their
    alone times; and one message over a chain of links: its bottleneck."""
    net = _net(model, 4)
    sizes = [1e5, 2e6, 3e5]

    def forward(m: int) -> None:
        if m + 1 < len(sizes):
            net.send(m + 1, m + 2, sizes[m + 1], forward)

    net.send(0, 1, sizes[0], forward)
    net.run()
    _close(net.now, sum(LAT + s / B for s in sizes), "chain of three dependent messages")
    _close(net.delivered_at[2] - net.sent_at[2], LAT + sizes[2] / B, "last message of the chain")


def check_zero_bytes(model: str) -> None:
    """A zero-byte message costs its route latency; a message to itself arrives at once."""
    net = _net(model, 2)
    net.send(0, 1, 0)
    net.send(1, 1, 1e6)
    net.run()
    _close(net.delivered_at[0], LAT, "zero-byte message")
    _close(net.delivered_at[1], 0.0, "message to itself")


def check_disjoint_flows_do_not_interact(model: str) -> None:
    """Flows on disjoint links at the same time each take their alone time."""
    net = _net(model, 6)
    sizes = [1e6, 3e6, 2e5]
    net.add_messages([0, 2, 4], [1, 3, 5], sizes)
    net.start([0])
    net.start([1, 2])
    net.run()
    for m, s in enumerate(sizes):
        _close(net.delivered_at[m], LAT + s / B, f"disjoint flow {m}")


def check_capacity_and_delivery(model: str) -> None:
    """A random all-to-all: every message delivered once, after its alone time, and no link beats
    its capacity (the makespan is at least the busiest link's bytes / bandwidth)."""
    rng = np.random.default_rng(5)
    n = 6
    net = _net(model, 3, 2)
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    sizes = rng.integers(1, 10**6, len(src)).astype(float)
    seen: list[int] = []
    ids = net.add_messages(src, dst, sizes, seen.append)
    for r in range(n):
        net.start(ids[src == r])
    net.run()
    assert sorted(seen) == ids.tolist(), "every message is delivered exactly once"
    alone = net.route_latency[ids] + sizes / np.where(src // 2 == dst // 2, NVL, B)
    assert (net.delivered_at[ids] - net.sent_at[ids] >= alone * (1 - REL)).all(), "a message beat its alone time"
    load = np.bincount(net.routes[ids].ravel(), weights=np.repeat(sizes, net.routes.shape[1]),
                       minlength=net.num_links + 1)[:-1]
    assert net.now >= (load / net.capacity).max() * (1 - REL), "a link carried more than its capacity"


def check_later_sends_and_determinism(model: str) -> None:
    """Messages sent from timers start then; the same run twice gives the same times."""
    def once() -> np.ndarray:
        net = _net(model, 4)
        net.schedule(1e-3, net.send, 0, 1, 1e6)
        net.schedule(1e-3, net.send, 2, 1, 1e6)
        net.schedule(5e-3, net.send, 3, 2, 5e5)
        net.run()
        return net.delivered_at[:3].copy()

    first = once()
    _close(first[:2].max(), 1e-3 + LAT + 2e6 / B, "two messages from timers into one link")
    _close(first[2], 5e-3 + LAT + 5e5 / B, "a message sent from a later timer")
    assert np.array_equal(first, once()), "two identical runs differ"


def check_nic_efficiency(model: str) -> None:
    """eff(1) = 0.5 halves a NIC flow's bandwidth and leaves NVLink alone."""
    net = _net(model, 2, 2, nic_efficiency=NicEfficiency(((1, 0.5),)))
    net.send(0, 2, 1e6)
    net.send(1, 0, 1e6)
    net.run()
    _close(net.delivered_at[0], LAT + 1e6 / (0.5 * B), "NIC flow at eff 0.5")
    _close(net.delivered_at[1], 1e-6 + 1e6 / NVL, "NVLink flow under a NIC efficiency")
    assert (net.topology.kind[net.nic_links] == LinkKind.NIC).all()


def check_host_efficiency(model: str) -> None:
    """k disjoint flows at once on NICs run at bandwidth x h(k), whatever their count of hops."""
    for k in (1, 3):
        net = _net(model, 2 * k, host_efficiency=NicEfficiency(((1, 1.0), (3, 0.5))))
        ids = net.add_messages(range(0, 2 * k, 2), range(1, 2 * k, 2), [1e6] * k)
        net.start(ids)
        net.run()
        h = NicEfficiency(((1, 1.0), (3, 0.5)))(k)
        _close(net.now, LAT + 1e6 / (B * h), f"{k} disjoint flows under host efficiency")


CHECKS: tuple[Callable[[str], None], ...] = (
    check_one_flow_alone, check_k_equal_flows_share_a_link, check_chain, check_zero_bytes,
    check_disjoint_flows_do_not_interact, check_capacity_and_delivery, check_later_sends_and_determinism,
    check_nic_efficiency, check_host_efficiency,
)


def check_model(name: str) -> None:
    """Run every check on the registered model `name` (AssertionError naming the first that fails)."""
    for check in CHECKS:
        check(name)
