"""Built-in workloads for `zensim capture`, by name."""

from __future__ import annotations

from zensim.errors import ConfigError
from zensim.trace.capture.corpus import load_corpus
from zensim.trace.capture.names import WORKLOADS
from zensim.trace.capture.workloads.base import Workload
from zensim.trace.capture.workloads.deepfm import DeepFM
from zensim.trace.capture.workloads.digits import Digits
from zensim.trace.capture.workloads.gpt import GPTTopK
from zensim.trace.capture.workloads.lstm import LSTMLM


def make_workload(name: str, batch_size: int | None, seed: int, corpus: str | None = None) -> Workload:
    """Build a built-in workload; the language models load the corpus (one-line error if missing)."""
    if name not in WORKLOADS:
        raise ConfigError(f"--workload {name}: unknown (choose from {', '.join(WORKLOADS)})")
    sizes = {} if batch_size is None else {"batch_size": batch_size}
    if name in ("deepfm", "digits-cnn"):
        if corpus is not None:
            raise ConfigError(f"--corpus {corpus}: not used by {name} (it has its own data)")
        return (DeepFM if name == "deepfm" else Digits)(seed=seed, **sizes)
    text = load_corpus(corpus)
    cls = LSTMLM if name == "lstm-lm" else GPTTopK
    return cls(text.tokens, text.vocab_size, seed=seed, corpus=text.name, **sizes)


__all__ = ["WORKLOADS", "Workload", "make_workload", "LSTMLM", "DeepFM", "Digits", "GPTTopK"]
