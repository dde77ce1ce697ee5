"""Calibration fits and result folding, on constructed samples (no namespaces needed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from emulate.calibrate import cpu_seconds, fit_links, fit_network, fit_work, make_profile, write_profile
from emulate.netcal import fit_alpha_beta
from emulate.summary import summarize
from zensim.net.profile import WORK_KINDS, load_profile


def test_alpha_beta_recovers_latency_and_bandwidth():
    rng = np.random.default_rng(0)
    alpha, bw = 3e-4, 2.3e7
    samples = [{"pattern": "shift", "bytes": b, "seconds": alpha + b / bw + rng.normal(0, 1e-6)}
               for b in (0, 4096, 65536, 524288, 2097152) for _ in range(5)]
    fit = fit_alpha_beta(samples)
    assert fit["latency_s"] == pytest.approx(alpha, rel=0.05)
    assert fit["bandwidth_Bps"] == pytest.approx(bw, rel=0.01)
    net = fit_network([{"samples": samples + [dict(s, pattern=p) for s in samples for p in ("pingpong", "alltoall")]}])
    assert set(net) == {"pingpong", "shift", "alltoall"}


def _run(name: str, stage_work: list[dict], cost: dict[str, float], seconds: float = 1.0) -> dict:
    """A scheme run record whose pre/post times are exactly the metered work at `cost`."""
    stages, work = [], []
    for s, phases in enumerate(stage_work):
        times = {}
        for phase in ("pre", "post"):
            counts = phases.get(phase, {})
            work += [[s, phase, k, e] for k, e in counts.items()]
            times[f"{phase}_s"] = sum(cost[k] * e for k, e in counts.items())
        stages.append({**times, "comm_s": 0.01, "sent": 10, "received": 10, "sent_to": {}})
    return {"kind": "scheme", "name": name, "repeat": 0, "stages": stages, "work": work, "seconds": seconds,
            "sent": 10, "received": 10, "control_sent": 8, "error": None}


def test_work_fit_recovers_costs_per_kind():
    cost = {"hash": 2e-8, "merge": 5e-8, "encode": 1e-8, "decode": 3e-9, "copy": 0.0}
    rng = np.random.default_rng(1)
    runs = []
    for i in range(12):
        stages = [{"pre": {"hash": int(rng.integers(1e4, 1e5)), "encode": int(rng.integers(1e4, 1e5))},
                   "post": {"decode": int(rng.integers(1e4, 1e5)), "merge": int(rng.integers(1e4, 1e5))}}
                  for _ in range(3)]
        runs.append(_run(f"s{i}", stages, cost))
    fitted = fit_work([{"rank": 0, "runs": runs}])
    for kind in ("hash", "merge", "encode", "decode"):
        assert fitted[kind] == pytest.approx(cost[kind], rel=1e-6)
    assert fitted["copy"] == 0.0


def _pattern(bandwidth: float, latency: float) -> dict:
    return {"bandwidth_Bps": bandwidth, "latency_s": latency, "points": [{"bytes": 0, "median_s": 2 * latency},
                                                                         {"bytes": 10**6, "median_s": latency + 1e6 / bandwidth}]}


def test_links_keep_the_rate_and_measure_efficiency_by_flows():
    network = {"pingpong": _pattern(2.4e7, 1e-3), "shift": _pattern(2.1e7, 3e-3), "alltoall": _pattern(1.5e7, 9e-3)}
    links = fit_links(network, 2.5e7, 8)
    assert links["nic_bandwidth"] == 2.5e7 and links["nic_latency"] == 2e-3  # the empty ping-pong
    assert links["nic_efficiency"] == {"1": pytest.approx(0.96), "7": pytest.approx(0.6)}
    assert fit_links(network, 2.5e7, 8, "shift")["nic_efficiency"]["1"] == pytest.approx(0.84)
    assert fit_links(network, 2.0e7, 2)["nic_efficiency"] == {"1": 1.0}  # clipped; n = 2 has one flow per NIC


def test_cpu_seconds_share_the_cores():
    # four ranks busy over [0, 2] on 2 cores get 1 s each; a fifth alone over [3, 4] gets its 1 s
    starts, ends = np.array([0.0, 0.0, 0.0, 0.0, 3.0]), np.array([2.0, 2.0, 2.0, 2.0, 4.0])
    assert cpu_seconds(starts, ends, 2) == pytest.approx([1, 1, 1, 1, 1])
    assert cpu_seconds(starts, ends, None) == pytest.approx([2, 2, 2, 2, 1])
    # [0, 3] overlaps [1, 2] only: 1 + 1/2 + 1 on one core
    assert cpu_seconds(np.array([0.0, 1.0]), np.array([3.0, 2.0]), 1) == pytest.approx([2.5, 0.5])


def test_work_fit_removes_the_contention_of_shared_cores():
    """4 ranks step in lockstep on 2 cores: every wall time is twice the work; the fit gives the work."""
    cost = {"hash": 2e-8, "merge": 5e-8, "encode": 0.0, "decode": 0.0, "copy": 0.0}
    rng = np.random.default_rng(2)
    outs = [{"rank": r, "runs": []} for r in range(4)]
    for i in range(6):
        stages = [{"pre": {"hash": int(rng.integers(1e4, 1e5))}, "post": {"merge": int(rng.integers(1e4, 1e5))}}
                  for _ in range(2)]
        base = _run(f"s{i}", stages, {k: 2 * c for k, c in cost.items()})  # wall = 2 x work: 4 ranks on 2 cores
        for out in outs:
            out["runs"].append(dict(base, t_start=10.0 * i))
    fitted = fit_work(outs, cores=2)
    assert fitted["hash"] == pytest.approx(cost["hash"], rel=1e-6) and fitted["merge"] == pytest.approx(cost["merge"], rel=1e-6)
    assert fit_work(outs)["hash"] == pytest.approx(2 * cost["hash"], rel=1e-6)


def test_profile_is_read_back_by_the_simulator(tmp_path):
    describe = {"ranks": 4, "rate_bps": 200e6, "mtu": 65000}
    work = {k: 1e-8 for k in WORK_KINDS}
    path = tmp_path / "p.json"
    links = {"nic_bandwidth": 2.5e7, "nic_latency": 5e-4, "nic_efficiency": {"1": 0.95, "3": 0.6}}
    write_profile(path, make_profile(links, work, 2, "from the pingpong and alltoall patterns", describe), {"x": 1})
    prof = load_profile(path)
    assert prof.links["nic_bandwidth"] == 2.5e7 and prof.links["nic_latency"] == 5e-4
    assert prof.nic_efficiency(1) == 0.95 and prof.nic_efficiency(3) == 0.6 and prof.host_cores == 2
    assert prof.work.per_element == work
    assert json.loads((tmp_path / "p.details.json").read_text()) == {"x": 1}


def test_summary_takes_the_slowest_rank_and_the_median_of_repeats():
    outs = []
    for rank in range(3):
        runs = [dict(_run("zen", [{}], {}, seconds=t * (1 + rank)), repeat=rep)
                for rep, t in enumerate((1.0, 3.0, 2.0))]
        runs[1]["error"] = "values differ" if rank == 2 else None
        outs.append({"rank": rank, "runs": runs})
    (rec,) = summarize(outs)
    assert rec["times_s"] == [3.0, 9.0, 6.0]  # slowest rank (rank 2, 3x) per repeat
    assert rec["time_s"] == 6.0 and rec["min_s"] == 3.0 and rec["max_s"] == 9.0
    assert not rec["correct"] and rec["errors"] == ["rank 2: values differ"]


def test_check_profile_times_the_calibration_runs_under_the_profile():
    from emulate.calibrate import check_profile
    from zensim.schemes.log import Message, MessageLog

    profile = {"nic_bandwidth": 1e6, "nic_latency": 0.0, "nic_efficiency": {"1": 0.5},
               "work_seconds_per_element": {k: 0.0 for k in WORK_KINDS}, "host_cores": 2}
    logs = {"one": MessageLog(2, 1, [Message(0, 0, 1, 10**6, "coo")])}  # 1 MB at 0.5 MB/s = 2 s
    assert check_profile(logs, {"one": 2.5}, profile) == {"fifo": pytest.approx(0.2), "maxmin": pytest.approx(0.2)}
