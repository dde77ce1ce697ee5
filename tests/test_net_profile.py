"""Calibration profiles: parsed units, overrides, one-line errors naming the file."""

import json

import pytest

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.replay import work_seconds
from zensim.net.models import MODELS
from zensim.net.profile import SCHEMA, WORK_OPS, WorkCost, fit, load_profile
from zensim.net.topology import ClusterSpec
from zensim.run.log import MessageLog, Work
from zensim.sim.run import with_profile


def write(tmp_path, obj):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(obj))
    return path


def test_profile_overrides(tmp_path):
    prof = load_profile(write(tmp_path, {"schema": SCHEMA, "nic_bandwidth": "200Mbps", "nic_latency": "60us",
                                         "work_seconds_per_element": {"merge": 1e-8}}))
    assert prof.links == {"nic_bandwidth": 25e6, "nic_latency": pytest.approx(6e-5)}
    default = WorkCost.default()
    assert prof.work.per_element["merge"] == 1e-8 and prof.work.fixed.get("merge", 0.0) == 0.0
    assert "merge.coo" not in prof.work.per_element  # the profile's `merge` prices it, not the default's
    assert prof.work.per_element["hash"] == default.per_element["hash"] and prof.work.fixed["hash"] == default.fixed["hash"]
    cluster = with_profile(ClusterSpec(2, 1, 1e9), prof)
    assert cluster.nic_bandwidth == 25e6 and cluster.nic_latency == pytest.approx(6e-5)
    log = MessageLog(2, 1, [], [Work(0, 1, "post", "merge", 100), Work(0, 1, "pre", "hash", 10)])
    pre, post = work_seconds(log, Costs.of(cluster, prof))
    assert post[1, 0] == pytest.approx(1e-6)
    assert pre[1, 0] == pytest.approx(default.fixed["hash"] + 10 * default.per_element["hash"])


