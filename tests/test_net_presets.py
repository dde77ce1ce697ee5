"""Machine presets and topologies against closed forms: a dense all-reduce on every preset (ring over
NVLink then NIC, one NIC per machine or one per GPU on rails), PXN routes, per-transport latencies."""

from __future__ import annotations

import numpy as np
import pytest

from zensim.cli import main
from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.presets import PRESETS, TRANSPORT_LATENCY, ring_allreduce_seconds
from zensim.net.profile import WorkCost
from zensim.net.fabrics import build_topology
from zensim.net.topology import ClusterSpec
from zensim.sim.cluster import build_cluster
from zensim.sim.run import simulate
from zensim.trace import TensorSpec, TraceWriter

MACHINES = 4


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """32 workers, numel a multiple of 8 x 4 (so the closed form is exact)."""
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    rng = np.random.default_rng(2)
    with TraceWriter(path, [TensorSpec("w", 8 * 4 * 1000)], workers=32, iterations=1) as w:
        for worker in range(32):
            w.write(0, worker, 0, np.unique(rng.choice(32000, 300, replace=False)))
    return path


@pytest.mark.parametrize("name", list(PRESETS))
@pytest.mark.parametrize("model", ["fifo", "maxmin"])
def test_dense_allreduce_on_every_preset_is_its_closed_form(trace, name, model):
    cluster, _ = build_cluster(MACHINES, preset=name)
    preset = PRESETS[name]
    assert cluster.gpus_per_machine == preset.gpus_per_machine and cluster.nics == preset.nics
    (rec,) = simulate(trace, ["dense-allreduce"], Costs(cluster, WorkCost.zero()), model)
    expected = ring_allreduce_seconds(32000, MACHINES, cluster.gpus_per_machine, cluster.nvlink_bandwidth,
                                      cluster.nvlink_latency, cluster.nic_bandwidth, cluster.nic_latency,
                                      cluster.nics == "gpu", model)
    assert rec.time_s == pytest.approx(expected, rel=1e-9)
    assert rec.cluster["nic_latency"] > 0 and rec.cluster["transport"] == preset.transport


def test_rails_cut_the_inter_machine_time_by_the_gpu_count(trace):
    shared, _ = build_cluster(MACHINES, 8, nic="100Gbps", nic_latency="0us", nvlink_latency="0us")
    rails, _ = build_cluster(MACHINES, 8, nic="100Gbps", nic_latency="0us", nvlink_latency="0us", nics="gpu")
    t_shared, t_rails = (simulate(trace, ["dense-allreduce"], Costs(c, WorkCost.zero()), "maxmin")[0].time_s
                         for c in (shared, rails))
    intra = 2 * 7 * 4 * 32000 / 8 / rails.nvlink_bandwidth
    assert (t_shared - intra) == pytest.approx(8 * (t_rails - intra), rel=1e-9)


def test_rail_routes_and_pxn():
    topo = build_topology(ClusterSpec(2, 4, 1e9, nics="gpu"))
    names = lambda route: [topo.names[k] for k in route]  # noqa: E731
    assert names(topo.route(1, 5)) == ["nic-up 1", "nic-down 5"]  # local rank 1 to local rank 1: its rail
    assert names(topo.route(1, 6)) == ["nvl-up 1", "nvl-down 2", "nic-up 2", "nic-down 6"]  # PXN via GPU 2's NIC
    assert names(topo.route(1, 3)) == ["nvl-up 1", "nvl-down 3"]
    assert len(topo.names) == 2 * (4 * 2 + 4 * 2) and topo.route_width == 4


def test_latency_defaults_by_transport_are_stated():
    tcp, _ = build_cluster(4)
    rdma, _ = build_cluster(4, transport="rdma")
    assert tcp.nic_latency == TRANSPORT_LATENCY["tcp"] and rdma.nic_latency == TRANSPORT_LATENCY["rdma"]
    assert "tcp 25us" in tcp.describe() and "rdma 2us" in rdma.describe()
    explicit, _ = build_cluster(4, transport="rdma", nic_latency="7us")
    assert explicit.nic_latency == pytest.approx(7e-6)


def test_preset_errors_are_one_line(trace, capsys):
    with pytest.raises(ConfigError, match="rail-optimized"):
        ClusterSpec(4, 8, 1e9, nics="gpu", fabric="leafspine")
    assert main(["simulate", "--trace", str(trace), "--preset", "dgx-b200"]) == 2  # no argparse usage: one line
    assert capsys.readouterr().err == ("zensim: error: --preset dgx-b200: unknown preset (choose from p3.16xlarge, "
                                       "p3dn.24xlarge, dgx-a100, dgx-h100)\n")
    assert main(["simulate", "--trace", str(trace), "--machines", "4", "--preset", "dgx-h100", "--scheme",
                 "dense-allreduce", "--gpus-per-machine", "4", "--json"]) == 0
    assert '"gpus": 16' in capsys.readouterr().out  # an explicit option wins over the preset
