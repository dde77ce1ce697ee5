"""The capture registries, kept free of torch so that `zensim --help` starts fast.

WORKLOADS is the workload registry: name -> "module.Class" in zensim.trace.capture.workloads. A new
workload is one module there (a `Workload` subclass) and one entry here.
"""

from zensim.sparsify.registry import local_names

SPARSIFIERS = ("natural", *local_names())  # zensim.sparsify's sparsifiers that need no coordination
WORKLOADS = {
    "lstm-lm": "lstm.LSTMLM",
    "deepfm": "deepfm.DeepFM",
    "gpt-topk": "gpt.GPTTopK",
    "digits-cnn": "digits.Digits",
    "digits-cnn-wide": "digits.DigitsWide",
}
