"""SparCML's SSAR: sparse all-reduce by recursive doubling, aggregating at every stage (COO)."""

from zensim.schemes.scheme import Scheme
from zensim.schemes.space import Point

SCHEMES = [
    Scheme("sparcml", "SparCML SSAR recursive doubling (COO)", Point("hierarchy", "incremental", "centralization", None)),
]
