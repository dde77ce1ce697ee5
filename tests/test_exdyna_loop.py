"""ExDyna inside the training loop (zensim.replay.selection): every recorded quantity against its
definition, recomputed independently from the gradients the loop computed; the static shadow on the
same gradients; the exchange's bytes against the scheme's own run; bad input."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from zensim.errors import ConfigError
from zensim.replay.selection import (Row, SelectionLoop, TEAMS, exchange_bytes, padding, read_rows, run,
                                     summarize)
from zensim.run.driver import run_ranks
from zensim.schemes.registry import build_scheme
from zensim.sparse.chunk import union_indices
from zensim.sparse.partition import even_boundaries
from zensim.sparsify.exdyna import Layout, scale_factor
from zensim.sparsify.team import UnionChunk

ROOT = Path(__file__).resolve().parents[1]


class Regression:
    """A real small workload: a two-layer net fitting a fixed random map, worker w's batch its own
    draw per (step, worker); plain SGD, so the applied gradient can be read off the parameters."""

    lr = 0.5

    def __init__(self, width: int = 24, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh(), torch.nn.Linear(width, 4))
        self.target = torch.randn(width, 4)
        self.width, self.seed = width, seed

    def batch(self, step: int, worker: int, workers: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(self.seed * 100_003 + step * 1009 + worker)
        x = torch.randn(8, self.width, generator=g) * (1 + worker)  # unequal workers, as in training
        return x, x @ self.target

    def loss(self, model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(model(x), y)

    def optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.model.parameters(), lr=self.lr)


def flat_params(loop: SelectionLoop) -> np.ndarray:
    return torch.cat([p.detach().reshape(-1) for p in loop.params]).numpy().copy()


LSTM_LR = 0.5


def small_lstm(softmax: str = "adaptive", seed: int = 0, vocab: int = 60):  # type: ignore[no-untyped-def]
    """The CLI's workload (LSTMLM: embedding, 2 LSTM layers, adaptive softmax with two tail clusters) at
    a test's size, stepping with plain SGD so the applied gradient can be read off the parameters."""
    from zensim.trace.capture.workloads.lstm import LSTMLM

    tokens = np.random.default_rng(seed).zipf(1.3, 4000) % vocab
    work = LSTMLM(tokens, vocab, batch_size=3, seed=seed, embed=8, hidden=16, seq_len=5, layers=2, softmax=softmax)
    work.optimizer = lambda: torch.optim.SGD(work.model.parameters(), lr=LSTM_LR)
    return work


def recorded_run(workers: int, density: float, iterations: int, work: object = None,
                 batched: bool = False) -> tuple[SelectionLoop, list[Row], list, list]:
    """A loop's rows, the gradients it computed and the parameters before each iteration."""
    loop = SelectionLoop(Regression() if work is None else work, workers, density, batched=batched)
    grads_seen, params_seen = [], []
    compute = loop.gradients

    def spy(t: int):  # type: ignore[no-untyped-def]
        params_seen.append(flat_params(loop))
        grads, loss = compute(t)
        grads_seen.append([g.numpy().copy() for g in grads])
        return grads, loss

    loop.gradients = spy  # type: ignore[method-assign]
    rows = run(loop, iterations)
    params_seen.append(flat_params(loop))
    return loop, rows, grads_seen, params_seen


@pytest.mark.parametrize("workers,density", [(4, 0.01), (3, 0.05), (5, 0.002)])
def test_recorded_quantities_match_their_definitions(workers: int, density: float) -> None:
    run_ = recorded_run(workers, density, 40)
    assert run_[0].numel == 24 * 24 + 24 + 24 * 4 + 4
    check_definitions(*run_, workers, density, 40, Regression.lr)


@pytest.mark.parametrize("softmax", ["adaptive", "full"])
def test_batched_loop_matches_the_definitions_on_its_own_gradients(softmax: str) -> None:
    """--batched: every recorded quantity, the residuals and the SGD step hold exactly on the gradients
    the batched pass computed (the loop's own)."""
    check_definitions(*recorded_run(4, 0.01, 30, small_lstm(softmax), batched=True), 4, 0.01, 30, LSTM_LR)


