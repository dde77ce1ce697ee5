"""Layer profiles from layer shapes: each layer's roofline in closed form, the ready order, errors naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zensim.cli import main
from zensim.errors import ConfigError
from zensim.train.devices import Device
from zensim.train.layers import load_layers
from zensim.train.shapes import load_shapes_profile, shapes_profile

# round figures: 1e12 FLOP/s, 1e9 B/s, 1 us per launch
DEV = Device("test", "test GPU", {"float32": 1e12}, 1e9, 1e-6, "a test device")


def spec(*layers: dict, batch: int = 8, tokens: int = 1, opt: int = 12) -> dict:
    return {"schema": "zensim-shapes/1", "workload": "w", "batch_size": batch, "tokens": tokens,
            "optimizer_bytes_per_element": opt, "layers": list(layers)}


def roof(flops: float, nbytes: float) -> float:
    return max(flops / 1e12, nbytes / 1e9) + 1e-6


def test_linear_layer_is_its_products_roofline() -> None:
    t, i, o = 8 * 3, 100, 50
    prof = shapes_profile(spec({"name": "fc", "kind": "linear", "in": i, "out": o}, tokens=3), DEV)
    product = roof(2 * t * i * o, 4 * (t * i + i * o + t * o))
    assert [p.name for p in prof.params] == ["fc.bias", "fc.weight"]  # reverse definition order
    assert [p.numel for p in prof.params] == [o, o * i] and [p.index for p in prof.params] == [1, 0]
    assert prof.forward_s == pytest.approx(product, rel=1e-12)
    assert sum(p.forward_s for p in prof.params) == pytest.approx(product, rel=1e-12)  # shared by size
    assert prof.params[0].backward_s == pytest.approx(2 * product + roof(0, 4 * (t * o + o)), rel=1e-12)
    assert prof.params[1].backward_s == 0.0 and prof.backward_tail_s == 0.0  # ready with the bias
    assert prof.optimizer_s == pytest.approx(2e-6 + 12 * (o * i + o) / 1e9, rel=1e-12)
    assert prof.kind == "estimate" and prof.batch_size == 8 and prof.numel == o * i + o


def test_lstm_layer_runs_one_recurrent_step_per_token() -> None:
    b, tokens, i, h = 4, 5, 16, 32
    prof = shapes_profile(spec({"name": "rnn", "kind": "lstm", "input": i, "hidden": h}, batch=b, tokens=tokens), DEV)
    t = b * tokens
    inputs = roof(2 * t * i * 4 * h, 4 * (t * i + 4 * h * i + t * 4 * h))
    step = roof(2 * b * h * 4 * h, 4 * (b * h + 4 * h * h + b * 4 * h))
    cell = roof(0, 4 * 8 * b * h)
    assert prof.forward_s == pytest.approx(inputs + tokens * (step + cell), rel=1e-12)
    assert prof.backward_s == pytest.approx(2 * inputs + tokens * 2 * (step + cell), rel=1e-12)
    assert {p.name: p.numel for p in prof.params} == {"rnn.weight_ih": 4 * h * i, "rnn.weight_hh": 4 * h * h,
                                                      "rnn.bias_ih": 4 * h, "rnn.bias_hh": 4 * h}


def test_embedding_backward_zero_fills_the_whole_table() -> None:
    rows, dim, lookups, b = 10_000, 64, 3, 8
    prof = shapes_profile(spec({"name": "emb", "kind": "embedding", "rows": rows, "dim": dim, "lookups": lookups},
                               batch=b), DEV)
    looked = b * lookups * dim
    assert prof.forward_s == pytest.approx(roof(0, 8 * looked + 8 * b * lookups), rel=1e-12)
    assert prof.params[0].backward_s == pytest.approx(roof(0, 4 * rows * dim) + roof(0, 12 * looked + 8 * b * lookups),
                                                      rel=1e-12)
    assert prof.params[0].name == "emb.weight" and prof.params[0].numel == rows * dim


def test_backward_runs_in_reverse_and_parameterless_layers_charge_the_next_ready() -> None:
    layers = ({"name": "emb", "kind": "embedding", "rows": 100, "dim": 8, "lookups": 2},
              {"name": "fc", "kind": "linear", "in": 8, "out": 8, "bias": False},
              {"name": "head", "kind": "linear", "in": 8, "out": 1000, "params": False})
    prof = shapes_profile(spec(*layers), DEV)
    alone = shapes_profile(spec(*layers[:2]), DEV)
    head = roof(2 * 8 * 8 * 1000, 4 * (8 * 8 + 8 * 1000 + 8 * 1000))
    assert [p.name for p in prof.params] == ["fc.weight", "emb.weight"]
    assert prof.params[0].backward_s == pytest.approx(alone.params[0].backward_s + 2 * head, rel=1e-12)
    assert prof.params[1].backward_s == alone.params[1].backward_s
    assert prof.forward_s == pytest.approx(alone.forward_s + head, rel=1e-12)
    assert list(prof.ready_s) == sorted(prof.ready_s)


def test_derating_scales_every_roofline_term() -> None:
    layer = {"name": "fc", "kind": "linear", "in": 512, "out": 512}
    full, half = (shapes_profile(spec(layer, batch=4096), dev) for dev in (DEV, DEV.derated(0.5)))
    assert half.forward_s - 1e-6 == pytest.approx(2 * (full.forward_s - 1e-6), rel=1e-12)


@pytest.mark.parametrize("doc,pattern", [
    ({"schema": "other"}, r"not a zensim-shapes/1 document"),
    (spec({"name": "a", "kind": "conv", "in": 1, "out": 1}), r"layers\[0\]: kind 'conv'"),
    (spec({"name": "a", "kind": "linear", "in": 0, "out": 1}), r"layers\[0\] \(a\): in must be a positive integer"),
    (spec({"name": "a", "kind": "linear", "in": 1, "out": 1}, {"name": "a", "kind": "linear", "in": 1, "out": 1}),
     r"layers\[1\]: name must be a unique"),
    (spec({"name": "a", "kind": "linear", "in": 1, "out": 1, "params": False}), r"no layer has parameters"),
    (spec({"name": "a", "kind": "linear", "in": 1, "out": 1}, batch=0), r"batch_size must be an integer >= 1"),
    (dict(spec(), layers=[]), r"layers must be a non-empty list"),
])
def test_bad_shapes_name_the_file_and_the_problem(tmp_path: Path, doc: dict, pattern: str) -> None:
    path = tmp_path / "m.shapes.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=rf"^{path}: .*{pattern}|^{path}: {pattern}"):
        load_shapes_profile(path, DEV)


def test_cli_writes_the_shipped_zen_sized_profiles(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The shipped ZEN-sized shapes give ZEN's Table 1 sizes (embedding 406M / 214M, dense about 20M / 68M)."""
    root = Path(__file__).resolve().parents[1]
    sizes = {}
    for model in ("lstm", "deepfm"):
        out = tmp_path / f"{model}.layers.json"
        assert main(["layers", "shapes", str(root / "scenarios" / "zen-size" / f"{model}.shapes.json"),
                     "--device", "v100", "-o", str(out)]) == 0
        prof = load_layers(out)
        emb = prof.by_name()["embedding.weight"].numel
        sizes[model] = (emb, prof.numel - emb, prof.params[-1].name)
    assert sizes["lstm"][0] == 793_471 * 512 and round(sizes["lstm"][1] / 1e6) == 20
    assert sizes["deepfm"][0] == 835_938 * 256 and abs(sizes["deepfm"][1] / 68e6 - 1) < 0.02
    assert sizes["lstm"][2] == sizes["deepfm"][2] == "embedding.weight"  # the embedding is ready last
    capsys.readouterr()
    assert main(["layers", "shapes", str(tmp_path / "none.json"), "--device", "v100", "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "none.json: cannot read" in err[0] and not (tmp_path / "x.json").exists()
