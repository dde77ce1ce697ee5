"""The sparse-synchronization design space as rank-local stage programs, and the in-memory driver.

    from zensim.schemes import build_scheme, run_scheme, design_space
    prog = build_scheme("zen", n=16, numel=10_000_000)        # or a distinct/raw name, zen-auto
    res = run_scheme(prog, chunks)                             # checks the dense sum
    res.results[r], res.log.messages, res.log.work

Names: `scheme_names()`; semantics of every combination in docs/design-space.md.
"""

from zensim.schemes.choice import SparsityProfile, profile_chunks, zen_choice, zen_costs
from zensim.schemes.driver import AggregationMismatch, RunResult, run_scheme
from zensim.schemes.log import Message, MessageLog, Work
from zensim.schemes.presets import PRESETS, build_scheme, design_space, scheme_names
from zensim.schemes.space import DISTINCT, RAW, Point, build_point

__all__ = [
    "SparsityProfile", "profile_chunks", "zen_choice", "zen_costs", "AggregationMismatch", "RunResult",
    "run_scheme", "Message", "MessageLog", "Work", "PRESETS", "build_scheme", "design_space",
    "scheme_names", "DISTINCT", "RAW", "Point", "build_point",
]
