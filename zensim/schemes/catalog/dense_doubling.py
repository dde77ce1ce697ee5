"""Dense recursive-doubling all-reduce: the low-latency dense collective (MPICH's choice for short
messages; NCCL's tree plays the same part), beside the ring for small buckets.

Every rank sends its whole dense tensor at every stage: with p the largest power of two <= n, ranks
p..n-1 first hand their tensor to rank r - p (the fold), the p ranks exchange and sum with partner
r ^ 2**k for k < log2 p, and rank r - p sends the sum back to rank r (the unfold): log2 p stages
(+ 2 when n is not a power of two) against the ring's 2(n-1), at log2 p full tensors per rank against
the ring's 2(n-1)/n. Partners sum the same two groups in rank order, so replicas are bit-identical.
"""

from zensim.schemes.closed import dense_doubling
from zensim.schemes.scheme import Scheme
from zensim.schemes.space import Point

SCHEMES = [
    Scheme("dense-doubling", "recursive-doubling all-reduce of the dense tensor (folded for any n): "
           "log2 n stages, for small buckets", Point("hierarchy", "incremental", "centralization", None),
           {"push": "dense"}, closed_form=dense_doubling),
]
