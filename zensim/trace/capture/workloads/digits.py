"""`digits-cnn`: a small CNN on scikit-learn's hand-written digits, a real dense model on real data.

The data are the 1,797 8x8 grey-level images of digits 0-9 that scikit-learn ships inside its
package (`sklearn.datasets.load_digits`, a copy of the UCI ML hand-written digits test set): no
download. A fixed split keeps 297 images (chosen by the seed) for evaluation; the other 1,500 are
dealt to the workers epoch by epoch. Every gradient is dense, so the workload is the natural
source of dense-gradient traces (`zensim capture --dense`): conv 1->8 and 8->16 (3x3, ReLU,
2x2 max-pool each), then 64 -> 32 -> 10 fully connected, 3,658 parameters at the default widths
(`digits-cnn-wide`: 64 and 128 channels, 512 -> 512 -> 10, 342,282 parameters).
It trains with SGD and momentum (lr 0.05, momentum 0.9), as the sparsification papers' CNNs do.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from zensim.extras import require
from zensim.trace.capture.workloads.base import EpochSampler, Workload

HELD_OUT = 297


class DigitsCNN(nn.Module):
    """Two conv/ReLU/max-pool stages on 1x8x8 images, then a hidden layer and 10 logits."""

    def __init__(self, channels: int, hidden: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Linear(8 * channels, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Logits, batch x 10, for batch x 1 x 8 x 8 images."""
        return self.classifier(self.features(images).flatten(1))


def load_images() -> tuple[np.ndarray, np.ndarray]:
    """(images n x 1 x 8 x 8 in [0, 1] float32, labels int64) from scikit-learn's copy."""
    require("sklearn", "digits", "the digits-cnn workload")
    from sklearn.datasets import load_digits

    data = load_digits()
    images = (data.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    return images, data.target.astype(np.int64)


class Digits(Workload):
    """The digits CNN; records every parameter."""

    name = "digits-cnn"
    lr = 0.05
    momentum = 0.9

    def __init__(self, batch_size: int = 16, seed: int = 0, channels: int = 8, hidden: int = 32) -> None:
        torch.manual_seed(seed)
        super().__init__(DigitsCNN(channels, hidden), batch_size, seed)
        images, labels = load_images()
        order = np.random.default_rng([seed, 7]).permutation(len(labels))
        train, test = order[HELD_OUT:], order[:HELD_OUT]
        self.images, self.labels = torch.from_numpy(images[train]), torch.from_numpy(labels[train])
        self.test_images, self.test_labels = torch.from_numpy(images[test]), torch.from_numpy(labels[test])
        self.sampler = EpochSampler(len(train), batch_size, seed)
        self.config = {"channels": channels, "hidden": hidden}

    def batch(self, step: int, worker: int, workers: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(images B x 1 x 8 x 8, labels B) of the worker's share of the step."""
        rows = torch.as_tensor(self.sampler.items(step, worker, workers))
        return self.images[rows], self.labels[rows]

    def loss(self, model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Mean cross-entropy."""
        images, labels = batch
        return nn.functional.cross_entropy(model(images), labels)

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Loss and accuracy on the held-out images."""
        with torch.no_grad():
            logits = model(self.test_images)
            return {"test_loss": float(nn.functional.cross_entropy(logits, self.test_labels)),
                    "test_accuracy": float((logits.argmax(1) == self.test_labels).float().mean())}

    def optimizer(self) -> torch.optim.Optimizer:
        """SGD with momentum."""
        return torch.optim.SGD(self.model.parameters(), lr=self.lr, momentum=self.momentum)

    def meta(self) -> dict[str, Any]:
        """Model widths and data source (real images shipped by scikit-learn)."""
        return {**super().meta(), **self.config, "synthetic_data": False,
                "data": f"scikit-learn load_digits: {len(self.labels)} train / {len(self.test_labels)} held-out 8x8 images"}


class DigitsWide(Digits):
    """The same CNN at 64 channels and a 512-wide hidden layer: 342,282 parameters (a dense trace
    large enough for ExDyna's 1,024 blocks of 320 elements and k / n = 214 at 1% on 16 workers,
    still captured in about a minute)."""

    name = "digits-cnn-wide"

    def __init__(self, batch_size: int = 16, seed: int = 0) -> None:
        super().__init__(batch_size, seed, channels=64, hidden=512)
