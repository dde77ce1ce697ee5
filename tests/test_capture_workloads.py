"""Virtual workers are synchronous data parallelism; workloads, corpus and `zensim capture` on tiny data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from zensim.cli import main
from zensim.errors import ConfigError
from zensim.trace.capture import VirtualWorkers, capture, make_sparsifier
from zensim.trace.capture.corpus import build_corpus, load_corpus, tokenize
from zensim.trace.capture.workloads.deepfm import DeepFM
from zensim.trace.capture.workloads.base import SequenceSampler
from zensim.trace.format import Trace


def tiny_deepfm(batch: int = 8) -> DeepFM:
    return DeepFM(batch_size=batch, seed=2, field_sizes=(50, 20, 5), embed=3, hidden=8)


def test_virtual_update_is_the_mean_of_worker_gradients() -> None:
    work, n = tiny_deepfm(), 3
    batches = [work.batch(0, w, n) for w in range(n)]
    before = {k: v.clone() for k, v in work.model.state_dict().items()}
    expected = {k: torch.zeros_like(v) for k, v in before.items()}
    for batch in batches:  # independent per-worker gradients at the shared parameters
        work.model.zero_grad()
        work.loss(work.model, batch).backward()
        for k, p in work.model.named_parameters():
            expected[k] += p.grad / n
    runner = VirtualWorkers(work.model, torch.optim.SGD(work.model.parameters(), lr=1.0), work.loss,
                            [make_sparsifier("natural", None, w) for w in range(n)], work.recorded())
    chunks = runner.step(batches)
    for k, p in work.model.named_parameters():
        torch.testing.assert_close(before[k] - p.detach(), expected[k])
    for w, batch in enumerate(batches):
        ids = np.unique(batch[0].numpy())
        np.testing.assert_array_equal(chunks[w]["linear.weight"].indices, ids)
        np.testing.assert_array_equal(chunks[w]["embedding.weight"].indices,
                                      (ids[:, None] * 3 + np.arange(3)).ravel())


def test_deepfm_ids_stay_in_their_field_and_layers_cover_the_tables() -> None:
    work = tiny_deepfm(batch=200)
    ids, labels = work.batch(5, 1, 4)
    lo, hi = work.offsets[:-1], work.offsets[1:]
    assert ((ids.numpy() >= lo) & (ids.numpy() < hi)).all()
    assert set(labels.unique().tolist()) <= {0.0, 1.0}
    counts = np.bincount(ids[:, 0].numpy(), minlength=50)
    assert counts[0] > counts[25:].mean()  # Zipf: id 0 is the most frequent
    for name, layers in work.layers().items():
        numel = dict(work.model.named_parameters())[name].numel()
        assert layers[0].offset == 0 and sum(l.numel for l in layers) == numel
        assert all(a.offset + a.numel == b.offset for a, b in zip(layers, layers[1:]))
    assert work.meta()["synthetic_data"] is True


def test_sequence_sampler_deals_disjoint_windows_within_an_epoch() -> None:
    sampler = SequenceSampler(np.arange(1000), seq_len=9, batch_size=4, seed=0)  # 100 windows
    n = 5
    seen = np.concatenate([sampler.items(t, w, n) for t in range(5) for w in range(n)])
    assert len(seen) == 100 and len(np.unique(seen)) == 100
    inputs, targets = sampler.batch(0, 0, n)
    assert inputs.shape == (4, 9) and torch.equal(inputs[:, 1:], targets[:, :-1])


def test_vocabulary_is_sorted_by_frequency() -> None:
    corpus = build_corpus("t", tokenize("The cat; the dog. THE end, dog!"))
    assert corpus.vocab[:2] == ("the", "dog")
    assert corpus.tokens.tolist()[:3] == [0, corpus.vocab.index("cat"), corpus.vocab.index(";")]


def test_missing_corpus_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZENSIM_CORPUS", raising=False)
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(ConfigError, match="King James Bible not found") as err:
        load_corpus()
    assert "\n" not in str(err.value)


def test_capture_command_on_a_tiny_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghij"))
    words = ["".join(letters[[int(c) for c in str(i)]]) for i in rng.zipf(1.5, size=3000) % 300]  # 7 -> "h", 12 -> "bc"
    (tmp_path / "c.txt").write_text(" ".join(words))
    out = tmp_path / "t.zt"
    args = ["capture", "--workload", "lstm-lm", "--workers", "3", "--iterations", "2", "--warmup", "1",
            "--batch-size", "2", "--corpus", str(tmp_path / "c.txt"), "--values", "-o", str(out)]
    assert main(args) == 0
    trace = Trace.open(out)
    assert (trace.workers, trace.iterations, trace.value_dtype) == (3, 2, "float32")
    assert [t.name for t in trace.tensors] == ["embedding.weight"]
    assert trace.meta["provenance"]["model"]["synthetic_data"] is False
    assert trace.meta["provenance"]["warmup_steps"] == 1
    assert all(trace.nnz(i, w) > 0 for i in range(2) for w in range(3))
    assert main(["capture", "--workload", "deepfm", "--workers", "2", "--iterations", "1", "--density", "0.1",
                 "-o", str(tmp_path / "x.zt")]) == 2
    assert "--density 0.1: only for --sparsifier topk, dgc, threshold, blocktopk, oktopk" in capsys.readouterr().err
    assert not (tmp_path / "x.zt").exists()
    assert main(["capture", "--workload", "deepfm", "--workers", "2", "--iterations", "1", "--seed", "-1",
                 "-o", str(tmp_path / "x.zt")]) == 2
    assert capsys.readouterr().err == "zensim: error: --seed -1: must be at least 0\n"
    assert not (tmp_path / "x.zt").exists()
    assert main(["capture", "--workload", "deepfm", "--workers", "2", "--iterations", "1", "--corpus", "c.txt",
                 "-o", str(tmp_path / "x.zt")]) == 2
    assert "--corpus c.txt: not used by deepfm" in capsys.readouterr().err
    assert not (tmp_path / "x.zt").exists()


def test_capture_with_topk_records_exactly_k_per_tensor(tmp_path: Path) -> None:
    work = tiny_deepfm()
    capture(work, str(tmp_path / "k.zt"), workers=2, iterations=2, sparsifier="topk", density=0.05, progress=False)
    trace = Trace.open(tmp_path / "k.zt")
    for t, spec in enumerate(trace.tensors):
        k = max(1, int(np.ceil(0.05 * spec.numel)))
        assert all(trace.nnz(i, w, t) == k for i in range(2) for w in range(2))


@pytest.mark.parametrize("bad,message", [
    (["--iterations", "0"], "--iterations 0: must be at least 1"),
    (["--warmup", "-1"], "--warmup -1: must be at least 0"),
    (["--sparsifier", "topk", "--density", "2"], "--density 2.0: must be in (0, 1]"),
    (["--sparsifier", "dgc"], "--sparsifier dgc: needs --density"),
    (["--density", "0.1"], "--density 0.1: only for --sparsifier topk, dgc, threshold, blocktopk, oktopk"),
])
def test_hook_options_checked_before_the_script_runs(tmp_path: Path, capsys, bad: list[str], message: str) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "train.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    args = ["capture", "--hook", str(script), "--iterations", "1", *bad, "-o", str(tmp_path / "s{rank}.zt")]
    assert main(args) == 2
    assert capsys.readouterr().err == f"zensim: error: {message}\n"
    assert not marker.exists()
