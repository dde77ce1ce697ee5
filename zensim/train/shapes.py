"""A layer profile from layer shapes on a GPU preset: a roofline per layer, for models too large to train here.

`zensim layers estimate` runs a built-in workload; a model of ZEN's size (a 406M-element embedding)
cannot be trained on this machine. A *shapes* file describes such a model layer by layer, in forward
order, and each layer's kernels are timed by the same roofline as the estimate's operators
(`max(FLOPs / peak, bytes / memory bandwidth) + launch` on a `zensim.train.devices` preset):

    {"schema": "zensim-shapes/1", "workload": "zen-lstm", "batch_size": 128, "tokens": 20,
     "optimizer_bytes_per_element": 12, "source": "why these shapes",
     "layers": [{"name": "embedding", "kind": "embedding", "rows": 793471, "dim": 512, "lookups": 20},
                {"name": "lstm0", "kind": "lstm", "input": 512, "hidden": 1200},
                {"name": "proj", "kind": "linear", "in": 1200, "out": 512},
                {"name": "softmax", "kind": "linear", "in": 512, "out": 8192, "params": false}]}

T = batch_size x tokens positions go through every linear and LSTM layer (fp32 throughout):

- linear (in, out; weight out x in and bias unless "params": false, or "bias": false): forward one
  product, 2 T in out FLOPs over T in + in out + T out elements; backward two products (input and
  weight gradients) of the same FLOPs and elements each, and the bias gradient a reduction of T out;
- lstm (input, hidden h; weight_ih 4h x input, weight_hh 4h x h, bias_ih, bias_hh): forward the input
  projection of all T positions at once, then one recurrent product (2 batch h 4h FLOPs, reading
  weight_hh) and one fused cell kernel (8 batch h elements) per token; backward twice the products
  (input and weight gradients) and the cell kernels;
- embedding (rows x dim, `lookups` rows per sample): forward a gather of batch x lookups rows;
  backward PyTorch's dense embedding gradient: a zero fill of the whole table, then an index_add of
  the looked-up rows (read gradient, read and write the table).

Backward runs the layers in reverse; a layer's parameters become ready together when its backward
ends (ready order within a layer: the reverse of their definition order), the backward of a layer
without parameters is charged to the next parameter ready. The optimizer step reads and writes
`optimizer_bytes_per_element` bytes per parameter element (12: SGD reads parameter and gradient,
writes the parameter; 28 with Adam's two moments), one launch per parameter tensor. Limits: no
kernel fusion beyond the LSTM cell, no overlap of kernels, activations and losses other than the
layers above are not priced (the loss is a few elementwise kernels over T x out).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zensim.errors import ConfigError
from zensim.train.devices import Device
from zensim.train.layers import LayerProfile, ParamTime

SCHEMA = "zensim-shapes/1"
FP32 = 4
KINDS = {"embedding": ("rows", "dim", "lookups"), "linear": ("in", "out"), "lstm": ("input", "hidden")}


@dataclass(frozen=True)
class Kernel:
    """One kernel's work: FLOPs and bytes moved (each counted once per launch)."""

    flops: float
    nbytes: float

    def seconds(self, device: Device) -> float:
        """Roofline time on `device` plus its launch."""
        return max(self.flops / device.peak("float32"), self.nbytes / device.bandwidth) + device.launch_s


@dataclass(frozen=True)
class Layer:
    """A layer of the shapes file: its parameters (name, numel) in definition order and its kernels."""

    name: str
    params: tuple[tuple[str, int], ...]
    forward: tuple[Kernel, ...]
    backward: tuple[Kernel, ...]


def _linear(name: str, spec: dict, t: int) -> Layer:
    i, o = spec["in"], spec["out"]
    params: tuple[tuple[str, int], ...] = ()
    if spec.get("params", True):
        params = ((f"{name}.weight", o * i),) + (((f"{name}.bias", o),) if spec.get("bias", True) else ())
    product = Kernel(2.0 * t * i * o, FP32 * (t * i + i * o + t * o))
    backward = (product, product) + ((Kernel(0.0, FP32 * (t * o + o)),) if len(params) == 2 else ())
    return Layer(name, params, (product,), backward)


def _lstm(name: str, spec: dict, t: int, batch: int) -> Layer:
    i, h = spec["input"], spec["hidden"]
    tokens = t // batch
    params = ((f"{name}.weight_ih", 4 * h * i), (f"{name}.weight_hh", 4 * h * h), (f"{name}.bias_ih", 4 * h),
              (f"{name}.bias_hh", 4 * h))
    inputs = Kernel(2.0 * t * i * 4 * h, FP32 * (t * i + 4 * h * i + t * 4 * h))
    step = Kernel(2.0 * batch * h * 4 * h, FP32 * (batch * h + 4 * h * h + batch * 4 * h))
    cell = Kernel(0.0, FP32 * 8 * batch * h)
    forward = (inputs,) + (step, cell) * tokens
    backward = (inputs, inputs) + (step, step, cell, cell) * tokens
    return Layer(name, params, forward, backward)


