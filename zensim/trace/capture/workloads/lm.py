"""What the two language-model workloads share: corpus windows as data, next-token cross-entropy."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from zensim.trace.capture.corpus import load_corpus
from zensim.trace.capture.workloads.base import SequenceSampler, Workload


class LanguageModel(Workload):
    """A next-token model over `tokens`; `config` describes the model and corpus for the trace."""

    def __init__(
        self, model: nn.Module, tokens: np.ndarray, batch_size: int, seed: int, seq_len: int, config: dict[str, Any]
    ) -> None:
        super().__init__(model, batch_size, seed)
        self.sampler = SequenceSampler(tokens, seq_len, batch_size, seed)
        self.config = {**config, "seq_len": seq_len}

    @classmethod
    def create(cls, batch_size: int | None, seed: int, corpus: str | None) -> "LanguageModel":
        """The model over a corpus (default: the installed KJV; one-line error if missing)."""
        text = load_corpus(corpus)
        return cls(text.tokens, text.vocab_size, seed=seed, corpus=text.name,
                   **({} if batch_size is None else {"batch_size": batch_size}))

    def batch(self, step: int, worker: int, workers: int) -> tuple[torch.Tensor, torch.Tensor]:
        """B sequences of the corpus: (inputs, targets)."""
        return self.sampler.batch(step, worker, workers)

    def loss(self, model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Mean next-token cross-entropy."""
        inputs, targets = batch
        logits = model(inputs)
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def meta(self) -> dict[str, Any]:
        """Model shape and corpus (real text)."""
        return {**super().meta(), **self.config, "synthetic_data": False}