def check_definitions(loop: SelectionLoop, rows: list[Row], grads_seen: list, params_seen: list, workers: int,
                      density: float, iterations: int, lr: float) -> None:
    """Both teams' records, residuals and the model's (SGD) steps recomputed from the loop's gradients."""
    n, numel = workers, loop.numel
    k = max(1, int(density * numel))
    initial = Layout.initial(numel, n, 1024)
    assert len(rows) == iterations
    for name in TEAMS:
        residuals = [np.zeros(numel, np.float32) for _ in range(n)]
        previous = None
        for t, row in enumerate(rows):
            step = getattr(row, name)
            assert row.iteration == t and row.k == k
            # the threshold: 1 / (2 sqrt k), then scaled by Algorithm 5 from the previous k'
            expected = 1 / (2 * math.sqrt(k)) if previous is None else previous.threshold * scale_factor(previous.selected, k)
            assert step.threshold == pytest.approx(expected, rel=1e-12)
            # the boundaries partition [0, numel): n + 1 increasing offsets on block edges
            b = step.bounds
            assert len(b) == n + 1 and b[0] == 0 and b[-1] == numel and all(x < y for x, y in zip(b, b[1:]))
            assert all(x % initial.block_size == 0 for x in b[:-1])
            if name == "static":
                assert b == [initial.bounds(p)[0] for p in range(n)] + [numel]
            # every worker's k_i: |residual + g| >= threshold in partition (t + w) mod n, one element if none
            chosen = []
            for w in range(n):
                acc = residuals[w] + grads_seen[t][w] if t else grads_seen[t][w].copy()
                residuals[w] = acc
                start, end = b[(t + w) % n], b[(t + w) % n + 1]
                mine = np.flatnonzero(np.abs(acc[start:end]) >= np.float32(step.threshold)) + start
                if len(mine) == 0:
                    mine = np.array([start + t % (end - start)])
                chosen.append(mine)
            assert step.counts == [len(c) for c in chosen]
            assert step.selected == sum(step.counts) and row.flat()[f"{name} k'/k"] == step.selected / k
            assert step.f == n * max(step.counts) / sum(step.counts)
            union = np.unique(np.concatenate(chosen))
            assert len(union) == step.selected  # exclusive partitions: no position twice
            total = sum(residuals[w][union] for w in range(n))
            for w in range(n):
                residuals[w][union] = 0
            if name == "dynamic":  # the model stepped with the dynamic team's sum / n (SGD)
                applied = np.zeros(numel, np.float32)
                applied[union] = total / np.float32(n)
                stepped = torch.from_numpy(params_seen[t]).add(torch.from_numpy(applied), alpha=-lr)
                np.testing.assert_array_equal(params_seen[t + 1], stepped.numpy())
            previous = step
        # the team's residuals are the replica's, bit for bit: it saw exactly the loop's gradients
        for w in range(n):
            assert np.array_equal(loop.residual(name, w).numpy(), residuals[w])
    dynamic_moved = any(r.dynamic.bounds != rows[0].dynamic.bounds for r in rows)
    assert dynamic_moved  # unequal workers: the sweep moved blocks in 40 iterations


@pytest.mark.parametrize("softmax", ["adaptive", "full"])
def test_batched_gradients_are_the_sequential_ones(softmax: str) -> None:
    """One batched pass gives each worker's gradient and loss of the sequential pass up to float
    rounding, with targets that leave a tail cluster empty for some workers or for all of them."""
    from zensim.replay.selection_batch import BatchedLSTM

    work = small_lstm(softmax, seed=2)
    model, n = work.model, 4
    rng = np.random.default_rng(5)
    batches = [work.batch(0, w, n) for w in range(n)]
    batches[1] = (batches[1][0], torch.from_numpy(rng.integers(0, 20, (3, 5))))  # shortlist only
    batches[2] = (batches[2][0], torch.from_numpy(rng.integers(40, 60, (3, 5))))  # last cluster only
    for empty_cluster in (False, True):
        if empty_cluster:  # nobody's target in the first tail cluster [20, 40)
            batches = [(x, torch.where((y >= 20) & (y < 40), y - 20, y)) for x, y in batches]
        grads, losses = BatchedLSTM(model, n).gradients(batches)
        for w, batch in enumerate(batches):
            model.zero_grad(set_to_none=True)
            loss = work.loss(model, batch)
            loss.backward()
            expected = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                                  for p in model.parameters()])
            torch.testing.assert_close(grads[w], expected, rtol=1e-5, atol=1e-7)
            torch.testing.assert_close(losses[w], loss.detach(), rtol=1e-6, atol=0)


