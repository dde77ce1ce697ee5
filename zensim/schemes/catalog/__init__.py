"""The scheme catalog: every named scheme, one module per family.

A new scheme is one module here (a list `SCHEMES` of `zensim.schemes.scheme.Scheme`) and one
entry in MODULES; tests/test_schemes_conformance.py runs every registered scheme through the
checks every scheme must pass.
"""

from zensim.schemes.catalog import (agsparse, dense_allreduce, dense_doubling, exdyna, gtopk, oktopk, omnireduce,
                                    sparcml, sparse_ps, spardl, topka, topkdsa, zen)

# The registry (order = listing order).
MODULES = (dense_allreduce, dense_doubling, agsparse, sparcml, sparse_ps, omnireduce, zen, topka, topkdsa, gtopk, spardl,
           exdyna, oktopk)
CATALOG = {s.name: s for module in MODULES for s in module.SCHEMES}
