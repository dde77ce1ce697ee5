"""Names the command line offers, kept free of torch so that `zensim --help` starts fast."""

SPARSIFIERS = ("natural", "topk", "dgc")
WORKLOADS = ("lstm-lm", "deepfm", "gpt-topk")
