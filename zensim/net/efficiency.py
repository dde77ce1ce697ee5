"""The efficiency tables' rule, written once: the Python sharing models (zensim.net.models.fifo, maxmin)
and the compiled loops (zensim.net.fastfifo, fastmaxmin) call these same functions.

A table is eff(0), eff(1), ..., eff(K) as a float64 array (Network.nic_efficiency: a NIC's factor by
the flows on it; Network.host_efficiency: every NIC's factor by the flows in flight on the host), its
last entry for any count beyond K; empty where the network has no such table. Both scale NIC links
only.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def factor(table: np.ndarray, count: int) -> float:  # pragma: no cover (compiled)
    """The table's factor for `count` flows: table[min(count, K)]."""
    return table[min(count, len(table) - 1)]


@numba.njit(cache=True)
def capacities(capacity: np.ndarray, nic: np.ndarray, nic_table: np.ndarray, nflows: np.ndarray,
               host_table: np.ndarray, flows: int, out: np.ndarray) -> np.ndarray:  # pragma: no cover (compiled)
    """Link capacities under the tables (maxmin's rule), into `out`: a NIC link's (`nic`) capacity x
    eff(its flows, `nflows`) x h(`flows`, the flows active in the whole network), each factor where
    its table is not empty; the other links' as they are."""
    for k in range(len(capacity)):
        cap = capacity[k]
        if nic[k]:
            if len(nic_table):
                cap = cap * factor(nic_table, nflows[k])
            if len(host_table):
                cap = cap * factor(host_table, flows)
        out[k] = cap
    return out
