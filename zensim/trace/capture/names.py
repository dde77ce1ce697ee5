"""Names the command line offers, kept free of torch so that `zensim --help` starts fast."""

from zensim.sparsify.registry import local_names

SPARSIFIERS = ("natural", *local_names())  # zensim.sparsify's sparsifiers that need no coordination
WORKLOADS = ("lstm-lm", "deepfm", "gpt-topk", "digits-cnn")
