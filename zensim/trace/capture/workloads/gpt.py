"""`gpt-topk`: a small GPT-style transformer language model, every gradient sparsified (top-k / DGC)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from zensim.trace.capture.workloads.lm import LanguageModel


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention and a 4x MLP, both residual."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """One block on batch x seq x dim."""
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPTModel(nn.Module):
    """Token and position embeddings, `layers` blocks, final norm, output head tied to the embedding."""

    def __init__(self, vocab: int, dim: int, heads: int, layers: int, context: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-token logits, batch x seq x vocab."""
        seq = tokens.shape[1]
        mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool, device=tokens.device), diagonal=1)
        x = self.tok(tokens) + self.pos(torch.arange(seq, device=tokens.device))
        for block in self.blocks:
            x = block(x, mask)
        return self.ln(x) @ self.tok.weight.T


class GPTTopK(LanguageModel):
    """Records every parameter, after top-k / DGC selection."""

    name = "gpt-topk"
    sparsifier = "topk"
    density = 0.01
    lr = 1e-3

    def __init__(
        self, tokens: np.ndarray, vocab: int, batch_size: int = 8, seed: int = 0,
        dim: int = 64, heads: int = 4, layers: int = 2, seq_len: int = 32, corpus: str = "",
    ) -> None:
        torch.manual_seed(seed)
        config = {"vocab": vocab, "dim": dim, "heads": heads, "layers": layers, "corpus": corpus}
        super().__init__(GPTModel(vocab, dim, heads, layers, seq_len), tokens, batch_size, seed, seq_len, config)
