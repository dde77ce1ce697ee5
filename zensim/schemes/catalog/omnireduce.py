"""OmniReduce: non-zero blocks of 256 elements to contiguous aggregators and back."""

from zensim.schemes.scheme import Scheme
from zensim.schemes.space import Point

SCHEMES = [
    Scheme("omnireduce", "OmniReduce: non-zero blocks of 256 to contiguous aggregators and back",
           Point("p2p", None, "parallelism", "imbalanced"), {"push": "blocks", "pull": "blocks"}),
]
