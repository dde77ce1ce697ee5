"""Calibration fits and result folding, on constructed samples (no namespaces needed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from emulate.calibrate import fit_network, fit_work, make_profile, write_profile
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


def test_profile_is_read_back_by_the_simulator(tmp_path):
    describe = {"ranks": 4, "rate_bps": 200e6, "mtu": 65000}
    work = {k: 1e-8 for k in WORK_KINDS}
    path = tmp_path / "p.json"
    write_profile(path, make_profile(2.2e7, 5e-4, work, "from the shift pattern", describe), {"x": 1})
    prof = load_profile(path)
    assert prof.links["nic_bandwidth"] == 2.2e7 and prof.links["nic_latency"] == 5e-4
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
