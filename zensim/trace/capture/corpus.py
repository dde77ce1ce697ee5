"""A real English corpus for the language-model workloads, found at run time, never downloaded.

The text is the King James Bible of Debian's `bible-kjv-text` package (compressed; read through
the `bible` program of `bible-kjv`), or any plain-text file given with `--corpus` or the
ZENSIM_CORPUS environment variable. Tokens are lower-cased words and the punctuation marks
`. , ; : ? !`; the vocabulary is sorted by decreasing frequency (id 0 is the most frequent
token), as word-level language models order it, which is what makes embedding gradients skewed.
"""

from __future__ import annotations

import collections
import gzip
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zensim.errors import ConfigError

KJV_RANGE = "gen1:1-rev22:21"
INSTALL_HINT = "apt-get install bible-kjv bible-kjv-text"
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|[.,;:?!]")


@dataclass(frozen=True)
class Corpus:
    """A token stream with a frequency-sorted vocabulary."""

    name: str
    tokens: np.ndarray  # int64 token ids
    vocab: tuple[str, ...]  # vocab[i] is the i-th most frequent token

    @property
    def vocab_size(self) -> int:
        """Number of distinct tokens."""
        return len(self.vocab)


def tokenize(text: str) -> list[str]:
    """Lower-cased words and punctuation marks of `text`, in order."""
    return _TOKEN.findall(text.lower())


def build_corpus(name: str, words: list[str]) -> Corpus:
    """Number `words` by decreasing frequency (ties broken by first appearance)."""
    if not words:
        raise ConfigError(f"corpus {name}: no words")
    counts = collections.Counter(words)
    vocab = tuple(sorted(counts, key=lambda w: -counts[w]))  # stable: first appearance on ties
    ids = {w: i for i, w in enumerate(vocab)}
    return Corpus(name, np.fromiter((ids[w] for w in words), np.int64, len(words)), vocab)


def kjv_text(bible: str) -> str:
    """The KJV verses printed by the `bible` program, chapter headings removed."""
    out = subprocess.run([bible, KJV_RANGE], capture_output=True, text=True, check=False)
    if out.returncode != 0 or not out.stdout.strip():
        raise ConfigError(f"corpus: `{bible} {KJV_RANGE}` failed; install it with `{INSTALL_HINT}`")
    lines = out.stdout.splitlines()
    # a chapter heading ("Genesis 1", "1 Samuel 3") is an unindented line after a blank one;
    # verses start indented with their number, their continuation lines follow a non-blank line
    kept = [line for prev, line in zip([""] + lines, lines) if line.strip() and (prev.strip() or line[0].isspace())]
    return "\n".join(re.sub(r"^\s+\d+\s", " ", line) for line in kept)


def load_corpus(path: str | None = None) -> Corpus:
    """The corpus from `path` (plain text, or gzip-compressed if it ends in .gz), else $ZENSIM_CORPUS, else
    the installed KJV; one-line error if none."""
    path = path or os.environ.get("ZENSIM_CORPUS")
    if path:
        file = Path(path)
        if not file.is_file():
            raise ConfigError(f"--corpus {path}: no such file")
        if file.suffix == ".gz":  # e.g. the KJV written out for a machine without the `bible` program
            with gzip.open(file, "rt", encoding="utf-8", errors="replace") as f:
                return build_corpus(file.name, tokenize(f.read()))
        return build_corpus(file.name, tokenize(file.read_text(encoding="utf-8", errors="replace")))
    bible = shutil.which("bible")
    if bible is None:
        raise ConfigError(f"corpus: King James Bible not found (install with `{INSTALL_HINT}`, or pass --corpus FILE)")
    return build_corpus("kjv", tokenize(kjv_text(bible)))
