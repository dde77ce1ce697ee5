"""TopkA (Renggli et al., SparCML; SparDL's baseline): every worker's top-k all-gathered by recursive
doubling, then summed locally: AGsparse's recursive-doubling program on top-k chunks. Bandwidth
2 (P - 1) k beta (SparDL's Table I), the closed form of AGsparse."""

from zensim.schemes.closed import agsparse
from zensim.schemes.scheme import Scheme
from zensim.schemes.space import Point

SCHEMES = [
    Scheme("topka", "TopkA: recursive-doubling all-gather of every worker's top-k (AGsparse on top-k chunks)",
           Point("hierarchy", "one-shot", "centralization", None), closed_form=agsparse),
]
