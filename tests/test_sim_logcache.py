"""The message-log cache: a scheme's driver runs once per (trace content, iteration, cluster shape, scheme
and options, code version); links, latencies, models and fabrics reuse its log and give the same records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zensim.sim import run as run_mod
from zensim.sim.cluster import build_cluster
from zensim.sim.logcache import LogCache
from zensim.sim.run import simulate
from zensim.trace import TensorSpec, TraceWriter

SCHEMES = ["dense-allreduce", "zen", "sparcml"]
VOLATILE = ("wall_s", "driver_s", "log_cached", "provenance")


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    rng = np.random.default_rng(11)
    with TraceWriter(path, [TensorSpec("w", 5000)], workers=8, iterations=2) as w:
        for it in range(2):
            for worker in range(8):
                w.write(it, worker, 0, np.unique(rng.choice(5000, 200, replace=False)))
    return path


@pytest.fixture
def driver_runs(monkeypatch: pytest.MonkeyPatch) -> list:
    """Every driver run (place() call) of the test."""
    calls: list = []
    real = run_mod.place

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(run_mod, "place", counted)
    return calls


def stable(records) -> list[dict]:
    return [{k: v for k, v in r.to_dict().items() if k not in VOLATILE} for r in records]


def test_links_models_and_fabrics_reuse_the_log(trace, tmp_path, driver_runs):
    cache = LogCache(tmp_path / "cache")
    variants = [dict(nic="10Gbps"), dict(nic="100Gbps", nic_latency="5us"), dict(fabric="leafspine", oversub=2.0)]
    for model in ("fifo", "maxmin", "analytic"):
        for links in variants:
            cluster, _ = build_cluster(4, 2, **links)
            cached = simulate(trace, SCHEMES, cluster, model, cache=cache)
            assert stable(cached) == stable(simulate(trace, SCHEMES, cluster, model))
    # uncached runs: 9 x 3 driver runs; cached: 3 (one per scheme), all later ones from the cache
    assert len(driver_runs) == 9 * 3 + 3
    assert (cache.misses, cache.hits) == (3, 8 * 3)


@pytest.mark.parametrize("change", [dict(machines=2), dict(gpus=1), dict(iteration=1), dict(layout="flat"),
                                    dict(options={"value_dtype": "float16"})])
def test_what_the_log_depends_on_misses(trace, tmp_path, driver_runs, change):
    cache = tmp_path / "cache"
    cluster, _ = build_cluster(4, 2)
    simulate(trace, ["zen"], cluster, cache=cache)
    before = len(driver_runs)
    other, _ = build_cluster(change.get("machines", 4), change.get("gpus", 2))
    records = simulate(trace, ["zen"], other, iteration=change.get("iteration", 0), layout=change.get("layout", "zen"),
                       options=change.get("options"), cache=cache)
    assert len(driver_runs) - before == 1  # zen's driver ran again
    assert not any(r.simulated.log_cached for r in records)


def test_an_unreadable_entry_is_computed_again(trace, tmp_path):
    cache = LogCache(tmp_path / "cache")
    cluster, _ = build_cluster(4, 1)
    first = simulate(trace, ["zen"], cluster, cache=cache)
    for entry in (tmp_path / "cache" / "logs").rglob("*"):
        if entry.is_file():
            entry.write_bytes(b"not a pickle")
    again = simulate(trace, ["zen"], cluster, cache=cache)
    assert stable(again) == stable(first) and not again[0].simulated.log_cached
    assert simulate(trace, ["zen"], cluster, cache=cache)[0].simulated.log_cached
