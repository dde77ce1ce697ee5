"""Dense ring all-reduce: reduce-scatter then all-gather of dense contiguous partitions (the baseline)."""

from zensim.schemes.scheme import Scheme
from zensim.schemes.space import Point

SCHEMES = [
    Scheme("dense-allreduce", "ring all-reduce: reduce-scatter + all-gather of dense contiguous partitions",
           Point("ring", "incremental", "parallelism", "balanced"),
           {"push": "dense", "pull": "dense", "partitioner": "contiguous"}),
]
