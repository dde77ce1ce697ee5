"""Every worker's gradient in one pass: `exdyna-loop --batched`.

The loop's n workers compute their gradients at the same parameters, each on its own micro-batch.
Sequentially that is n forward and backward passes of the model; here it is one pass of a batched
copy of it: each parameter stacked n times (an expanded view, worker w's slice holding the model's
values), worker w's batch run through slice w, and the sum of the n workers' mean losses
differentiated once, so slice w's gradient is worker w's gradient (no term of the sum reads another
worker's slice). Same model, batches and losses; the float sums run in another order than in the
model's own kernels (cuDNN's or oneDNN's LSTM, the adaptive softmax's per-cluster rows), so the
gradients may differ from the sequential ones in the last bits (tests/test_exdyna_loop.py checks the
loop's definitions on the batched gradients themselves, and their closeness to the sequential ones).

Written for `LSTMModel` (zensim.trace.capture.workloads.lstm: embedding, LSTM layers, adaptive or full
softmax): `torch.func.vmap` cannot batch it (the adaptive softmax selects rows by data-dependent
shapes; the fused LSTM kernels have no batching rule and would run one worker at a time). Memory:
the n workers' activations at once instead of one worker's (docs/replay.md gives measured peaks).
"""

from __future__ import annotations

from collections.abc import Sequence
import torch
from torch import nn

from zensim.errors import ConfigError


class BatchedLSTM:
    """n workers' gradients of an `LSTMModel` in one forward and backward pass (module docstring)."""

    def __init__(self, model: nn.Module, workers: int) -> None:
        from zensim.trace.capture.workloads.lstm import LSTMModel

        if not isinstance(model, LSTMModel):
            raise ConfigError(f"--batched: only the LSTM language model is batched, not {type(model).__name__}")
        lstm = model.lstm
        if lstm.bidirectional or lstm.proj_size or not lstm.bias or lstm.dropout or not lstm.batch_first:
            raise ConfigError("--batched: the LSTM must be one-directional, batch-first, with biases, without "
                              "projections or dropout")
        self.model, self.n, self.layers = model, workers, lstm.num_layers
        self.names = [name for name, p in model.named_parameters() if p.requires_grad]
        if len(self.names) != len(list(model.parameters())):
            raise ConfigError("--batched: every parameter of the model must be trainable")

    def gradients(self, batches: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
        """(the n workers' flat gradients as rows of an (n, numel) float32 tensor, in the order of the
        model's parameters; the n mean losses), worker w on `batches[w]` (inputs, targets)."""
        params = dict(self.model.named_parameters())
        stacked = {name: params[name].detach().expand(self.n, *params[name].shape).requires_grad_()
                   for name in self.names}
        tokens = torch.stack([b[0] for b in batches])
        targets = torch.stack([b[1] for b in batches]).reshape(self.n, -1)
        losses = self._losses(stacked, tokens, targets)
        grads = torch.autograd.grad(losses.sum(), [stacked[name] for name in self.names], materialize_grads=True)
        return torch.cat([g.reshape(self.n, -1) for g in grads], dim=1).float(), losses.detach()

    def _losses(self, p: dict[str, torch.Tensor], tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The n workers' mean next-token losses (n,), worker w through slice w of every parameter."""
        workers = torch.arange(self.n, device=tokens.device).view(-1, 1, 1)
        x = p["embedding.weight"][workers, tokens]  # (n, B, T, embed)
        for layer in range(self.layers):
            x = self._lstm_layer(x, *(p[f"lstm.{kind}_l{layer}"] for kind in ("weight_ih", "weight_hh", "bias_ih",
                                                                               "bias_hh")))
        out = x.reshape(self.n, -1, x.shape[-1])  # (n, B T, hidden)
        decoder = self.model.decoder
        if isinstance(decoder, nn.Linear):
            logits = torch.baddbmm(p["decoder.bias"].unsqueeze(1), out, p["decoder.weight"].transpose(1, 2))
            return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                               reduction="none").view(self.n, -1).mean(1)
        return -self._adaptive_logprob(decoder, p, out, targets).mean(1)

    @staticmethod
    def _lstm_layer(x: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor, b_ih: torch.Tensor,
                    b_hh: torch.Tensor) -> torch.Tensor:
        """One LSTM layer (gates i, f, g, o as nn.LSTM) over x (n, B, T, in) with per-worker weights."""
        n, batch, steps, width = x.shape
        hidden = w_hh.shape[-1]
        gates_in = torch.baddbmm((b_ih + b_hh).unsqueeze(1), x.reshape(n, batch * steps, width),
                                 w_ih.transpose(1, 2)).view(n, batch, steps, 4 * hidden)
        h = c = x.new_zeros(n, batch, hidden)
        outs = []
        for step_in in gates_in.unbind(2):  # one backward (a stack), not one full-size zero fill a step
            gates = torch.baddbmm(step_in, h, w_hh.transpose(1, 2))
            i, f, g, o = gates.chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, dim=2)

    def _adaptive_logprob(self, decoder: nn.AdaptiveLogSoftmaxWithLoss, p: dict[str, torch.Tensor],
                          out: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """log p(target) under the adaptive softmax, (n, rows), as nn.AdaptiveLogSoftmaxWithLoss computes
        it: the head's log-probability of the target (shortlist) or of its cluster, plus, for a target
        in cluster i, the cluster's log-probability of it. Each worker's rows of cluster i go through
        the cluster, padded with rows of other clusters to the largest worker's count (masked out)."""
        if decoder.head_bias:
            raise ConfigError("--batched: the adaptive softmax's head must have no bias")
        cutoffs = [0] + list(decoder.cutoffs)
        head = torch.log_softmax(torch.bmm(out, p["decoder.head.weight"].transpose(1, 2)), dim=-1)
        column = targets.clone()
        logprob = torch.zeros_like(targets, dtype=out.dtype)
        for i in range(1, len(cutoffs) - 1):
            low, high = cutoffs[i], cutoffs[i + 1]
            inside = (targets >= low) & (targets < high)
            column = torch.where(inside, decoder.shortlist_size + i - 1, column)
            counts = inside.sum(1)
            most = int(counts.max())
            if most == 0:
                continue
            rows = torch.argsort((~inside).to(torch.int8), dim=1, stable=True)[:, :most]  # its rows first, distinct
            valid = torch.arange(most, device=out.device) < counts.unsqueeze(1)
            sub = out.gather(1, rows.unsqueeze(-1).expand(-1, -1, out.shape[-1]))
            hidden = torch.bmm(sub, p[f"decoder.tail.{i - 1}.0.weight"].transpose(1, 2))
            cluster = torch.log_softmax(torch.bmm(hidden, p[f"decoder.tail.{i - 1}.1.weight"].transpose(1, 2)), dim=-1)
            local = cluster.gather(-1, (targets.gather(1, rows) - low).clamp(0, high - low - 1).unsqueeze(-1))
            logprob = logprob.scatter_add(1, rows, torch.where(valid, local.squeeze(-1), 0.0))
        return logprob + head.gather(-1, column.unsqueeze(-1)).squeeze(-1)
