"""Conformance suites: every member of every registry passes the checks its kind must pass.

Like scikit-learn's `check_estimator`, the checks live with the layers (zensim.schemes.conformance,
zensim.sparse.conformance, zensim.trace.capture.conformance; sharing models in
zensim.net.models.conformance, run by tests/test_net_models.py) and are parametrized here over the
registries themselves, so a new scheme, wire format, partitioner or capture workload is checked by
registering it, with no test to write.
"""

from __future__ import annotations

import pytest

from zensim.schemes import CATALOG, DISTINCT
from zensim.schemes.conformance import check_scheme
from zensim.sparse.conformance import check_format, check_partitioner
from zensim.sparse.formats import FORMATS, make_format
from zensim.sparse.registry import PARTITIONERS
from zensim.trace.capture.names import WORKLOADS


@pytest.mark.parametrize("name", list(CATALOG) + [p.name for p in DISTINCT])
def test_scheme(name):
    check_scheme(name)


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_format(name, dtype):
    check_format(make_format(name, dtype, 7))


@pytest.mark.parametrize("name", list(PARTITIONERS))
def test_partitioner(name):
    check_partitioner(PARTITIONERS[name])


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload(name):
    check_workload(name)


def check_workload(name):
    """The workload check (imported here: it needs torch, and a language model its corpus)."""
    from zensim.trace.capture.conformance import check_workload as check

    check(name)
