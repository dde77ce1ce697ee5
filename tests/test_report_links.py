"""Per-link bytes and utilization and the traffic matrix between machines: carried by every simulated
record, consistent with each other and with the bytes the ranks sent, re-rendered from results files
without simulating, written as CSV, JSON and a plot by simulate, report and scenarios."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from zensim.cli import main
from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.profile import WorkCost
from zensim.net.fabrics import build_topology
from zensim.net.links import LinkKind
from zensim.net.topology import ClusterSpec
from zensim.report.links import link_figure, link_rows, traffic_matrix, traffic_rows
from zensim.report.record import load_results, results_csv
from zensim.sim.run import simulate
from zensim.sim.scenario import load_scenario
from zensim.trace.synth import SynthParams, synthesize

SCHEMES = ["dense-allreduce", "zen", "sparse-ps", "agsparse-ring"]
CLUSTERS = {
    "shared NIC, fat-tree": ClusterSpec(8, 2, 1e9, nic_latency=2e-6, fabric="fattree", tiers=((2, 1.0), (2, 2.0))),
    "rails": ClusterSpec(4, 4, 1e9, nic_latency=2e-6, nics="gpu"),
}


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    synthesize(path, 16, [("w", 8000)], SynthParams(0.03, 0.3, 2.0), iterations=1, seed=11)
    return path


@pytest.fixture(scope="module", params=list(CLUSTERS))
def run(request, trace):
    cluster = CLUSTERS[request.param]
    return cluster, simulate(trace, SCHEMES, Costs(cluster, WorkCost.zero()), "maxmin")


def test_traffic_matrix_is_what_the_ranks_sent(run):
    cluster, records = run
    g = cluster.gpus_per_machine
    for rec in records:
        matrix = traffic_matrix(rec)
        sent_by_machine = np.add.reduceat(np.array(rec.bytes_sent), np.arange(0, cluster.gpus, g))
        assert np.array_equal(matrix.sum(axis=1), sent_by_machine)
        assert all(nbytes > 0 for _, _, nbytes in rec.simulated.traffic)


def test_link_bytes_agree_with_the_traffic_matrix(run):
    """Independent accounting: what leaves a machine crosses its NIC(s) up, what arrives crosses them
    down; what leaves a leaf (pod) for outside it crosses that leaf's (pod's) uplink."""
    cluster, records = run
    topo = build_topology(cluster)
    nic_machine = topo.machine_of_link()
    for rec in records:
        link = dict(zip(topo.names, rec.simulated.link_bytes))
        matrix = traffic_matrix(rec)
        outside = matrix - np.diag(np.diag(matrix))
        for m in range(cluster.machines):
            up = sum(rec.simulated.link_bytes[k] for k in topo.links_of_kind(LinkKind.NIC)
                     if nic_machine[k] == m and "-up" in topo.names[k])
            assert up == outside[m].sum()
        for t, span in enumerate(topo.spans, 1):
            name = {1: "leaf", 2: "pod"}[t]
            for j in range(topo.groups[t - 1]):
                members = slice(j * span, (j + 1) * span)
                leaving = matrix[members].sum() - matrix[members, members].sum()
                arriving = matrix[:, members].sum() - matrix[members, members].sum()
                assert (link[f"{name}-up {j}"], link[f"{name}-down {j}"]) == (leaving, arriving)


def test_link_rows_carry_utilization_and_the_busiest_link(run):
    cluster, records = run
    rows = link_rows(records)
    topo = build_topology(cluster)
    assert len(rows) == len(records) * topo.num_links
    for rec in records:
        mine = [r for r in rows if r["scheme"] == rec.scheme]
        for row, cap in zip(mine, topo.capacity):
            assert row["utilization"] == pytest.approx(row["bytes"] / (cap * rec.time_s), rel=1e-12)
            assert 0 <= row["utilization"] <= 1 + 1e-9  # a mean over the run cannot exceed the capacity
        top = max(mine, key=lambda r: r["utilization"])
        assert rec.busiest_link_util == pytest.approx(top["utilization"], rel=1e-9)


def test_links_survive_the_results_file(run, tmp_path):
    _, records = run
    path = tmp_path / "r.csv"
    path.write_text(results_csv(records))
    again = load_results(path)
    assert link_rows(again) == link_rows(records) and traffic_rows(again) == traffic_rows(records)


def test_cli_writes_links_traffic_and_plot_and_report_rerenders_them(trace, tmp_path, capsys):
    base = ["simulate", "--trace", str(trace), "--machines", "8", "--gpus-per-machine", "2", "--scheme",
            "zen,dense-allreduce", "--fabric", "fattree", "--tiers", "2:1,2:2", "--model", "fifo"]
    files = {key: tmp_path / name for key, name in (("links", "l.csv"), ("traffic", "t.json"), ("link-plot", "p.png"),
                                                    ("csv", "r.csv"))}
    assert main(base + [arg for key, path in files.items() for arg in (f"--{key}", str(path))]) == 0
    rows = list(csv.DictReader(io.StringIO(files["links"].read_text())))
    assert len(rows) == 2 * build_topology(ClusterSpec(8, 2, 1, fabric="fattree", tiers=((2, 1), (2, 2)))).num_links
    assert {"scheme", "link", "kind", "capacity_Bps", "bytes", "utilization"} <= set(rows[0])
    traffic = json.loads(files["traffic"].read_text())
    assert {r["scheme"] for r in traffic} == {"zen", "dense-allreduce"}
    assert files["link-plot"].read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    again = tmp_path / "l2.csv"
    assert main(["report", str(files["csv"]), "--links", str(again)]) == 0
    assert again.read_text() == files["links"].read_text()


@pytest.mark.parametrize("extra, message", [
    (["--links", "x.txt"], "--links: x.txt: name the format with the extension (.csv or .json)"),
    (["--traffic", "t.csv", "--model", "analytic"], "--traffic: the analytic model has no timeline nor per-link"),
    (["--link-plot", "p.txt"], "--link-plot: p.txt: extension .txt"),
])
def test_link_output_errors_come_before_the_work(trace, tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "--trace", str(trace), "--machines", "4", "--scheme", "zen"] + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_records_without_links_are_refused(trace):
    (rec,) = simulate(trace, ["zen"], ClusterSpec(4, 1, 1e9), "analytic")
    with pytest.raises(ConfigError, match="--links: no record has per-link figures"):
        link_rows([rec])
    with pytest.raises(ConfigError, match="--link-plot: no record"):
        link_figure([rec])


def test_scenario_outputs_links_per_point(trace, tmp_path):
    scn = tmp_path / "s.yaml"
    scn.write_text(f"trace: {trace}\ncluster: {{machines: 4, gpus_per_machine: 2}}\nschemes: [zen]\n"
                   "sweep: {nic: [10Gbps, 40Gbps]}\noutputs: {links: l.json, traffic: t.csv}\n")
    assert main(["run", str(scn), "--out", str(tmp_path), "--workers", "0", "--cache", "none"]) == 0
    rows = json.loads((tmp_path / "l.json").read_text())
    assert {r["run"] for r in rows} == {"nic=10Gbps", "nic=40Gbps"}
    by_run = {run: [r["bytes"] for r in rows if r["run"] == run] for run in ("nic=10Gbps", "nic=40Gbps")}
    assert by_run["nic=10Gbps"] == by_run["nic=40Gbps"]  # the same program: the same bytes on every link
    bad = tmp_path / "b.yaml"
    bad.write_text(scn.read_text().replace("traffic: t.csv", "link_plot: p.png"))
    with pytest.raises(ConfigError, match="outputs.link_plot: one point only"):
        load_scenario(bad)
