"""Espresso's abstract timeline (closed cases) and its decision search (never worse than no compression)."""

import numpy as np
import pytest

from zensim.train.fusion.chain import Affine
from zensim.train.fusion.espresso import (GPU_OPTIONS, OPTIONS, UNCOMPRESSED, Model, Option, System, before_bubble,
                                          espresso, steps, timeline)

FREE = Affine(0.0, 0.0)


def system(N=4, G=2, enc=FREE, dec=FREE, cpu=FREE, ratio=0.02, **kw):
    return System(N, G, 25e9 / 8, 100e9, ratio, enc, dec, cpu, cpu, **kw)


def test_ten_options():
    assert len(OPTIONS) == 10 and len({o.name for o in OPTIONS}) == 10


def test_one_gpu_has_no_communication():
    m = Model([1e6, 2e6, 3e6], [1e-3, 2e-3, 3e-3], forward=0.5)
    for option in OPTIONS:
        s = system(N=1, G=1, enc=Affine(1e-4, 0), dec=Affine(2e-4, 0), cpu=Affine(1e-4, 0))
        t = timeline(m, s, [option] * 3).time
        if not option.compress:
            assert t == pytest.approx(0.5 + 6e-3)
        elif option.device == "gpu":   # encode and decode on the GPU stream (twice when divisible)
            rounds = 2 if option.collective == "alltoall" else 1
            assert t == pytest.approx(0.5 + 6e-3 + 3 * rounds * 3e-4)
        else:                          # the CPU works beside the GPU: only the last tensor's work shows
            assert t == pytest.approx(0.5 + 6e-3 + (4e-4 if option.collective == "alltoall" else 2e-4))


def test_hierarchical_allreduce_closed_form():
    s = system(N=4, G=2, nic_latency=1e-5, intra_latency=1e-6)
    size = 8e6
    want = 2 * 1 * (1e-6 + size / 2 / 100e9) + 2 * 3 * (1e-5 + size / 4 / (25e9 / 8))
    assert sum(t for _, t in steps(UNCOMPRESSED[0], size, s)) == pytest.approx(want)
    m = Model([size], [1e-3])
    assert timeline(m, s, [UNCOMPRESSED[0]]).time == pytest.approx(1e-3 + want)
    # flat ring: 2(P-1) steps of size/P bounded by the NIC
    flat = sum(t for _, t in steps(UNCOMPRESSED[1], size, s))
    assert flat == pytest.approx(2 * 7 * (1e-5 + size / 8 / (25e9 / 8)))


def test_compressed_allgather_bytes():
    s = system(N=4, G=2)
    size = 1e7
    res = dict((r, t) for r, t in steps(Option(True, "gpu", "allgather", False), size, s) if r == "nic")
    assert res["nic"] == pytest.approx(7 * 0.02 * size / (25e9 / 8))      # (P-1) contributions of c bytes


def test_bubbles():
    # a large tensor whose communication ends long before the next (late) gradient is ready
    m = Model([1e6, 1e6], [1e-3, 0.5])
    s = system(N=2, G=1)
    tl = timeline(m, s, [UNCOMPRESSED[0]] * 2)
    assert before_bubble(tl, "nic") == {0}


@pytest.mark.parametrize("seed", range(4))
def test_espresso_never_worse_than_no_compression(seed):
    rng = np.random.default_rng(seed)
    n = 12
    m = Model(rng.choice([1e5, 1e6, 8e6], n), rng.exponential(2e-3, n), forward=0.01)
    s = system(N=8, G=4, enc=Affine(rng.exponential(1e-3), 1 / 100e9), dec=Affine(1e-4, 1 / 100e9),
               cpu=Affine(rng.exponential(3e-3), 1 / 5e9), nic_latency=2e-5)
    d = espresso(m, s)
    assert d.time <= min(d.uniform[o.name] for o in UNCOMPRESSED) + 1e-15
    assert d.time == pytest.approx(timeline(m, s, d.strategy).time)
    assert sum(d.counts().values()) == n and d.offload == "exhaustive"


def test_espresso_follows_the_costs():
    rng = np.random.default_rng(9)
    m = Model(rng.choice([4e6, 16e6], 10), rng.exponential(1e-3, 10))
    # free compression on a slow network: as fast as compressing everything, far faster than fp32
    cheap = espresso(m, system(N=8, G=1))
    assert cheap.time <= cheap.best_uniform[1] + 1e-15
    assert cheap.time < 0.2 * cheap.uniform["fp32/hier"]
    # compression dearer than any communication: nothing is compressed
    dear = espresso(m, system(N=8, G=1, enc=Affine(10.0, 0), dec=Affine(10.0, 0), cpu=Affine(10.0, 0)))
    assert not any(o.compress for o in dear.strategy)
    assert set(GPU_OPTIONS) <= set(OPTIONS)
