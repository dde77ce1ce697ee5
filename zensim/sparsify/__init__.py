"""Gradient sparsifiers with state per worker across iterations, and error feedback.

    from zensim.sparsify import make_sparsifier, ErrorFeedback, Team
    sp = make_sparsifier("exdyna", density=0.01, rank=3, workers=16)
    acc = memory.accumulate("flat", grad); chosen = sp.propose("flat", acc); ...; sp.observe("flat", counts)

Names: `SPARSIFIERS` (topk, dgc, threshold, cltk, exdyna, exdyna-static, blocktopk); the protocol in
`zensim.sparsify.base`; numpy arrays and torch tensors alike (`zensim.sparsify.ops`).
"""

from zensim.sparsify.base import Sparsifier, target_count
from zensim.sparsify.memory import ErrorFeedback
from zensim.sparsify.registry import SPARSIFIERS, local_names, make_sparsifier, option_names
from zensim.sparsify.team import Round, Team

__all__ = ["Sparsifier", "target_count", "ErrorFeedback", "SPARSIFIERS", "local_names", "make_sparsifier",
           "option_names", "Round", "Team"]
