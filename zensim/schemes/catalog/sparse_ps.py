"""Sparse parameter server: COO push to contiguous servers, then the pull (point-to-point, or by
binomial-tree broadcasts)."""

from zensim.schemes.scheme import Scheme
from zensim.schemes.space import Point

PS = Point("p2p", None, "parallelism", "imbalanced")
SCHEMES = [
    Scheme("sparse-ps", "Sparse PS: COO push to contiguous servers, point-to-point COO pull", PS),
    Scheme("sparse-ps-bcast", "Sparse PS with the broadcast: pull by binomial trees, ceil(log2 n) rounds", PS,
           {"pull_pattern": "binomial"}),
]
