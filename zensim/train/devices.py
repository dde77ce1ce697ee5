"""GPU presets for estimated layer profiles: datasheet peak FLOP/s and memory bandwidth (estimates).

Peaks are NVIDIA's published figures for the SXM parts (dense, without structured sparsity):
V100 SXM2 (the GPU of ZEN's p3.16xlarge / p3dn.24xlarge testbeds), A100 SXM4 80 GB, H100 SXM5 80 GB.
A datasheet peak is never reached by real kernels, so a profile built from it is an *estimate*, a
lower bound on time unless `efficiency` derates it (docs/iteration.md gives the measured ratio on an
H100). `launch_s` is a fixed cost per operator, not a datasheet figure: PyTorch eager's dispatch and
kernel launch, 7.0-7.2 us per back-to-back operator measured on this project's H100 host
(docs/iteration.md), the same for every preset.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from zensim.errors import ConfigError

TERA = 1e12
LAUNCH_S = 7e-6


@dataclass(frozen=True)
class Device:
    """Peak arithmetic per math mode (FLOP/s), memory bandwidth (bytes/s), per-kernel cost, derating."""

    name: str
    label: str
    flops: dict[str, float]
    memory_bandwidth: float
    launch_s: float
    source: str
    efficiency: float = 1.0  # fraction of the peaks that kernels reach (1 = the datasheet's figures)

    def peak(self, mode: str) -> float:
        """FLOP/s of a math mode ("float32", "tf32", "float16", "bfloat16", "float64"); tf32 falls back to
        float32 on a GPU without it (V100), and every mode to float32 if the datasheet has none."""
        return self.flops.get(mode, self.flops["float32"]) * self.efficiency

    @property
    def bandwidth(self) -> float:
        """Effective memory bandwidth (bytes/s)."""
        return self.memory_bandwidth * self.efficiency

    def derated(self, efficiency: float) -> "Device":
        """The same device with kernels reaching `efficiency` of the peaks."""
        if not 0 < efficiency <= 1:
            raise ConfigError(f"--efficiency {efficiency}: must be in (0, 1]")
        return replace(self, efficiency=efficiency)


DEVICES = {d.name: d for d in (
    Device("v100", "NVIDIA V100 SXM2 (datasheet estimate)",
           {"float64": 7.8 * TERA, "float32": 15.7 * TERA, "float16": 125 * TERA}, 900e9, LAUNCH_S,
           "NVIDIA Tesla V100 datasheet (SXM2): FP64 7.8, FP32 15.7, Tensor 125 TFLOPS; HBM2 900 GB/s"),
    Device("a100", "NVIDIA A100 SXM4 80GB (datasheet estimate)",
           {"float64": 9.7 * TERA, "float32": 19.5 * TERA, "tf32": 156 * TERA, "float16": 312 * TERA,
            "bfloat16": 312 * TERA}, 2039e9, LAUNCH_S,
           "NVIDIA A100 Tensor Core GPU datasheet (SXM 80GB): FP64 9.7, FP32 19.5, TF32 156, BF16/FP16 312 "
           "TFLOPS dense; HBM2e 2,039 GB/s"),
    Device("h100", "NVIDIA H100 SXM5 80GB (datasheet estimate)",
           {"float64": 34 * TERA, "float32": 67 * TERA, "tf32": 494.5 * TERA, "float16": 989.5 * TERA,
            "bfloat16": 989.5 * TERA}, 3.35e12, LAUNCH_S,
           "NVIDIA H100 Tensor Core GPU datasheet (SXM): FP64 34, FP32 67, TF32 989 / BF16 1,979 TFLOPS with "
           "sparsity (half of it dense); HBM3 3.35 TB/s"),
)}


def get_device(name: str, what: str = "--device") -> Device:
    """A preset by name (v100, a100, h100); ConfigError naming the choices (and `what`, the option or
    key) otherwise."""
    try:
        return DEVICES[str(name).lower()]
    except KeyError:
        raise ConfigError(f"{what} {name}: unknown device (choose from {', '.join(DEVICES)})") from None
