"""Estimate a layer profile for a GPU you do not have: every operator of a real training step, timed by a roofline.

The workload trains on the CPU at the target batch size under a dispatch mode that sees every ATen
operator the step runs (forward, backward, optimizer) and advances a modelled clock by

    t(op) = max(flops / peak(math mode), bytes / memory bandwidth) + launch_s

with the FLOPs of matrix products, convolutions and attention from torch's own formulas
(`torch.utils.flop_counter`) and the bytes of every input and output tensor (each distinct element
once: a broadcast operand counts its real size). Views and allocations without a kernel cost nothing.
The same hooks that measure a real step (`LayerRecorder`) read the modelled clock, so an estimate has
exactly the form of a measurement. Math mode: float32 matrix products run in FP32 (PyTorch's default,
TF32 off) unless `tf32_matmul`; float32 convolutions in TF32 where the GPU has it (cuDNN's default);
float16/bfloat16 on tensor cores.

Limits: the operators are those of the CPU implementation (an LSTM is a loop of per-step matrix
products here, one cuDNN call on a GPU), no kernel fusion, no overlap of kernels, and peaks that real
kernels do not reach (see `Device.efficiency`); docs/iteration.md compares an estimate with an H100.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry

from zensim.train.clocks import ModelClock
from zensim.train.devices import Device
from zensim.train.layers import LayerProfile
from zensim.train.record import train_steps

aten = torch.ops.aten
# operators that launch no kernel: allocations (no memset) and metadata-only changes
_FREE = {aten.empty.memory_format, aten.empty_strided.default, aten.empty_like.default, aten.detach.default,
         aten.alias.default, aten.lift_fresh.default, aten._local_scalar_dense.default, aten.set_.source_Storage,
         aten.set_.source_Storage_storage_offset, aten.resize_.default}
_CONV = {aten.convolution, aten._convolution, aten.convolution_backward, aten.cudnn_convolution,
         aten.convolution_overrideable, aten._slow_conv2d_forward}
_MODES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64"}


def distinct_bytes(t: torch.Tensor) -> int:
    """Bytes of the distinct elements a tensor addresses (a stride-0 broadcast dimension counts once)."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n * t.element_size()


class RooflineMode(TorchDispatchMode):
    """Advances `clock` by the roofline time of every operator run under it, on `device`."""

    def __init__(self, device: Device, clock: ModelClock, tf32_matmul: bool = False) -> None:
        super().__init__()
        self.device = device
        self.clock = clock
        self.tf32_matmul = tf32_matmul
        self.ops = 0
        self.flops = 0.0
        self.bytes = 0.0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.clock.now += self.seconds(func, args, kwargs, out)
        return out

    def seconds(self, func: Any, args: tuple, kwargs: dict, out: Any) -> float:
        """Roofline time of one operator call."""
        if func in _FREE or func.is_view:
            return 0.0
        inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        moved = float(sum(distinct_bytes(t) for t in inputs + outputs))
        packet = func._overloadpacket
        flops = float(flop_registry[packet](*args, **kwargs, out_val=out)) if packet in flop_registry else 0.0
        compute = flops / self.device.peak(self._mode(packet, inputs)) if flops else 0.0
        self.ops += 1
        self.flops += flops
        self.bytes += moved
        return max(compute, moved / self.device.bandwidth) + self.device.launch_s

    def _mode(self, packet: Any, inputs: list[torch.Tensor]) -> str:
        """The math mode of a FLOP-counted operator from its operands' dtype."""
        mode = _MODES.get(inputs[0].dtype, "float32") if inputs else "float32"
        if mode == "float32" and (packet in _CONV or self.tf32_matmul):
            return "tf32"
        return mode


def estimate_workload(workload: Any, device: Device, tf32_matmul: bool = False) -> LayerProfile:
    """The estimated layer profile of a built-in workload on `device` (one step after a warm-up step)."""
    clock = ModelClock()
    mode = RooflineMode(device, clock, tf32_matmul)
    # oneDNN would run an LSTM as one opaque operator without a FLOP formula; without it the CPU runs
    # the per-step matrix products that a GPU's RNN kernels run too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # oneDNN's flags() warns about TF32 on Intel GPUs
        with torch.backends.mkldnn.flags(enabled=False), mode:
            recorder = train_steps(workload, 2, torch.device("cpu"), clock, foreach=True)
    steps = len(recorder.steps)
    return recorder.profile(
        1, kind="estimate", device=device.label, workload=workload.name, batch_size=workload.batch_size,
        source=f"zensim layers estimate: {workload.name}, batch {workload.batch_size}, roofline of every ATen "
               f"operator of one training step on {device.label}: {device.source}; launch {device.launch_s * 1e6:g} us "
               f"per kernel, efficiency {device.efficiency:g}, tf32 matmul {tf32_matmul}",
        extra={"operators_per_step": mode.ops // steps, "flops_per_step": mode.flops / steps,
               "bytes_per_step": mode.bytes / steps})
