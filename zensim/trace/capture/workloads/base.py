"""The workload interface, and the deterministic per-(step, worker) data every workload draws from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from zensim.errors import ConfigError
from zensim.trace.format import LayerSpec


class Workload:
    """A model, its data split among workers, its loss, and which parameters a trace records.

    `batch(step, worker, workers)` depends only on its arguments and the seed, so the DDP path (one
    process per worker) and the virtual-worker path see the same micro-batches.
    """

    name = ""
    sparsifier = "natural"  # default sparsity source
    density: float | None = None  # default density for topk / dgc
    lr = 1e-3

    def __init__(self, model: torch.nn.Module, batch_size: int, seed: int) -> None:
        self.model = model
        self.batch_size = batch_size
        self.seed = seed

    @classmethod
    def create(cls, batch_size: int | None, seed: int, corpus: str | None) -> "Workload":
        """The workload as `zensim capture --workload` builds it (None: the workload's defaults);
        workloads with their own data reject a corpus."""
        if corpus is not None:
            raise ConfigError(f"--corpus {corpus}: not used by {cls.name} (it brings its own data)")
        return cls(seed=seed, **({} if batch_size is None else {"batch_size": batch_size}))

    def recorded(self) -> list[str]:
        """Names of the parameters whose gradients the trace records (default: all)."""
        return [name for name, p in self.model.named_parameters() if p.requires_grad]

    def layers(self) -> Mapping[str, Sequence[LayerSpec]]:
        """LayerSpecs splitting recorded parameters (default: none, one layer per tensor)."""
        return {}

    def batch(self, step: int, worker: int, workers: int) -> Any:
        """Worker `worker`'s micro-batch at training step `step` out of `workers` workers."""
        raise NotImplementedError

    def loss(self, model: torch.nn.Module, batch: Any) -> torch.Tensor:
        """Mean loss of `model` on `batch` (the model is passed so DDP can wrap it)."""
        raise NotImplementedError

    def optimizer(self) -> torch.optim.Optimizer:
        """The optimizer (Adam at the workload's learning rate)."""
        return torch.optim.Adam(self.model.parameters(), lr=self.lr)

    def meta(self) -> dict[str, Any]:
        """Provenance of the data and the model, stored in the trace header."""
        return {"parameters": sum(p.numel() for p in self.model.parameters())}


def step_rng(seed: int, step: int, worker: int) -> np.random.Generator:
    """The random stream of one (step, worker): independent of every other pair."""
    return np.random.default_rng([seed, step, worker])


class EpochSampler:
    """Items 0..count-1, shuffled once per epoch, dealt out `batch_size` per worker.

    Step t of n workers takes items [t n B, (t + 1) n B) of the concatenated epoch permutations;
    worker w gets the w-th run of B items, as a DistributedSampler with contiguous ranks would.
    """

    def __init__(self, count: int, batch_size: int, seed: int) -> None:
        self.count = count
        self.batch_size = batch_size
        self.seed = seed

    def items(self, step: int, worker: int, workers: int) -> np.ndarray:
        """Item ids of one micro-batch."""
        start = (step * workers + worker) * self.batch_size
        positions = np.arange(start, start + self.batch_size)
        epochs, offsets = np.divmod(positions, self.count)
        out = np.empty(self.batch_size, np.int64)
        for epoch in np.unique(epochs):
            perm = np.random.default_rng([self.seed, int(epoch)]).permutation(self.count)
            out[epochs == epoch] = perm[offsets[epochs == epoch]]
        return out


class SequenceSampler(EpochSampler):
    """Windows of `seq_len + 1` tokens as the items of an `EpochSampler`."""

    def __init__(self, tokens: np.ndarray, seq_len: int, batch_size: int, seed: int) -> None:
        windows = len(tokens) // (seq_len + 1)
        if windows < 1:
            raise ValueError(f"corpus of {len(tokens)} tokens is shorter than one sequence of {seq_len + 1}")
        super().__init__(windows, batch_size, seed)
        self.windows = windows
        self.tokens = torch.as_tensor(tokens[: windows * (seq_len + 1)], dtype=torch.long).view(windows, -1)

    def batch(self, step: int, worker: int, workers: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets), each batch_size x seq_len token ids."""
        rows = self.tokens[torch.as_tensor(self.items(step, worker, workers))]
        return rows[:, :-1], rows[:, 1:]