@pytest.mark.parametrize("obj,message", [
    ({"schema": "other"}, "not a profile"),
    ({"schema": SCHEMA, "nic_bw": 1}, "unknown profile key"),
    ({"schema": SCHEMA, "nic_bandwidth": "fast"}, "nic_bandwidth"),
    ({"schema": SCHEMA, "work_seconds_per_element": {"sort": 1e-9}}, "unknown work kind"),
    ({"schema": SCHEMA, "work_seconds_per_element": {"merge": -1}}, "non-negative"),
    ({"schema": SCHEMA, "work_seconds_per_element": {"add": 1e-9}, "scaled": {"add": 1}}, "scaled must be an object"),
    ({"schema": SCHEMA, "work_seconds_per_element": {"add": 1e-9}, "scaled": {"scan": "as add"}},
     "scaled names kind\\(s\\) it does not price: scan"),
])
def test_bad_profiles(tmp_path, obj, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_profile(write(tmp_path, obj))
    assert "p.json" in str(err.value) and "\n" not in str(err.value)


def test_missing_and_garbled(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_profile(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ConfigError, match="JSON"):
        load_profile(bad)


def test_efficiency_and_cores(tmp_path):
    prof = load_profile(write(tmp_path, {"schema": SCHEMA, "nic_efficiency": {"1": 0.9, "4": 0.6}, "host_cores": 2}))
    assert prof.host_cores == 2
    eff = prof.nic_efficiency
    assert eff(1) == eff(0) == 0.9 and eff(4) == eff(9) == 0.6
    assert 1 / eff(2) == pytest.approx(1 / 0.9 + (1 / 0.6 - 1 / 0.9) / 3)  # time per byte linear in k
    assert eff.to_json() == {"1": 0.9, "4": 0.6}
    plain = load_profile(write(tmp_path, {"schema": SCHEMA}))
    assert plain.nic_efficiency is None and plain.host_cores is None
    assert plain.host_efficiency is None and plain.cpu_slowdown == 1.0 and plain.rendezvous is False
    assert load_profile(write(tmp_path, {"schema": SCHEMA, "rendezvous": True})).rendezvous is True


def test_host_efficiency_and_cpu_slowdown(tmp_path):
    prof = load_profile(write(tmp_path, {"schema": SCHEMA, "host_efficiency": {"1": 0.97, "240": 0.56},
                                         "cpu_slowdown": 1.3}))
    assert prof.host_efficiency(1) == 0.97 and prof.host_efficiency(500) == 0.56 and prof.cpu_slowdown == 1.3


@pytest.mark.parametrize("obj,message", [
    ({"nic_efficiency": {"0": 0.5}}, "k >= 1"),
    ({"nic_efficiency": {"2": 1.5}}, "in \\(0, 1\\]"),
    ({"nic_efficiency": {"x": 0.5}}, "bad entry"),
    ({"nic_efficiency": [0.5]}, "non-empty object"),
    ({"host_cores": 0}, "host_cores"),
    ({"host_cores": 1.5}, "host_cores"),
    ({"host_efficiency": {"1": 0.0}}, "host_efficiency: efficiency values must be in \\(0, 1\\]"),
    ({"host_efficiency": "fast"}, "host_efficiency"),
    ({"exchange_cpu": {"stage": -1}}, "exchange_cpu stage"),
    ({"exchange_cpu": {"per_stage": 1e-3}}, "exchange_cpu must be an object"),
    ({"exchange_cpu": 3}, "exchange_cpu must be an object"),
    ({"cpu_slowdown": 0}, "cpu_slowdown"),
    ({"cpu_slowdown": "x"}, "cpu_slowdown"),
    ({"rendezvous": 1}, "rendezvous must be true or false"),
])
def test_bad_efficiency_and_cores(tmp_path, obj, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_profile(write(tmp_path, {"schema": SCHEMA, **obj}))
    assert "p.json" in str(err.value) and "\n" not in str(err.value)


def test_simulate_applies_profile_nic_efficiency(tmp_path):
    """A profile's NIC efficiency reaches the simulation: at eff = 0.5 for any flow count, with no
    latency and no local work, every message takes exactly twice as long."""
    from zensim.sim.run import simulate
    from zensim.trace import TensorSpec, TraceWriter

    trace = tmp_path / "t.zt"
    with TraceWriter(trace, [TensorSpec("g", 10_000)], workers=3, iterations=1) as w:
        for r in range(3):
            w.write(0, r, 0, list(range(r * 100, r * 100 + 500)))
    zero = {k: 0.0 for k in WORK_OPS}
    plain = load_profile(write(tmp_path, {"schema": SCHEMA, "work_seconds_per_element": zero}))
    slow = load_profile(write(tmp_path, {"schema": SCHEMA, "work_seconds_per_element": zero,
                                         "nic_efficiency": {"1": 0.5}}))
    cluster = ClusterSpec(3, 1, 1e8)
    for model in MODELS:
        base = simulate(trace, ["agsparse-p2p", "zen"], Costs.of(cluster, plain), model)
        half = simulate(trace, ["agsparse-p2p", "zen"], Costs.of(cluster, slow), model)
        for a, b in zip(base, half):
            assert b.time_s == pytest.approx(2 * a.time_s, rel=1e-9)


# The shipped default work model is made by this command from the committed H200 measurement
# (docs/results-data/README.md); the test re-runs it and compares the whole file.
DEFAULT_FIT = ["--like", "merge=merge.coo", "--like", "encode=encode.coo", "--like", "decode=decode.coo",
               "--like", "encode.bitmap=encode.coo", "--like", "decode.bitmap=decode.coo", "--like", "add=add.dense",
               "--like", "scan=scan.dense", "--like", "pack=pack.bitmap", "--like", "unpack=unpack.bitmap",
               "--fixed-from", "copy"]


def test_default_work_model_is_the_h200_measurement(tmp_path):
    from pathlib import Path

    from zensim.cli import main
    from zensim.net.profile import DEFAULT_PROFILE
    from zensim.train.cost import measured_points

    root = Path(__file__).resolve().parents[1]
    measured = root / "docs" / "results-data" / "h200-device-steps.json"
    shipped = json.loads(DEFAULT_PROFILE.read_text())
    out = tmp_path / "d.json"
    assert main(["work", "fit", str(measured), *DEFAULT_FIT, "--source", shipped["source"], "-o", str(out)]) == 0
    assert out.read_text() == DEFAULT_PROFILE.read_text()
    raw = json.loads(measured.read_text())
    assert raw["payloads"] == "device" and "H200" in raw["device"]
    work = WorkCost.default()
    assert set(WORK_OPS) <= set(work.per_element) and work.source == shipped["source"]
    for word in ("H200", "torch 2.11.0+cu130", "zensim 5c82413", "2026-11-27", "zensim work measure"):
        assert word in work.source
    fits = {kind: fit(*points) for kind, points in measured_points(raw).items()}
    launch = fits["copy"][0]
    assert set(work.fixed.values()) == {launch} and set(work.fixed) == set(work.per_element)
    scaled = shipped["scaled"]
    for kind, beta in work.per_element.items():
        if kind in scaled:
            source = scaled[kind].removeprefix("as ").removesuffix(" (x1)")
            assert source in fits and source not in scaled and beta == fits[source][1]
        else:
            assert beta == fits[kind][1]


def test_records_name_their_work_model(tmp_path):
    from zensim.report.table import render_records
    from zensim.sim.run import simulate
    from zensim.trace import TensorSpec, TraceWriter

    trace = tmp_path / "t.zt"
    with TraceWriter(trace, [TensorSpec("g", 1_000)], workers=2, iterations=1) as w:
        for r in range(2):
            w.write(0, r, 0, list(range(r * 10, r * 10 + 50)))
    cluster = ClusterSpec(2, 1, 1e8)
    default = WorkCost.default()
    rec = simulate(trace, ["zen"], cluster, "fifo")[0]
    costs = rec.cluster["costs"]
    assert costs["work_source"] == default.source
    assert costs["work"] == [[k, default.fixed[k], v] for k, v in default.per_element.items()]
    assert f"model fifo, work: {default.source.split(';')[0]}; trace " in render_records([rec])
    prof = load_profile(write(tmp_path, {"schema": SCHEMA, "work_seconds_per_element": {"hash": 1e-9},
                                         "source": "my bench"}))
    named = simulate(trace, ["zen"], Costs.of(cluster, prof), "fifo")[0].cluster["costs"]["work_source"]
    assert named.startswith("my bench; ") and default.source in named and "hash" not in named.split(";")[1]
