"""Calibration fits and result folding, on constructed samples (no namespaces needed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from emulate.calibrate import (cpu_slowdown, fit_exchange, fit_links, fit_network, fit_work, make_profile, work_scale,
                               write_profile)
from emulate.netcal import fit_alpha_beta
from emulate.summary import summarize
from zensim.net.profile import WORK_KINDS, WorkCost, load_profile


def test_alpha_beta_recovers_latency_and_bandwidth():
    rng = np.random.default_rng(0)
    alpha, bw = 3e-4, 2.3e7
    samples = [{"pattern": "shift-4", "bytes": b, "seconds": alpha + b / bw + rng.normal(0, 1e-6), "round": i}
               for i, b in enumerate(b for b in (0, 4096, 65536, 524288, 2097152) for _ in range(5))]
    fit = fit_alpha_beta(samples)
    assert fit["latency_s"] == pytest.approx(alpha, rel=0.05)
    assert fit["bandwidth_Bps"] == pytest.approx(bw, rel=0.01)
    net = fit_network([{"samples": samples + [dict(s, pattern=p) for s in samples for p in ("pingpong", "alltoall")]}])
    assert list(net) == ["shift-4", "pingpong", "alltoall"]


def _run(name: str, stage_work: list[dict], cost: dict[str, float], seconds: float = 1.0) -> dict:
    """A scheme run record whose pre/post CPU times are exactly the metered work at `cost` (wall twice that)."""
    stages, work = [], []
    for s, phases in enumerate(stage_work):
        times = {}
        for phase in ("pre", "post"):
            counts = phases.get(phase, {})
            work += [[s, phase, k, e] for k, e in counts.items()]
            times[f"{phase}_cpu_s"] = sum(cost[k] * e for k, e in counts.items())
            times[f"{phase}_s"] = 2 * times[f"{phase}_cpu_s"]
        stages.append({**times, "comm_s": 0.01, "comm_cpu_s": 0.0, "sent": 10, "received": 10, "sent_to": {}})
    return {"kind": "scheme", "name": name, "repeat": 0, "stages": stages, "work": work, "seconds": seconds,
            "sent": 10, "received": 10, "control_sent": 8, "error": None}


def _kernels(costs: dict[str, tuple[float, float]]) -> dict:
    """Step-kernel measurements lying exactly on t(x) = alpha + beta x per kind."""
    sizes = [2**k for k in range(10, 16)]
    return {"device": "test", "kernels": "steps", "points": {k: [[x, a + b * x] for x in sizes] for k, (a, b) in costs.items()}}


def test_work_fit_is_the_kernels_times_their_slowdown_in_the_runs():
    """Each scheme's steps cost 1.5x, 2x and 3x what the kernels say: the profile's costs are the
    kernels' alpha and beta x the median, 2, with the bare operation priced as its COO kind."""
    kernels = {"hash": (1e-4, 2e-8), "merge.coo": (5e-5, 5e-9), "encode.coo": (1e-5, 1e-9), "search": (0.0, 3e-8)}
    cost = {k: b for k, (_, b) in kernels.items()}
    rng = np.random.default_rng(1)
    runs = []
    for i, slow in enumerate((1.5, 2.0, 3.0)):
        stages = [{"pre": {"hash": int(rng.integers(1e4, 1e5)), "encode.coo": int(rng.integers(1e4, 1e5)),
                           "search": int(rng.integers(1e4, 1e5))},
                   "post": {"merge.coo": int(rng.integers(1e4, 1e5))}} for _ in range(3)]
        run = _run(f"s{i}", stages, cost)
        for s, st in enumerate(run["stages"]):  # CPU = slow x (alpha + beta x) of each record; wall twice that
            for phase in ("pre", "post"):
                records = [w for w in run["work"] if w[0] == s and w[1] == phase]
                st[f"{phase}_cpu_s"] = slow * sum(kernels[k][0] + kernels[k][1] * e for _, _, k, e in records)
                st[f"{phase}_s"] = 2 * st[f"{phase}_cpu_s"]
        runs.append(run)
    work, scale = fit_work([{"rank": 0, "runs": runs}], _kernels(kernels))
    assert scale == pytest.approx(2.0, rel=1e-6)
    for kind, (alpha, beta) in kernels.items():
        assert work["work_seconds_per_element"][kind] == pytest.approx(2 * beta, rel=1e-4)
        assert work["work_fixed_seconds"][kind] == pytest.approx(2 * alpha, rel=1e-3, abs=1e-12)
    assert work["work_seconds_per_element"]["merge"] == work["work_seconds_per_element"]["merge.coo"]
    assert work_scale([], WorkCost.default()) == 1.0