def test_batched_refuses_other_models() -> None:
    with pytest.raises(ConfigError, match="--batched: only the LSTM language model is batched, not Sequential"):
        SelectionLoop(Regression(), 2, 0.01, batched=True)


def test_static_shadow_sees_the_same_gradients() -> None:
    """Both teams conserve the same inputs: residual + everything sent = the sum of the worker's
    gradients, for each worker of each team (the static shadow's sum is of the loop's gradients)."""
    loop = SelectionLoop(Regression(seed=3), 4, 0.02)
    sent = {name: [np.zeros(loop.numel, np.float64) for _ in range(4)] for name in TEAMS}
    inputs = [np.zeros(loop.numel, np.float64) for _ in range(4)]
    for t in range(25):
        grads, _ = loop.gradients(t)
        for w in range(4):
            inputs[w] += grads[w].numpy()
        chunks = {name: loop.select(name, t, grads)[1] for name in TEAMS}
        for name in TEAMS:
            for w, chunk in enumerate(chunks[name]):
                sent[name][w][chunk.indices] += chunk.values
        loop.apply(chunks["dynamic"])
    for name in TEAMS:
        for w in range(4):
            np.testing.assert_allclose(loop.residual(name, w).numpy() + sent[name][w], inputs[w], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 16])
def test_exchange_bytes_are_the_schemes_busiest_sender(n: int) -> None:
    rng = np.random.default_rng(n)
    numel = 4096
    for _ in range(5):
        cuts = np.sort(rng.choice(np.arange(1, numel), n - 1, replace=False)) if n > 1 else np.array([], int)
        parts = np.split(np.arange(numel), cuts)
        own = [np.sort(rng.choice(p, rng.integers(1, min(len(p), 300) + 1), replace=False)) for p in parts]
        union = union_indices([UnionChunk(o, np.ones(len(o), np.float32), o) for o in own])
        chunks = [UnionChunk(union, rng.standard_normal(len(union)).astype(np.float32), o) for o in own]
        log = run_ranks(build_scheme("exdyna", n, numel), chunks).log
        per_rank = np.bincount(log.src, weights=log.nbytes, minlength=n)
        assert exchange_bytes([len(o) for o in own]) == int(per_rank.max())


def test_padding_and_bytes_closed_forms() -> None:
    assert padding([3, 1, 0, 0]) == 3.0 and padding([0, 0]) == 1.0 and padding([5]) == 1.0
    # n = 4, counts 3 1 2 2: Bruck counts 1 + 2 ids, lists 3 x 3 ids, |U| = 8 in segments 2 2 2 2: 2 x 8 - 4
    assert exchange_bytes([3, 1, 2, 2]) == 4 * (3 + 9 + 12)
    assert list(even_boundaries(8, 4)) == [0, 2, 4, 6, 8]


def test_rows_round_trip_and_summary(tmp_path: Path) -> None:
    loop, rows, _, _ = recorded_run(4, 0.01, 30)
    path = tmp_path / "rows.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0].flat()))
        writer.writeheader()
        writer.writerows(r.flat() for r in rows)
    with open(path, newline="") as f:
        back = read_rows(list(csv.DictReader(f)))
    assert [r["dynamic k_i"] for r in back] == [r.dynamic.counts for r in rows]
    assert [r["static bounds"] for r in back] == [r.static.bounds for r in rows]
    assert [r["dynamic threshold"] for r in back] == [r.dynamic.threshold for r in rows]
    summary = summarize(back)
    inside = [0.8 <= r.dynamic.selected / r.k <= 1.25 for r in rows]
    reached = next((i for i in range(len(rows) - 9) if all(inside[i:i + 10])), None)
    assert summary["reached_from"] == reached
    later = rows[reached:] if reached is not None else rows
    assert summary["dynamic_f_mean"] == pytest.approx(np.mean([r.dynamic.f for r in later]))
    assert summary["static_f_mean"] == pytest.approx(np.mean([r.static.f for r in later]))


