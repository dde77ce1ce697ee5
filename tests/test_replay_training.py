"""The scheme in the training loop: through dense-allreduce the model follows plain data-parallel SGD
(the virtual workers of the capture), through a sparsifying scheme another trajectory; the command
prints per-scheme figures and draws loss against simulated wall-clock."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from zensim.cli import main
from zensim.net.costs import Costs
from zensim.net.topology import ClusterSpec
from zensim.replay import Method
from zensim.replay.training import train
from zensim.trace.capture.run import step_batches, virtual_runner
from zensim.trace.capture.workloads.digits import Digits

N, STEPS = 4, 4


def test_dense_scheme_follows_data_parallel_sgd() -> None:
    numel = 3658
    reference = Digits(seed=2)
    runner = virtual_runner(reference, N, None, None)
    for step in range(STEPS):
        runner.step(step_batches(reference, step, N))
    models = {}

    def make() -> Digits:
        work = Digits(seed=2)
        models[len(models)] = work.model
        return work

    cluster = Costs(ClusterSpec.parse(N, 1, "10Gbps"))
    records = train(make, [Method("dense-allreduce", None, 0.01, N, numel), Method("topka", "topk", 0.01, N, numel)],
                    STEPS, cluster, eval_every=2)
    for p, q in zip(reference.model.parameters(), models[0].parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert any(not torch.allclose(p, q) for p, q in zip(reference.model.parameters(), models[1].parameters()))
    dense = [r for r in records if r.method == "dense-allreduce"]
    assert [r.iteration for r in dense] == list(range(STEPS))
    assert all(b.clock_s > a.clock_s for a, b in zip(dense, dense[1:]))  # the clock advances by each sync
    assert dense[1].test_accuracy is not None and dense[0].test_accuracy is None
    sparse = [r for r in records if r.method == "topka"]
    assert np.mean([r.actual_density for r in sparse]) < np.mean([r.actual_density for r in dense])


def test_converge_command(tmp_path: Path, capsys) -> None:
    plot, csv = tmp_path / "loss.png", tmp_path / "loss.csv"
    assert main(["converge", "--workers", "4", "--iterations", "3", "--scheme", "spardl,exdyna", "--nic", "10Gbps",
                 "--compute", "0.01", "--plot", str(plot), "--csv", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "spardl" in out and "exdyna" in out and "clock s" in out
    assert plot.read_bytes()[:4] == b"\x89PNG" and len(csv.read_text().splitlines()) == 1 + 2 * 3
    assert main(["converge", "--workers", "4", "--iterations", "0"]) == 2
    assert "--iterations 0: must be at least 1" in capsys.readouterr().err