def test_exchange_fit_recovers_its_cpu_per_stage_message_and_byte():
    """comm steps whose CPU is exactly 0.5 ms + 0.3 ms per message + 0.4 ms per MB sent; stages a rank
    takes no part in are left out."""
    rng = np.random.default_rng(3)
    runs = []
    for i in range(5):
        run = _run(f"s{i}", [{} for _ in range(6)], {})
        for st in run["stages"]:
            peers = int(rng.integers(1, 8))
            st["sent_to"] = {str(d): 1 for d in range(peers)}
            st["sent"] = st["received"] = int(rng.integers(0, 3_000_000))
            st["comm_cpu_s"] = 5e-4 + 3e-4 * peers + 4e-10 * st["sent"]
        run["stages"].append(dict(run["stages"][0], sent=0, received=0, sent_to={}, comm_cpu_s=1.0))
        runs.append(run)
    fitted = fit_exchange([{"rank": 0, "runs": runs}])
    assert fitted == {"stage": pytest.approx(5e-4, rel=1e-6), "message": pytest.approx(3e-4, rel=1e-6),
                      "byte": pytest.approx(4e-10, rel=1e-6)}
    assert fit_exchange([]) == {"stage": 0.0, "message": 0.0, "byte": 0.0}


def _pattern(bandwidth: float, latency: float) -> dict:
    return {"bandwidth_Bps": bandwidth, "latency_s": latency, "points": [{"bytes": 0, "median_s": 2 * latency},
                                                                         {"bytes": 10**6, "median_s": latency + 1e6 / bandwidth}]}


def test_links_keep_the_rate_and_measure_host_efficiency_by_flows():
    network = {"pingpong": _pattern(2.4e7, 1e-3), "shift-2": _pattern(2.2e7, 2e-3), "shift-4": _pattern(2.1e7, 2e-3),
               "shift-8": _pattern(2.0e7, 3e-3), "alltoall": _pattern(1.5e7, 9e-3)}
    links = fit_links(network, 2.5e7, 8)
    assert links["nic_bandwidth"] == 2.5e7 and links["nic_latency"] == 2e-3  # the empty ping-pong
    assert links["host_efficiency"] == {"1": pytest.approx(0.96), "2": pytest.approx(0.88), "4": pytest.approx(0.84),
                                        "8": pytest.approx(0.8), "56": pytest.approx(0.6)}
    assert "nic_efficiency" not in links
    # 2 ranks: the all-to-all is the shift-2 again (2 flows); the shift's figure is kept; clipped to 1
    two = fit_links({"pingpong": _pattern(3e7, 1e-3), "shift-2": _pattern(2e7, 1e-3), "alltoall": _pattern(1e7, 1e-3)},
                    2.0e7, 2)
    assert two["host_efficiency"] == {"1": 1.0, "2": 1.0}


def test_cpu_slowdown_is_the_median_over_schemes_of_emulated_over_alone():
    from zensim.run.log import MessageLog

    stages = [{"pre": {"hash": 1000}, "post": {"merge": 1000}}]
    cost = {"hash": 3e-6, "merge": 1e-6, "encode": 0.0, "decode": 0.0, "copy": 0.0}  # 4 ms per rank emulated
    names = ("a", "b", "c", "other")
    outs = [{"rank": r, "runs": [_run(name, stages, cost) for name in names]} for r in range(2)]
    logs = {}
    for name, alone in (("a", 1e-3), ("b", 2e-3), ("c", 4e-3)):  # ratios 2, 1 and 0.5 per step pair
        logs[name] = MessageLog(2, 1)
        logs[name].measured = np.full((2, 1, 2), alone)
    assert cpu_slowdown(outs, logs) == pytest.approx(1.0)  # median of 2, 1, 0.5; "other" has no log
    assert cpu_slowdown(outs, {}) == 1.0


