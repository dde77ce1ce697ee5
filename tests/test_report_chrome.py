"""The Chrome trace of simulated runs: stages named by their phase (intra-machine reduce-scatter, push,
pull, all-gather), local work apart from transfer inside each stage, and link-utilization counters
that account for every byte each link carried."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from zensim.cli import main
from zensim.layout import PHASES
from zensim.net.costs import Costs
from zensim.net.profile import WorkCost
from zensim.net.replay import work_seconds
from zensim.net.fabrics import build_topology
from zensim.net.topology import ClusterSpec
from zensim.report.chrome import BINS, chrome_trace, link_utilization, track_of
from zensim.sim.run import simulate
from zensim.trace.synth import SynthParams, synthesize

G = 4


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    synthesize(path, 16, [("w", 8000)], SynthParams(0.03, 0.3, 2.0), iterations=1, seed=4)
    return path


@pytest.fixture(scope="module")
def records(trace):
    cluster = ClusterSpec(4, G, 1e9, nic_latency=3e-6, nvlink_latency=1e-6)
    return cluster, simulate(trace, ["zen", "dense-allreduce", "sparcml"], Costs(cluster), "maxmin")


def test_stages_are_named_by_phase(records):
    cluster, recs = records
    for rec in recs:
        phases = rec.simulated.stage_phases
        assert len(phases) == len(rec.stage_times_s)
        assert phases[:G - 1] == [PHASES[0]] * (G - 1) and phases[-(G - 1):] == [PHASES[3]] * (G - 1)
        middle = phases[G - 1:len(phases) - (G - 1)]
        assert middle and middle[0] == "push" and set(middle) <= {"push", "pull"}
        assert middle == sorted(middle, key=lambda p: p == "pull")  # push stages, then pull stages
    zen = next(r for r in recs if r.scheme == "zen")
    assert "pull" in zen.simulated.stage_phases  # ZEN's Balanced Parallelism pulls


def test_local_work_and_transfer_tile_every_stage(records):
    cluster, recs = records
    doc = json.loads(json.dumps(chrome_trace([track_of(r) for r in recs])))
    for pid, rec in enumerate(recs):
        spans = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 2 * pid]
        stages = [e for e in spans if e["cat"] == "stage"]
        assert [e["name"] for e in stages if e["tid"] == 0] == rec.simulated.stage_phases
        inner = {}
        for e in spans:
            if e["cat"] != "stage":
                inner.setdefault((e["tid"], e["args"]["stage"]), []).append(e)
        for e in stages:
            parts = inner.get((e["tid"], e["args"]["stage"]), [])
            assert sum(p["dur"] for p in parts) == pytest.approx(e["dur"], rel=1e-9, abs=1e-6)
            assert all(e["ts"] - 1e-6 <= p["ts"] and p["ts"] + p["dur"] <= e["ts"] + e["dur"] + 1e-6 for p in parts)
        # the local-work spans of a rank add up to the work the log prices (each rank has its own processor)
        pre, post = work_seconds(rec.simulated.log, Costs(cluster))
        for rank in range(cluster.gpus):
            work = sum(p["dur"] for p in spans if p["cat"] == "work" and p["tid"] == rank) / 1e6
            assert work == pytest.approx(pre[rank].sum() + post[rank].sum(), rel=1e-9, abs=1e-12)


def test_link_counters_account_for_every_byte(records):
    cluster, recs = records
    topo = build_topology(cluster)
    for rec in recs:
        edges, util = link_utilization(rec.simulated.timing, topo)
        carried = (util * topo.capacity[:, None] * np.diff(edges)[None, :]).sum(axis=1)
        assert carried == pytest.approx(np.array(rec.simulated.link_bytes, dtype=float), rel=1e-9, abs=1e-3)
        assert util.shape == (topo.num_links, BINS) and (util >= -1e-12).all()


def test_cli_timeline_has_phases_and_counters(trace, tmp_path, capsys):
    path = tmp_path / "t.json"
    assert main(["simulate", "--trace", str(trace), "--machines", "4", "--gpus-per-machine", "4", "--scheme", "zen",
                 "--timeline", str(path)]) == 0
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["name"] for e in events if e["ph"] == "X"}
    assert set(PHASES) | {"transfer", "local work"} <= names
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert "nic-up 0" in counters and "nvl-up 0" in counters
    assert {e["args"]["name"] for e in events if e["name"] == "process_name"} == {"zen", "zen: link utilization"}


def test_every_message_is_one_flow_from_its_send_to_its_receive(records):
    cluster, recs = records
    doc = json.loads(json.dumps(chrome_trace([track_of(r) for r in recs])))
    events = doc["traceEvents"]
    starts = [e for e in events if e["ph"] == "s"]  # ids numbered on across the runs, log order in each
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == len(finishes) == sum(len(r.simulated.log.src) for r in recs)
    assert len({e["id"] for e in starts}) == len(starts) and {e["id"] for e in starts} == set(finishes)
    spans = {(e["pid"], e["tid"], e["args"]["stage"], e["cat"]): e for e in events
             if e["ph"] == "X" and e["cat"] in ("stage", "transfer")}

    def inside(t: float, span: dict) -> bool:
        return span["ts"] - 1e-6 <= t <= span["ts"] + span["dur"] + 1e-6

    for pid, rec in enumerate(recs):
        mine = [e for e in starts if e["pid"] == 2 * pid]
        cols, timing = rec.simulated.log.arrays(), rec.simulated.timing
        assert len(mine) == len(cols["src"])
        for k, start in enumerate(sorted(mine, key=lambda e: e["id"])):
            finish = finishes[start["id"]]
            stage, src, dst = int(cols["stage"][k]), int(cols["src"][k]), int(cols["dst"][k])
            assert (start["tid"], finish["tid"], finish["pid"], start["args"]["stage"]) == (src, dst, 2 * pid, stage)
            assert start["ts"] == pytest.approx(timing.msg_start[k] * 1e6)
            assert finish["ts"] == pytest.approx(timing.msg_end[k] * 1e6) and finish["bp"] == "e"
            assert inside(start["ts"], spans[(2 * pid, src, stage, "transfer")])  # the sender's transfer span
            # delivered to the receiver in its stage of the message, or in an earlier one it has not finished
            assert any(inside(finish["ts"], spans[(2 * pid, dst, s, "stage")]) for s in range(stage + 1))
            assert start["ts"] <= finish["ts"] and start["name"] == finish["name"] and start["cat"] == finish["cat"]
