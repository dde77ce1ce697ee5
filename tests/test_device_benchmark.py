"""benchmarks/device.py, the prepared device check, run at CI size on the CPU: every section runs
and the device's results equal numpy's (on a GPU machine the same command runs at full size)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = str(Path(__file__).resolve().parents[1] / "benchmarks")


@pytest.fixture(scope="module")
def device_benchmark():  # type: ignore[no-untyped-def]
    """benchmarks/device.py as a module (on sys.path, so that its spawned DDP ranks import it too)."""
    sys.path.insert(0, BENCHMARKS)
    try:
        yield importlib.import_module("device")
    finally:
        sys.path.remove(BENCHMARKS)


def test_small_run_on_cpu_agrees_with_numpy(device_benchmark, capsys) -> None:  # type: ignore[no-untyped-def]
    out = device_benchmark.main(["--small", "--device", "cpu", "--reps", "1"])
    assert out["alg1"]["memory_identical"] and out["alg1"]["h0_identical"]
    assert out["alg1"]["stats"]["elements"] == out["alg1"]["ids"]
    assert out["union"]["identical"] and out["union"]["union"] > out["union"]["ids_per_worker"]
    assert out["steps"]["schemes"] and all(s["same_log"] and s["same_bits"] for s in out["steps"]["schemes"].values())
    zen = out["hook"]["zen"]
    assert zen["step_s"] > 0 and zen["hook_cpu_s_per_step"] > 0
    assert zen["params_equal_default"]  # zen's training has the default hook's bits (2 ranks: a + b)
    # the hook thread's time split: the transport's and the hook's own add up to the whole
    assert zen["hook_transport_seconds_per_step"] > 0 and zen["hook_own_seconds_per_step"] > 0
    assert zen["hook_transport_seconds_per_step"] + zen["hook_own_seconds_per_step"] == \
        pytest.approx(zen["hook_seconds_per_step"])
    assert zen["hook_transport_cpu_seconds_per_step"] + zen["hook_own_cpu_seconds_per_step"] == \
        pytest.approx(zen["hook_cpu_s_per_step"])
    assert '"alg1"' in capsys.readouterr().out  # the JSON is printed


def test_unknown_section_is_refused(device_benchmark) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit):
        device_benchmark.main(["--sections", "alg1,nosuch"])
