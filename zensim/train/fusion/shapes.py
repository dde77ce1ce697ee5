"""Transformer models by shape (BERT-base, GPT-2, a 3B GPT) and a FLOP estimate of their per-tensor compute.

An estimate, marked as one: a weight matrix of n elements applied to T tokens costs 2 T n FLOPs
forward and 4 T n backward; embeddings, biases and norms cost nothing (a gather, elementwise ops)
and attention's score matmuls (2 x 2 T s d per layer, a few percent at s = 128-1024) are left out.
Seconds = FLOPs / (datasheet FLOP/s x efficiency). For measured or roofline profiles of real
workloads use the per-layer profiles of `zensim.train` (docs/iteration.md) instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from zensim.train.layers import LayerProfile

# datasheet dense FLOP/s: V100 fp32 (the thesis' testbeds), A100 bf16 tensor cores (Gemini's p4d)
DEVICES = {"v100": 15.7e12, "a100-bf16": 312e12}


@dataclass(frozen=True)
class Tensor:
    """One parameter: name, elements, and whether it is a matmul weight (costs FLOPs) or not."""

    name: str
    numel: int
    matmul: bool


def transformer(layers: int, hidden: int, vocab: int, context: int, ffn: int | None = None) -> list[Tensor]:
    """Parameters in definition order: embeddings, then per layer q, k, v, out, ffn1, ffn2 with biases and norms."""
    ffn = ffn or 4 * hidden
    out = [Tensor("wte", vocab * hidden, False), Tensor("wpe", context * hidden, False)]
    for i in range(layers):
        p = f"h{i}."
        out += [Tensor(p + "ln1.w", hidden, False), Tensor(p + "ln1.b", hidden, False)]
        for m in ("q", "k", "v", "o"):
            out += [Tensor(p + m + ".w", hidden * hidden, True), Tensor(p + m + ".b", hidden, False)]
        out += [Tensor(p + "ln2.w", hidden, False), Tensor(p + "ln2.b", hidden, False),
                Tensor(p + "ffn1.w", hidden * ffn, True), Tensor(p + "ffn1.b", ffn, False),
                Tensor(p + "ffn2.w", ffn * hidden, True), Tensor(p + "ffn2.b", hidden, False)]
    out += [Tensor("ln_f.w", hidden, False), Tensor("ln_f.b", hidden, False)]
    return out


MODELS = {
    "bert-base": lambda: transformer(12, 768, 30522, 512),
    "gpt2": lambda: transformer(12, 768, 50257, 1024),
    "gpt-3b": lambda: transformer(36, 2560, 50257, 1024),
}


@dataclass(frozen=True)
class Estimate:
    """Per-tensor bytes and backward seconds in gradient-ready order (reverse definition), and forward seconds."""

    names: list[str]
    sizes: np.ndarray
    backward: np.ndarray
    forward: float


def estimate(tensors: list[Tensor], tokens: int, flops: float, efficiency: float = 0.4,
             grad_bytes: int = 4) -> Estimate:
    """FLOP estimate of one GPU's step on `tokens` tokens; gradients ready in reverse definition order."""
    rate = flops * efficiency
    ready = tensors[::-1]
    back = np.array([4.0 * tokens * t.numel / rate if t.matmul else 0.0 for t in ready])
    fwd = sum(2.0 * tokens * t.numel for t in tensors if t.matmul) / rate
    return Estimate([t.name for t in ready], np.array([float(t.numel * grad_bytes) for t in ready]), back, fwd)


def shape_profile(name: str, tokens: int, device: str, batch: int, optimizer_s: float = 0.0,
                  efficiency: float = 0.4) -> "LayerProfile":
    """A model of MODELS as a layer profile for the iteration timeline (kind `estimate`): the FLOP
    estimate's backward seconds per tensor in gradient-ready order, fp32 gradients (mixed precision
    keeps fp32 gradients, and the timeline's dense all-reduce is fp32), the forward and `optimizer_s`."""
    from zensim.train.layers import LayerProfile, ParamTime

    tensors = MODELS[name]()
    e = estimate(tensors, tokens, DEVICES[device], efficiency)
    index = {t.name: i for i, t in enumerate(tensors)}
    params = tuple(ParamTime(n, int(size) // 4, index[n], 0.0, float(b)) for n, size, b in zip(e.names, e.sizes, e.backward))
    return LayerProfile(params, e.forward, optimizer_s=optimizer_s, kind="estimate", device=f"{device} (datasheet x {efficiency})",
                        workload=name, batch_size=batch,
                        source=f"zensim.train.fusion.shapes: {name} by shape, {tokens} tokens per GPU, 2 T n forward and "
                        f"4 T n backward FLOPs per weight matrix at {DEVICES[device]:.3g} FLOP/s x {efficiency}")