def test_profile_is_read_back_by_the_simulator(tmp_path):
    describe = {"ranks": 4, "rate_bps": 200e6, "mtu": 65000}
    work = {"work_seconds_per_element": {"encode.coo": 1e-9, "search": 3e-8, "merge": 1e-8},
            "work_fixed_seconds": {"encode.coo": 1e-5}}
    path = tmp_path / "p.json"
    links = {"nic_bandwidth": 2.5e7, "nic_latency": 5e-4, "nic_efficiency": {"1": 0.95, "3": 0.6},
             "host_efficiency": {"1": 1.0, "8": 0.7}}
    exchange = {"stage": 5e-4, "message": 3e-4, "byte": 4e-10}
    write_profile(path, make_profile(links, work, 2, 1.4, describe, exchange), {"x": 1})
    prof = load_profile(path)
    assert prof.links["nic_bandwidth"] == 2.5e7 and prof.links["nic_latency"] == 5e-4
    assert prof.nic_efficiency(1) == 0.95 and prof.nic_efficiency(3) == 0.6 and prof.host_cores == 2
    assert prof.host_efficiency(1) == 1.0 and prof.host_efficiency(8) == 0.7 and prof.cpu_slowdown == 1.4
    assert prof.work.seconds("encode.coo", 10) == pytest.approx(1e-5 + 1e-8)
    assert prof.work.seconds("search", 10) == pytest.approx(3e-7) and prof.work.seconds("merge.coo", 10) == pytest.approx(1e-7)
    assert prof.exchange.to_json() == exchange
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


def test_calibration_check_times_the_calibration_runs_under_the_profile():
    from emulate.session import _check
    from zensim.net.profile import parse_profile
    from zensim.run.log import Message, MessageLog, Work

    profile = parse_profile({"schema": "zensim-profile/1", "nic_bandwidth": 1e6, "nic_latency": 0.0,
                             "nic_efficiency": {"1": 0.5}, "work_seconds_per_element": {"hash": 1e-6},
                             "host_cores": 2, "cpu_slowdown": 2.0}, "test")
    log = MessageLog(2, 1, [Message(0, 0, 1, 10**6, "coo")], [Work(0, 0, "pre", "hash", 10**5)])  # 0.1 s at the cost
    log.measured = np.zeros((2, 1, 2))
    log.measured[0, 0, 0] = 0.25  # 0.5 s with the slowdown
    # 1 MB at 0.5 MB/s = 2 s after the pre step: 2.5 s measured, 2.1 s at the per-element cost
    from zensim.net.models import MODELS

    check = _check({"one": log}, {"one": 2.5}, profile)
    assert check == {**{m: pytest.approx(0.0) for m in MODELS}, **{f"{m}/elements": pytest.approx(0.16) for m in MODELS}}


def test_patterns_measure_a_few_shift_sizes_up_to_n():
    from emulate.netcal import patterns

    assert patterns(16) == ["pingpong", "shift-4", "shift-8", "shift-16", "alltoall"]
    assert patterns(5) == ["pingpong", "shift-2", "shift-5", "alltoall"]
    assert patterns(2) == ["pingpong", "shift-2", "alltoall"]


def test_calibrate_prints_the_profile_it_wrote():
    from zensim.cli.emulate import calibration_summary

    network = {"pingpong": _pattern(2.5e7, 1e-3), "shift-2": _pattern(2.2e7, 2e-3), "alltoall": _pattern(1.5e7, 9e-3)}
    profile = make_profile(fit_links(network, 2.5e7, 4), {"work_seconds_per_element": {k: 0.0 for k in WORK_KINDS}}, 2, 1.3,
                           {"ranks": 4, "rate_bps": 200e6, "mtu": 65000})
    line = calibration_summary("out/p.json", profile)
    assert line == ("wrote out/p.json: 200.0 Mbit/s per NIC x host efficiency by active flows {1: 1.00, 2: 0.88, "
                    "12: 0.60}, 2000 us per message, CPU slowdown 1.30; details in out/p.details.json")
