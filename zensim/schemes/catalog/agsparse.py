"""AGsparse: an all-gather of every worker's COO tensor, then a local sum (torch's sparse all_reduce
on gloo does this), over a ring, recursive doubling, or point-to-point."""

from zensim.schemes.scheme import Scheme
from zensim.schemes.space import Point

SCHEMES = [
    Scheme("agsparse-ring", "AGsparse, ring all-gather of COO", Point("ring", "one-shot", "centralization", None)),
    Scheme("agsparse-hier", "AGsparse, recursive-doubling all-gather of COO",
           Point("hierarchy", "one-shot", "centralization", None)),
    Scheme("agsparse-p2p", "AGsparse, every rank sends its COO to all", Point("p2p", None, "centralization", None)),
]
