"""Layer profiles: the file format, the recorder's attribution (exact under a modelled clock), estimates."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

from zensim.errors import ConfigError
from zensim.train.devices import DEVICES, Device, get_device
from zensim.train.hooks import LayerRecorder
from zensim.train.layers import LayerProfile, ParamTime, load_layers
from zensim.train.clocks import ModelClock
from zensim.train.roofline import RooflineMode

B, N, PEAK = 8, 32, 1e12


def chain(layers: int = 3) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Linear(N, N, bias=False) for _ in range(layers)])


def profile() -> LayerProfile:
    return LayerProfile((ParamTime("b", 10, 1, 0.001, 0.002), ParamTime("a", 20, 0, 0.003, 0.004, "float16")),
                        forward_s=0.01, backward_tail_s=0.0005, optimizer_s=0.002, workload="w", batch_size=4,
                        device="cpu", source="test")


def test_profile_round_trip_and_derived_times(tmp_path) -> None:
    prof = profile()
    path = tmp_path / "w.layers.json"
    prof.save(path)
    again = load_layers(path)
    assert again == prof
    assert again.ready_s.tolist() == pytest.approx([0.002, 0.006])
    assert again.backward_s == pytest.approx(0.0065)
    assert again.compute_s == pytest.approx(0.01 + 0.0065 + 0.002)
    assert [p.nbytes for p in again.params] == [40, 40]
    assert again.scaled(2).compute_s == pytest.approx(2 * prof.compute_s)


def test_the_step_and_hook_figures_round_trip_and_older_profiles_have_none(tmp_path) -> None:
    figures = dict(step_other_s=0.003, hook_before_s=0.0002, hook_before_element_s=1e-9, hook_after_s=0.0001,
                   hook_after_element_s=2e-10)
    prof = LayerProfile(profile().params, forward_s=0.01, backward_tail_s=0.0005, optimizer_s=0.002, **figures)
    path = tmp_path / "w.layers.json"
    prof.save(path)
    again = load_layers(path)
    assert again == prof and {k: json.loads(path.read_text())[k] for k in figures} == figures
    assert again.compute_s == pytest.approx(0.01 + 0.0065 + 0.002 + 0.003)
    assert again.hook_work_s(1000) == (0.0002 + 1e-9 * 1000, 0.0001 + 2e-10 * 1000)
    assert again.scaled(2).hook_work_s(1000) == pytest.approx((2 * 0.0002 + 2e-9 * 1000, 2 * 0.0001 + 4e-10 * 1000))
    assert again.scaled(2).step_other_s == 0.006
    # a profile written before these fields: all 0, nothing priced; and saved as it was, byte for byte
    old = profile().to_json()
    assert not set(figures) & set(old)
    path.write_text(json.dumps(old, indent=1) + "\n")
    loaded = load_layers(path)
    assert [getattr(loaded, k) for k in figures] == [0.0] * 5 and loaded.hook_work_s(10**6) == (0.0, 0.0)
    loaded.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == path.read_text()
    bad = dict(old, hook_after_element_s=-1)
    path.write_text(json.dumps(bad))
    with pytest.raises(ConfigError, match="hook_after_element_s must be a finite non-negative"):
        load_layers(path)


@pytest.mark.parametrize("edit,message", [
    (lambda d: d.update(schema="x"), "not a layer profile"),
    (lambda d: d.update(forward_s=-1), "forward_s must be a finite non-negative"),
    (lambda d: d.update(colour=1), "unknown key"),
    (lambda d: d["params"][0].update(numel=0), "numel must be a positive integer"),
    (lambda d: d["params"][1].update(name="b"), "name 'b' appears twice"),
    (lambda d: d["params"][0].update(dtype="int8"), "dtype 'int8'"),
    (lambda d: d["params"][0].pop("backward_s"), "backward_s must be"),
    (lambda d: d.update(params=[]), "params must be a non-empty list"),
    (lambda d: d.update(kind="guess"), "kind 'guess'"),
])
def test_bad_profiles_are_one_line_errors_naming_the_file(tmp_path, edit, message) -> None:
    raw = profile().to_json()
    edit(raw)
    path = tmp_path / "bad.layers.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=message) as err:
        load_layers(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_unreadable_profile(tmp_path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_layers(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(ConfigError, match="not a readable JSON"):
        load_layers(tmp_path / "x.json")


def flops_only() -> Device:
    """A device where only matrix FLOPs cost time: attribution can be checked in closed form."""
    return Device("test", "test", {"float32": PEAK}, float("inf"), 0.0, "test")


def test_recorder_attribution_is_exact_under_a_modelled_clock() -> None:
    model = chain(3)
    clock = ModelClock()
    recorder = LayerRecorder(model, clock=clock)
    x = torch.randn(B, N)
    with RooflineMode(flops_only(), clock):
        for _ in range(2):
            model.zero_grad(set_to_none=True)
            model(x).square().sum().backward()
    prof = recorder.profile(warmup=1)
    mm = 2 * B * N * N / PEAK  # one B x N by N x N product
    # ready order: last layer first; each layer's backward = grad-weight product (+ grad-input product
    # for every layer but the first, whose input needs no gradient)
    assert [p.name for p in prof.params] == ["2.weight", "1.weight", "0.weight"]
    assert [p.backward_s for p in prof.params] == pytest.approx([2 * mm, 2 * mm, mm])
    assert [p.forward_s for p in prof.params] == pytest.approx([mm, mm, mm])
    assert prof.forward_s == pytest.approx(3 * mm)
    assert prof.backward_tail_s == pytest.approx(0.0)
    assert [p.index for p in prof.params] == [2, 1, 0]


def test_forward_shares_exclude_child_modules_and_split_by_size() -> None:
    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(N, N))  # the outer module's own parameters
            self.v = nn.Parameter(torch.randn(N, N // 4))
            self.inner = nn.Linear(N, N, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x @ self.w).sum() + (x @ self.v).sum()

    model = Outer()
    clock = ModelClock()
    recorder = LayerRecorder(model, clock=clock)
    with RooflineMode(flops_only(), clock):
        model(torch.randn(B, N)).backward()
    prof = recorder.profile()
    mm = 2 * B * N * N / PEAK
    outer = mm + 2 * B * N * (N // 4) / PEAK  # x @ w and x @ v, the inner Linear excluded
    shares = {p.name: p.forward_s for p in prof.params}
    assert shares["inner.weight"] == pytest.approx(mm)
    size_w, size_v = N * N, N * (N // 4)
    assert shares["w"] == pytest.approx(outer * size_w / (size_w + size_v))
    assert shares["v"] == pytest.approx(outer * size_v / (size_w + size_v))


def test_wall_clock_recording_of_real_training_adds_up() -> None:
    model = chain(4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    recorder = LayerRecorder(model, opt)
    x = torch.randn(64, N)
    for _ in range(4):
        with torch.no_grad():
            model(x)  # an evaluation forward without backward is ignored
        opt.zero_grad(set_to_none=True)
        model(x).square().sum().backward()
        opt.step()
    recorder.detach()
    assert len(recorder.steps) == 4
    prof = recorder.profile(warmup=1)
    assert prof.iterations == 3
    assert [p.name for p in prof.params] == ["3.weight", "2.weight", "1.weight", "0.weight"]
    assert all(p.backward_s > 0 and p.forward_s > 0 for p in prof.params)
    assert prof.optimizer_s > 0 and prof.forward_s > 0


def test_recorder_refuses_gradient_accumulation_and_unused_parameters() -> None:
    model = chain(2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    LayerRecorder(model, opt)
    x = torch.randn(4, N)
    model(x).sum().backward()
    with pytest.raises(ConfigError, match="gradient accumulation"):
        model(x).sum().backward()

    class Unused(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.used, self.unused = nn.Linear(N, 1), nn.Linear(N, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.used(x).sum()

    model = Unused()
    recorder = LayerRecorder(model)
    model(x).backward()
    with pytest.raises(ConfigError, match="'unused.weight' got no gradient"):
        recorder.profile()


def test_device_presets() -> None:
    v100 = get_device("V100")
    assert v100.peak("tf32") == v100.peak("float32") == 15.7e12  # no TF32 on a V100
    assert DEVICES["h100"].peak("bfloat16") == 989.5e12
    assert DEVICES["a100"].derated(0.5).bandwidth == pytest.approx(2039e9 / 2)
    with pytest.raises(ConfigError, match="unknown device"):
        get_device("tpu")


def test_torch_profiler_import_matches_the_recorder_in_the_same_run(tmp_path) -> None:
    from torch.profiler import ProfilerActivity, profile as torch_profile

    from zensim.train.kineto import annotate, import_trace

    model = chain(4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    recorder = LayerRecorder(model, opt)
    marks = annotate(model, opt)
    x = torch.randn(256, N)
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(4):
            opt.zero_grad(set_to_none=True)
            model(x).square().sum().backward()
            opt.step()
    marks.detach()
    recorder.detach()
    path = tmp_path / "steps.json"
    prof.export_chrome_trace(str(path))
    imported = import_trace(path, warmup=1, workload="chain")
    measured = recorder.profile(warmup=1)
    assert imported.kind == "imported" and imported.device == "cpu" and imported.iterations == 3
    assert [(p.name, p.numel, p.index, p.dtype) for p in imported.params] == \
        [(p.name, p.numel, p.index, p.dtype) for p in measured.params]
    # the two hooks of each event fire one after the other: the same intervals up to what happens
    # between the two hooks (a few microseconds alone; a preemption on a loaded machine moved one
    # interval by 0.7 ms, so the bound is 5% or 2 ms: a wrong attribution moves a whole layer's time)
    def close(a: float, b: float) -> bool:
        return a == pytest.approx(b, rel=0.05, abs=2e-3)

    for a, b in zip(imported.params, measured.params):
        assert close(a.backward_s, b.backward_s)
    assert close(imported.forward_s, measured.forward_s)
    assert close(imported.optimizer_s, measured.optimizer_s)
    # torch.profiler names the machine's GPUs in deviceProperties even for a CPU-only run: the device
    # is the GPU only when the trace holds device work
    raw = json.loads(path.read_text())
    raw["deviceProperties"] = [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]
    path.write_text(json.dumps(raw))
    assert import_trace(path, warmup=1).device == "cpu"
    raw["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1, "args": {"correlation": -1}})
    path.write_text(json.dumps(raw))
    assert import_trace(path, warmup=1).device == "NVIDIA H100 80GB HBM3"


def test_device_times_are_the_end_of_work_launched_before_each_mark() -> None:
    from zensim.train.kineto import device_times

    events = [  # two kernels launched at 10 and 20 µs, running 100-150 and 150-400 µs
        {"cat": "cuda_runtime", "ts": 10, "args": {"correlation": 1}},
        {"cat": "cuda_runtime", "ts": 20, "args": {"correlation": 2}},
        {"cat": "kernel", "ts": 100, "dur": 50, "args": {"correlation": 1}},
        {"cat": "kernel", "ts": 150, "dur": 250, "args": {"correlation": 2}},
    ]
    got = device_times(events, np.array([5.0, 15.0, 25.0, 500.0]))
    # before any launch: its CPU time; after the first: that kernel's end; then the second's; idle: CPU time
    assert got.tolist() == pytest.approx([5e-6, 150e-6, 400e-6, 500e-6])


def test_import_errors(tmp_path) -> None:
    from zensim.train.kineto import import_trace

    (tmp_path / "plain.json").write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1}]}))
    with pytest.raises(ConfigError, match="no zensim annotations"):
        import_trace(tmp_path / "plain.json")
    (tmp_path / "bad.json").write_text("[1")
    with pytest.raises(ConfigError, match="not a readable JSON Chrome trace"):
        import_trace(tmp_path / "bad.json")
