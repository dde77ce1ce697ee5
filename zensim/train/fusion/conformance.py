"""Checks every fusion strategy must pass: `check_strategy(name)` (tests/test_train_strategies.py runs
it over the registry; run it on a new strategy while writing it)."""

from __future__ import annotations

import numpy as np

from zensim.net.topology import ClusterSpec
from zensim.train.fusion.registry import lookup
from zensim.train.fusion.strategies import Compression, Workload, plan


def check_strategy(name: str, tensors: tuple[int, ...] = (1, 2, 17)) -> None:
    """For workloads of each number of tensors on one machine and on 4 x 2 GPUs: the groups are
    increasing ends covering every tensor, the chain holds the workload's tensors in order, and the
    iteration is at least its forward and backward, finite, with the samples per second it implies."""
    spec = lookup(name)
    assert spec.name == name, f"{name}: registered under another name ({spec.name})"
    rng = np.random.default_rng(0)
    for n in tensors:
        w = Workload("check", rng.lognormal(14, 2, n), rng.exponential(2e-3, n), 0.01, 8)
        for c in (ClusterSpec(1, 1, 25e9 / 8), ClusterSpec(4, 2, 25e9 / 8, nic_latency=5e-6)):
            p = plan(name, w, c, Compression())
            ends = np.asarray(p.ends)
            assert len(ends) and ends[-1] == n and (np.diff(ends) > 0).all() and ends[0] > 0, \
                f"{name}: groups {p.ends} do not cover {n} tensors in order"
            assert np.array_equal(p.chain.sizes, w.sizes), f"{name}: its chain holds other tensors"
            assert np.isfinite(p.iteration) and p.iteration >= w.forward + w.backward.sum() - 1e-12, \
                f"{name}: an iteration of {p.iteration} s, below its compute"
            assert p.samples_per_s == w.batch_per_gpu * c.gpus / p.iteration
