"""TopkDSA (Renggli et al., SparCML's dynamic sparse all-reduce; SparDL's baseline): every worker's
top-k, reduce-scattered by direct sends of each contiguous part to its owner (Sparse PS's push: P - 1
messages a worker), then the reduced parts all-gathered by recursive doubling in SparCML's
sparse-to-dense switching representation (the `switch` format: COO while smaller than dense). The
parts are not re-selected on the way, so the gathered parts grow with the union of the workers'
selections (the SGA dilemma it leaves open), up to dense.

Closed form (measured union density d^P, uniform parts): (P - 1) / P (2 d + min(2 d^P, 1)) M / b,
which spans SparDL's Table I range [4 (P - 1) / P k, (P - 1) / P (2 k + n)] beta between fully
overlapping and dense aggregates (COO = 2 units per element)."""

from zensim.schemes.closed import SparsityStats
from zensim.schemes.scheme import Scheme
from zensim.schemes.space import Point


def topkdsa(st: SparsityStats, b: float) -> float:
    """(P - 1) / P (2 d + min(2 d^P, 1)) M / b (see the module docstring)."""
    dn = st.union_density.get(st.n, st.d)
    return (st.n - 1) / st.n * (2 * st.d + min(2 * dn, 1.0)) * st.dense_bytes / b


SCHEMES = [
    Scheme("topkdsa", "TopkDSA: top-k reduce-scattered by direct sends, all-gathered by recursive doubling with "
           "SparCML's sparse-to-dense switch", Point("p2p", None, "parallelism", "imbalanced"),
           {"pull": "switch", "pull_pattern": "doubling"}, closed_form=topkdsa),
]