def _embedding(name: str, spec: dict, batch: int) -> Layer:
    rows, dim, lookups = spec["rows"], spec["dim"], spec["lookups"]
    looked = batch * lookups * dim
    gather = Kernel(0.0, FP32 * 2 * looked + 8 * batch * lookups)
    zero = Kernel(0.0, FP32 * rows * dim)
    index_add = Kernel(0.0, FP32 * 3 * looked + 8 * batch * lookups)
    return Layer(name, ((f"{name}.weight", rows * dim),), (gather,), (zero, index_add))


def parse_shapes(spec: Any, where: str) -> tuple[dict, list[Layer]]:
    """The header and layers of a shapes document; ConfigError naming `where` and the problem."""
    if not isinstance(spec, dict) or spec.get("schema") != SCHEMA:
        raise ConfigError(f"{where}: not a {SCHEMA} document")
    head = {"workload": spec.get("workload", ""), "source": spec.get("source", "")}
    for key, low, default in (("batch_size", 1, None), ("tokens", 1, 1), ("optimizer_bytes_per_element", 0, 12)):
        value = spec.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ConfigError(f"{where}: {key} must be an integer >= {low}, not {value!r}")
        head[key] = value
    layers = spec.get("layers")
    if not isinstance(layers, list) or not layers:
        raise ConfigError(f"{where}: layers must be a non-empty list")
    batch, t = head["batch_size"], head["batch_size"] * head["tokens"]
    out, names = [], set()
    for k, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise ConfigError(f"{where}: layers[{k}] is not an object")
        name, kind = layer.get("name"), layer.get("kind")
        if kind not in KINDS:
            raise ConfigError(f"{where}: layers[{k}]: kind {kind!r} (choose from {', '.join(KINDS)})")
        if not isinstance(name, str) or not name or name in names:
            raise ConfigError(f"{where}: layers[{k}]: name must be a unique non-empty string, not {name!r}")
        names.add(name)
        for key in KINDS[kind]:
            value = layer.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{where}: layers[{k}] ({name}): {key} must be a positive integer, not {value!r}")
        built = {"embedding": lambda: _embedding(name, layer, batch), "linear": lambda: _linear(name, layer, t),
                 "lstm": lambda: _lstm(name, layer, t, batch)}[kind]()
        out.append(built)
    if not any(layer.params for layer in out):
        raise ConfigError(f"{where}: no layer has parameters")
    return head, out


def shapes_profile(spec: Any, device: Device, where: str = "shapes") -> LayerProfile:
    """The estimated layer profile of the shapes document `spec` on `device` (module docstring)."""
    head, layers = parse_shapes(spec, where)
    index = {}
    for layer in layers:
        for pname, _ in layer.params:
            index[pname] = len(index)
    forward = {layer.name: sum(k.seconds(device) for k in layer.forward) for layer in layers}
    params, pending = [], 0.0
    for layer in reversed(layers):
        pending += sum(k.seconds(device) for k in layer.backward)
        size = sum(n for _, n in layer.params)
        for pname, numel in reversed(layer.params):
            params.append(ParamTime(pname, numel, index[pname], forward[layer.name] * numel / size, pending))
            pending = 0.0
    numel = sum(p.numel for p in params)
    optimizer = len(params) * device.launch_s + head["optimizer_bytes_per_element"] * numel / device.bandwidth
    return LayerProfile(
        tuple(params), float(sum(forward.values())), pending, optimizer, kind="estimate", device=device.label,
        workload=head["workload"], batch_size=head["batch_size"],
        source=f"zensim layers shapes: {where}, a roofline per layer kernel on {device.label}: {device.source}; "
               f"launch {device.launch_s * 1e6:g} us per kernel, efficiency {device.efficiency:g}"
               + (f"; {head['source']}" if head["source"] else ""),
        extra={"tokens": head["tokens"], "optimizer_bytes_per_element": head["optimizer_bytes_per_element"]})


def load_shapes_profile(path: str | Path, device: Device) -> LayerProfile:
    """shapes_profile of a JSON file; errors name the file."""
    try:
        spec = json.loads(Path(path).read_text())
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror or e})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not JSON ({e})") from None
    return shapes_profile(spec, device, str(path))
