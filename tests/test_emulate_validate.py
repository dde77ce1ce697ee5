"""The validation's hashing report uses the same imbalance metrics and Theorem 2 bounds as zensim.sparse."""

import numpy as np
import pytest

from emulate.validate import hash_imbalance
from zensim.sparse.hashpart import h0_parts
from zensim.sparse.imbalance import theorem2_bounds
from zensim.trace import TensorSpec, Trace, TraceWriter


def test_hash_imbalance_matches_definitions_and_bounds(tmp_path):
    n, numel = 6, 200_000
    rng = np.random.default_rng(3)
    sets = [np.unique(rng.integers(0, numel // 4, 6_000)) for _ in range(n)]  # skewed: first quarter only
    path = tmp_path / "t.zt"
    with TraceWriter(path, [TensorSpec("g", numel)], workers=n, iterations=1) as w:
        for r, idx in enumerate(sets):
            w.write(0, r, 0, idx)
    with Trace.open(path) as t:
        got = hash_imbalance(t, 0, n)
    push = max(n * np.bincount(h0_parts(s, n, 0), minlength=n).max() / len(s) for s in sets)
    union = np.unique(np.concatenate(sets))
    pull = n * np.bincount(h0_parts(union, n, 0), minlength=n).max() / len(union)
    push_bound, pull_bound = theorem2_bounds(n, min(len(s) for s in sets), len(union))
    assert got == {"push": push, "pull": pull, "push_bound": push_bound, "pull_bound": pull_bound}
    assert got["push"] <= got["push_bound"] and got["pull"] <= got["pull_bound"]


def test_compare_and_summary_cover_every_simulated_variant():
    from emulate.validate import VARIANTS, compare, error_summary, tables

    emulated = [{"name": name, "kind": "scheme", "time_s": 1.0, "min_s": 0.9, "max_s": 1.2, "correct": True,
                 "sent": [10, 20], "received": [20, 10], "comm_s": 0.5, "comm_stages_s": [0.5]}
                for name in ("a", "b", "c")]
    emulated.append({"name": "dense", "kind": "peer", "time_s": 2.0, "min_s": 2.0, "max_s": 2.0, "correct": True,
                     "wire_tx": [100, 125], "wire_rx": [125, 100]})
    errs = {"a": 0.1, "b": -0.3, "c": 0.05}
    simulated = {name: {"sent": [10, 20], "received": [20, 10] if name != "c" else [10, 20],
                        **{v: {"time": 1.0 + e * (1 + i), "comm": 0.5 * (1 - e), "comm_stages": [0.5 * (1 - e)]}
                           for i, v in enumerate(VARIANTS)}} for name, e in errs.items()}
    rows = compare(4, emulated, simulated, rate_bps=100.0, iteration=2)
    assert [r["bytes_equal"] for r in rows[:3]] == [True, True, False] and VARIANTS[0] not in rows[3]
    for i, v in enumerate(VARIANTS):
        assert [r[f"err_{v}"] for r in rows[:3]] == pytest.approx([e * (1 + i) for e in errs.values()])
        assert [r[f"err_comm_{v}"] for r in rows[:3]] == pytest.approx([-e for e in errs.values()])
    # wire bound: the busiest direction at the rate (a scheme's payload, a peer's link counters)
    assert rows[0]["wire_s"] == pytest.approx(8 * 20 / 100.0) and rows[3]["wire_s"] == pytest.approx(8 * 125 / 100.0)
    assert rows[3]["emu_over_wire"] == pytest.approx(2.0 / 10.0)
    summary = error_summary(rows)
    assert [s["model"] for s in summary] == list(VARIANTS)
    assert summary[0] == {"rate_bps": 100.0, "ranks": 4, "model": VARIANTS[0],
                          "median_abs_err": pytest.approx(0.1), "max_abs_err": pytest.approx(0.3), "worst": "b",
                          "comm_median_abs_err": pytest.approx(0.1), "comm_max_abs_err": pytest.approx(0.3),
                          "comm_worst": "b"}
    text = tables({"rows": rows, "summary": summary, "imbalance": []})
    assert VARIANTS[-1] in text and "DIFFER" in text and "err comm maxmin" in text


def test_comm_part_is_the_longest_wait_and_each_stage_s_longest():
    from emulate.summary import comm_part

    total, stages = comm_part([[0.1, 0.4], [0.3, 0.1], [0.2, 0.25]])
    assert total == pytest.approx(0.5) and stages == pytest.approx([0.3, 0.4])
    assert comm_part([]) == (0.0, [])


def test_runs_per_bandwidth_merge_into_the_one_validation():
    from emulate.validate import VARIANTS, compare, error_summary, merge
    from zensim.errors import ConfigError

    def run(rate, err):
        emulated = [{"name": name, "kind": "scheme", "time_s": 1.0, "min_s": 1.0, "max_s": 1.0, "correct": True,
                     "sent": [1], "received": [1], "comm_s": 0.5, "comm_stages_s": [0.5]} for name in ("a", "b")]
        simulated = {name: {"sent": [1], "received": [1], **{v: {"time": 1 + err * k, "comm": 0.5, "comm_stages": [0.5]}
                                                             for v in VARIANTS}} for k, name in enumerate(("a", "b"))}
        rows = compare(4, emulated, simulated, rate, 0)
        return {"trace": "t.zt", "repeats": 2, "calibration_iteration": 1, "rates_bps": [rate], "iterations": [0],
                "rows": rows, "summary": error_summary(rows), "imbalance": [{"ranks": 4, "iteration": 0}],
                "profiles": [{"rate_bps": rate, "ranks": 4, "profile": {}}], "command": f"run {rate:g}"}

    parts = [run(25e6, 0.02), run(200e6, 0.3)]
    whole = merge(parts)
    assert whole["rates_bps"] == [25e6, 200e6] and len(whole["imbalance"]) == 1
    assert whole["summary"] == error_summary(parts[0]["rows"] + parts[1]["rows"])
    assert [s["max_abs_err"] for s in whole["summary"] if s["model"] == "maxmin"] == pytest.approx([0.02, 0.3])
    with pytest.raises(ConfigError, match="differ in trace"):
        merge([parts[0], {**parts[1], "trace": "other.zt"}])
