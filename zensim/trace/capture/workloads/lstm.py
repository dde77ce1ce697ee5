"""`lstm-lm`: a word-level LSTM language model; natural sparsity in its embedding gradient."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from zensim.errors import ConfigError
from zensim.trace.capture.workloads.lm import LanguageModel


CUTOFFS = (2000, 6000)  # adaptive-softmax clusters over the frequency-sorted vocabulary
SOFTMAXES = ("adaptive", "full")


class LSTMModel(nn.Module):
    """Embedding -> `layers` LSTM layers (default one) -> adaptive softmax (Grave et al. 2017), untied
    from the embedding; `softmax="full"`: a linear layer over the whole vocabulary and cross-entropy
    instead (the PyTorch word-language-model example's untied decoder).

    The adaptive softmax is what word-level LMs with large vocabularies use on a budget: frequent
    words in a full head, rare ones in smaller clusters; it needs the frequency-sorted vocabulary.
    """

    def __init__(self, vocab: int, embed: int, hidden: int, layers: int = 1, softmax: str = "adaptive") -> None:
        super().__init__()
        if vocab < 4:
            raise ConfigError(f"corpus: {vocab} distinct tokens, the adaptive softmax needs at least 4")
        if softmax not in SOFTMAXES:
            raise ConfigError(f"--softmax {softmax}: choose from {', '.join(SOFTMAXES)}")
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        cutoffs = sorted({min(c, vocab * (i + 1) // (len(CUTOFFS) + 1)) for i, c in enumerate(CUTOFFS)} - {0})
        self.decoder = nn.Linear(hidden, vocab) if softmax == "full" else \
            nn.AdaptiveLogSoftmaxWithLoss(hidden, vocab, cutoffs, div_value=4.0)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean next-token negative log-likelihood."""
        out, _ = self.lstm(self.embedding(tokens))
        out, targets = out.reshape(-1, out.shape[-1]), targets.reshape(-1)
        if isinstance(self.decoder, nn.Linear):
            return nn.functional.cross_entropy(self.decoder(out), targets)
        return self.decoder(out, targets).loss


class LSTMLM(LanguageModel):
    """Records only `embedding.weight`: the LSTM and softmax gradients are dense (all-reduced densely)."""

    name = "lstm-lm"
    lr = 2e-3

    def __init__(
        self, tokens: np.ndarray, vocab: int, batch_size: int = 20, seed: int = 0,
        embed: int = 32, hidden: int = 64, seq_len: int = 35, corpus: str = "", layers: int = 1,
        softmax: str = "adaptive",
    ) -> None:
        for name, value in (("embed", embed), ("hidden", hidden), ("layers", layers), ("batch", batch_size),
                            ("seq-len", seq_len)):
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"--{name} {value!r}: must be a positive integer")
        torch.manual_seed(seed)
        config = {"vocab": vocab, "embed": embed, "hidden": hidden, "corpus": corpus,
                  **({"layers": layers} if layers != 1 else {}),
                  **({"softmax": softmax} if softmax != "adaptive" else {})}
        super().__init__(LSTMModel(vocab, embed, hidden, layers, softmax), tokens, batch_size, seed, seq_len, config)

    def recorded(self) -> list[str]:
        """The embedding only."""
        return ["embedding.weight"]

    def loss(self, model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Mean next-token negative log-likelihood under the adaptive softmax."""
        return model(*batch)
