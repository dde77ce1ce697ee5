"""The sparse-synchronization design space: parts, stage programs composed from them, the catalog.

    from zensim.schemes import build_scheme, scheme_names, design_space
    from zensim.run import run_ranks
    prog = build_scheme("zen", n=16, numel=10_000_000)     # a catalog, distinct or raw name
    out = run_ranks(prog, chunks)                         # checks the dense sum and the replicas
    out.results[r], out.log, prog.caps                    # caps: needs_values, lossless, closed_form, ...

Semantics of every combination: docs/design-space.md; adding a scheme, format or partitioner:
docs/extending.md.
"""

from zensim.schemes.catalog import CATALOG
from zensim.schemes.choice import SparsityProfile, profile_chunks, zen_choice, zen_costs
from zensim.run.program import Capabilities, StageProgram
from zensim.schemes.program import ComposedProgram
from zensim.schemes.registry import (all_schemes, build_scheme, check_options, design_space, lookup,
                                     needs_profile, scheme_names, scheme_options)
from zensim.schemes.scheme import Scheme
from zensim.schemes.space import DISTINCT, RAW, Point, build_point

__all__ = [
    "CATALOG", "SparsityProfile", "profile_chunks", "zen_choice", "zen_costs", "Capabilities", "StageProgram",
    "ComposedProgram",
    "all_schemes", "build_scheme", "check_options", "design_space", "lookup", "needs_profile", "scheme_names", "scheme_options",
    "Scheme", "DISTINCT", "RAW", "Point", "build_point",
]
