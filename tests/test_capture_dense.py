"""Dense-gradient capture: every worker's whole gradient before selection, for the digits CNN
(a real model on scikit-learn's digits) through the command line; training is unchanged by it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from zensim.cli import main
from zensim.trace import Trace
from zensim.trace.capture.run import step_batches, virtual_runner
from zensim.trace.capture.workloads.digits import Digits


def test_digits_data_and_model() -> None:
    work = Digits(seed=1)
    assert len(work.labels) == 1500 and len(work.test_labels) == 297
    images, labels = work.batch(3, 1, 4)
    assert images.shape == (16, 1, 8, 8) and labels.shape == (16,) and 0 <= float(images.min()) <= float(images.max()) <= 1
    assert sum(p.numel() for p in work.model.parameters()) == 3658
    assert work.meta()["synthetic_data"] is False
    before = work.evaluate(work.model)["test_loss"]
    runner = virtual_runner(work, 4, None, None)
    for step in range(30):
        runner.step(step_batches(work, step, 4))
    assert work.evaluate(work.model)["test_loss"] < before  # it learns


def test_dense_capture_records_the_gradient_before_selection(tmp_path: Path, capsys) -> None:
    out = tmp_path / "d.zt"
    assert main(["capture", "--workload", "digits-cnn", "--workers", "2", "--iterations", "2", "--dense",
                 "--sparsifier", "topk", "--density", "0.05", "--value-dtype", "float16", "-o", str(out)]) == 0
    trace = Trace.open(out)
    assert trace.is_dense and trace.value_dtype == "float16" and trace.numel == 3658
    assert trace.meta["provenance"]["gradients"] == "dense" and trace.meta["provenance"]["sparsifier"] == "topk"
    work = Digits()  # the same initial model: iteration 0's gradients are plain backward passes
    for w in range(2):
        work.model.zero_grad()
        work.loss(work.model, work.batch(0, w, 2)).backward()
        expected = torch.cat([p.grad.flatten() for p in work.model.parameters()]).numpy()
        np.testing.assert_allclose(trace.flat_dense(0, w), expected.astype(np.float16), rtol=0, atol=1e-7)
    # recording dense changes nothing in training: the sent selections are those of a normal capture
    sparse, dense = Digits(), Digits()
    a = virtual_runner(sparse, 2, "topk", 0.05)
    b = virtual_runner(dense, 2, "topk", 0.05, dense=True)
    for step in range(3):
        a.step(step_batches(sparse, step, 2))
        b.step(step_batches(dense, step, 2))
    for p, q in zip(sparse.model.parameters(), dense.model.parameters()):
        assert torch.equal(p, q)