def test_deadline_stops_after_the_first_iteration() -> None:
    loop = SelectionLoop(Regression(), 2, 0.05)
    assert len(run(loop, 5, deadline=-1.0, clock=lambda: 0.0)) == 1
    assert len(run(SelectionLoop(Regression(), 2, 0.05), 4)) == 4


@pytest.mark.parametrize("kwargs,message", [
    ({"workers": 0}, "--ranks 0"), ({"density": 0.0}, "--density 0.0"), ({"density": 1.5}, "--density 1.5"),
    ({"price_every": -1}, "--price-every -1"), ({"workers": 40}, "fewer than the 40 workers"),
])
def test_bad_loop_input(kwargs: dict, message: str) -> None:
    args = {"workers": 2, "density": 0.01, **kwargs}
    with pytest.raises(ConfigError, match=message):
        SelectionLoop(Regression(width=4), args.pop("workers"), args.pop("density"), **args)


CORPUS = " ".join(f"the {w} and {v} said unto them ." for w in ("king", "lord", "people", "land", "house")
                  for v in ("god", "israel", "son", "day", "man", "city")) * 40


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "exdyna_loop.py"), *args], cwd=cwd,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_command_writes_csv_and_json(tmp_path: Path) -> None:
    (tmp_path / "corpus.txt").write_text(CORPUS)
    out = cli("--corpus", "corpus.txt", "--workers", "4", "--iterations", "3", "--embed", "16", "--hidden", "8",
              "--batch", "2", "--seq-len", "6", "--csv", "run.csv", "--json", "run.json", "--parquet", "run.parquet",
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    pd = pytest.importorskip("pandas")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "run.parquet"), pd.read_csv(tmp_path / "run.csv"))
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["run"]["workers"] == 4 and doc["stopped_by"] == "iterations" and doc["csv"] == "run.csv"
    assert doc["provenance"]["command"].startswith("python ") and doc["workload"]["layers"] == 2
    with open(tmp_path / "run.csv", newline="") as f:
        rows = read_rows(list(csv.DictReader(f)))
    assert [r["iteration"] for r in rows] == [0, 1, 2] and all(len(r["dynamic k_i"]) == 4 for r in rows)
    assert all(r["dynamic sim s"] > 0 for r in rows)


@pytest.mark.parametrize("args,message", [
    (["--seconds", "0"], "--seconds 0"), (["--ranks", "0"], "--ranks 0: must be at least 1"),
    (["--threads", "0"], "--threads 0: must be at least 1"), (["--density", "2"], "--density 2"),
    (["--device", "tpu"], "--device tpu"), (["--embed", "0"], "--embed 0"),
    (["--csv", "nowhere/x.csv"], "--csv: directory of nowhere/x.csv does not exist"),
    (["--corpus", "missing.txt"], "--corpus missing.txt: no such file"), (["--model", "nope"], "--model nope"),
    (["--softmax", "hier"], "--softmax hier"),
])
def test_command_bad_input_one_line_nothing_written(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "corpus.txt").write_text(CORPUS)
    base = ["--corpus", "corpus.txt", "--iterations", "2", "--embed", "8", "--hidden", "8", "--csv", "run.csv"]
    out = cli(*base, *args, cwd=tmp_path)
    assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run.csv").exists()


def test_full_softmax_model_is_embedding_lstm_and_linear_decoder() -> None:
    from zensim.trace.capture.workloads.lstm import LSTMModel

    vocab, embed, hidden = 50, 12, 10
    model = LSTMModel(vocab, embed, hidden, layers=2, softmax="full")
    lstm = 4 * (embed * hidden + hidden * hidden + 2 * hidden) + 4 * (2 * hidden * hidden + 2 * hidden)
    assert sum(p.numel() for p in model.parameters()) == vocab * embed + lstm + hidden * vocab + vocab
    tokens = torch.randint(0, vocab, (3, 7))
    targets = torch.randint(0, vocab, (3, 7))
    out, _ = model.lstm(model.embedding(tokens))
    expected = torch.nn.functional.cross_entropy(model.decoder(out.reshape(-1, hidden)), targets.reshape(-1))
    assert torch.equal(model(tokens, targets), expected)
