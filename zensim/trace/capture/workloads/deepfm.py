"""`deepfm`: DeepFM click-through model on SYNTHETIC data with Zipf-distributed categorical ids.

Criteo-like shape: categorical fields of very different cardinalities; within a field, id i is
drawn with probability proportional to 1 / (i + 1)^a (ids numbered by decreasing frequency, as
CTR pipelines number them). Labels come from a fixed hidden logistic model of the ids, so that
training has something to learn. The sparse parameters (first-order weights and the shared
embedding table, rows of all fields stacked) are recorded, one LayerSpec per field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from zensim.trace.capture.workloads.base import Workload, step_rng
from zensim.trace.format import LayerSpec

FIELD_SIZES = (20_000, 10_000, 5_000, 2_000, 1_000, 500, 200, 100, 50, 20)
ZIPF_EXPONENT = 1.1


class DeepFMModel(nn.Module):
    """First-order weights + FM second-order interactions + an MLP over the field embeddings."""

    def __init__(self, rows: int, fields: int, embed: int, hidden: int) -> None:
        super().__init__()
        self.linear = nn.Embedding(rows, 1)
        self.embedding = nn.Embedding(rows, embed)
        self.bias = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Sequential(
            nn.Linear(fields * embed, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Click logits for a batch x fields matrix of global row ids."""
        emb = self.embedding(ids)  # batch x fields x embed
        fm = 0.5 * (emb.sum(1).pow(2) - emb.pow(2).sum(1)).sum(1)
        first = self.linear(ids).sum((1, 2))
        return self.bias + first + fm + self.mlp(emb.flatten(1)).squeeze(1)


class DeepFM(Workload):
    """DeepFM on synthetic Zipf ids; records `linear.weight` and `embedding.weight`."""

    name = "deepfm"
    lr = 1e-3

    def __init__(
        self, batch_size: int = 256, seed: int = 0, field_sizes: Sequence[int] = FIELD_SIZES,
        embed: int = 8, hidden: int = 64, exponent: float = ZIPF_EXPONENT,
    ) -> None:
        torch.manual_seed(seed)
        self.field_sizes = tuple(int(s) for s in field_sizes)
        self.offsets = np.concatenate([[0], np.cumsum(self.field_sizes)]).astype(np.int64)
        rows = int(self.offsets[-1])
        super().__init__(DeepFMModel(rows, len(self.field_sizes), embed, hidden), batch_size, seed)
        self.embed = embed
        self.exponent = exponent
        self.cdfs = [np.cumsum(w) / w.sum() for w in (1.0 / np.arange(1, s + 1) ** exponent for s in self.field_sizes)]
        self.truth = np.random.default_rng([seed, 1 << 20]).normal(0.0, 0.5, rows)

    def recorded(self) -> list[str]:
        """The two id-indexed tables."""
        return ["linear.weight", "embedding.weight"]

    def layers(self) -> Mapping[str, Sequence[LayerSpec]]:
        """One layer per field in each table (rows of field f, times the row width)."""
        return {
            name: [LayerSpec(f"{name}[field{f}]", int(lo) * width, size * width)
                   for f, (lo, size) in enumerate(zip(self.offsets, self.field_sizes))]
            for name, width in (("linear.weight", 1), ("embedding.weight", self.embed))
        }

    def batch(self, step: int, worker: int, workers: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(global row ids batch x fields, 0/1 labels)."""
        rng = step_rng(self.seed, step, worker)
        local = np.stack([np.searchsorted(cdf, rng.random(self.batch_size), side="right") for cdf in self.cdfs], 1)
        ids = np.minimum(local, np.array(self.field_sizes) - 1) + self.offsets[:-1]
        logit = self.truth[ids].sum(1) - 1.0
        labels = rng.random(self.batch_size) < 1.0 / (1.0 + np.exp(-logit))
        return torch.as_tensor(ids), torch.as_tensor(labels, dtype=torch.float32)

    def loss(self, model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Mean binary cross-entropy on the click logits."""
        ids, labels = batch
        return nn.functional.binary_cross_entropy_with_logits(model(ids), labels)

    def meta(self) -> dict[str, Any]:
        """Field cardinalities, Zipf exponent, and that the data are synthetic."""
        return {**super().meta(), "field_sizes": list(self.field_sizes), "zipf_exponent": self.exponent,
                "embed": self.embed, "synthetic_data": True,
                "data": "synthetic Zipf-distributed categorical ids, labels from a hidden logistic model"}
