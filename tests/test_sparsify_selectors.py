"""What each sparsifier selects: exact top-k with lowest-index ties, DGC at most k of the largest,
the hard threshold's set, CLT-k's cycling leader, ExDyna's exclusive partitions, moves and threshold,
Ok-Topk's local threshold re-use."""

from __future__ import annotations

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.sparsify import Team, make_sparsifier, target_count
from zensim.sparsify import ops
from zensim.sparsify.exdyna import GAMMA, Layout, scale_factor
from zensim.sparsify.threshold import default_threshold


def test_topk_ties_go_to_the_lowest_positions() -> None:
    mag = np.array([1, 3, 2, 3, 3, 0, 3], np.float32)
    assert ops.topk_indices(mag, 3).tolist() == [1, 3, 4]
    assert ops.topk_indices(mag, 0).tolist() == [] and ops.topk_indices(mag, 9).tolist() == list(range(7))


@pytest.mark.parametrize("dist", ["normal", "ties", "sorted"])
def test_topk_fast_path_equals_the_full_partition(dist: str) -> None:
    n, k = 600_000, 6_000
    rng = np.random.default_rng(1)
    mag = {"normal": np.abs(rng.standard_normal(n)), "ties": rng.integers(0, 50, n).astype(float),
           "sorted": np.arange(n, dtype=float)}[dist].astype(np.float32)
    got = ops.topk_indices(mag, k)
    kth = np.sort(mag)[n - k]
    above = np.flatnonzero(mag > kth)
    expected = np.sort(np.concatenate([above, np.flatnonzero(mag == kth)[: k - len(above)]]))
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_selections_equal_numpy(dtype: type) -> None:
    """at_least and topk_abs (one compiled pass, no |x| array) give numpy's positions exactly,
    thresholds at a value of x and ties included."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(700_000) * rng.integers(0, 3, 700_000)).astype(dtype)  # a third zeros: ties
    x[::5] = -x[::5]
    for threshold in (0.0, float(abs(x[11])), 0.1, 1 / 3, 5.0):
        np.testing.assert_array_equal(ops.at_least(x, threshold), np.flatnonzero(np.abs(x) >= threshold))
    for k in (1, 700, 70_000, 400_000, 699_999):
        np.testing.assert_array_equal(ops.topk_abs(x, k), ops.topk_indices(np.abs(x), k))
    assert ops.at_least(x[:0], 1.0).tolist() == [] and ops.at_least(x[1::2], 0.5).dtype == np.int64


def test_dgc_selects_at_most_k_of_the_largest_and_is_seeded_per_key() -> None:
    rng = np.random.default_rng(2)
    a, b = make_sparsifier("dgc", 0.01, seed=5), make_sparsifier("dgc", 0.01, seed=5)
    g1, g2 = (rng.standard_normal(30_000).astype(np.float32) for _ in range(2))
    first = a.propose("x", g1)
    assert 1 <= len(first) <= target_count(0.01, 30_000)
    assert np.abs(g1)[first].min() >= np.abs(np.delete(g1, first)).max()
    a.propose("y", g2)
    b.propose("y", g2)  # another order of calls must not change x's sample
    np.testing.assert_array_equal(b.propose("x", g1), first)


def test_hard_threshold_selects_everything_at_or_above() -> None:
    acc = np.array([0.1, -0.5, 0.49, 0.5, -2.0], np.float32)
    assert make_sparsifier("threshold", 0.5, threshold=0.5).propose("w", acc).tolist() == [1, 3, 4]
    assert default_threshold(0.01, 40_000) == pytest.approx(1 / (2 * 20))
    with pytest.raises(ConfigError, match="threshold -1"):
        make_sparsifier("threshold", 0.1, threshold=-1)


def test_cltk_uses_the_cycling_leaders_topk() -> None:
    rng = np.random.default_rng(3)
    team = Team("cltk", 3, 0.01)
    for t in range(6):
        grads = [rng.standard_normal(1000).astype(np.float32) for _ in range(3)]
        accs = [team.residual(r, "w") + g if t else g for r, g in enumerate(grads)]
        rnd = team.step("w", grads)
        leader = t % 3
        assert rnd.proposed == [10 if r == leader else 0 for r in range(3)]
        expected = ops.topk_indices(np.abs(accs[leader]), 10)
        for chunk in rnd.sent:
            np.testing.assert_array_equal(chunk.indices, expected)


def test_exdyna_layout_blocks_of_32_partitions_cover() -> None:
    lay = Layout.initial(1_000_003, 16, 1024)
    assert lay.block_size % 32 == 0 and lay.block_size == 960 and lay.min_blk == 1024 / 64
    bounds = [lay.bounds(i) for i in range(16)]
    assert bounds[0][0] == 0 and bounds[-1][1] == 1_000_003
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    small = Layout.initial(5000, 4, 1024)  # too small for 1024 blocks of 32: blocks of 32
    assert small.block_size == 32 and small.blocks == 156
    with pytest.raises(ConfigError, match="fewer than the 16 workers"):
        Layout.initial(300, 16, 1024)


def test_exdyna_sweep_moves_one_block_towards_the_light_neighbour() -> None:
    lay = Layout.initial(32 * 64, 4, 64)  # 16 blocks per partition
    lay.sweep(np.array([200, 50, 100, 100]), 450)  # mean 112: 0 heavy, 1 light -> 0 gives 1 to 1
    assert lay.count.tolist() == [15, 17, 16, 16] and lay.pos.tolist() == [0, 15, 32, 48]
    lay = Layout.initial(32 * 64, 4, 64)
    lay.sweep(np.array([100, 100, 50, 200]), 450)  # 3 heavy, 2 light -> 3 gives 1 to 2
    assert lay.count.tolist() == [16, 16, 17, 15] and lay.pos.tolist() == [0, 16, 32, 49]
    lay = Layout.initial(32 * 64, 4, 64)
    lay.count[:] = [4, 20, 20, 20]
    lay.pos[:] = [0, 4, 24, 44]
    lay.sweep(np.array([300, 10, 100, 100]), 510)  # partition 0 is at min_blk (64 / 16 = 4): kept
    assert lay.count.tolist() == [4, 20, 20, 20]


def test_exdyna_threshold_factors() -> None:
    assert scale_factor(120, 100) == 1 + GAMMA
    assert scale_factor(100, 100) == 1 + GAMMA / 4
    assert scale_factor(90, 100) == 1 - GAMMA


def skewed(iterations: int, workers: int, numel: int, seed: int) -> list[list[np.ndarray]]:
    """Gradients 10x larger in one stretch (the fourth eighth of the tensor) than elsewhere."""
    rng = np.random.default_rng(seed)
    scale = np.full(numel, 1e-3, np.float32)
    scale[3 * numel // 8: numel // 2] = 1e-2
    return [[(rng.standard_normal(numel).astype(np.float32) * scale) for _ in range(workers)]
            for _ in range(iterations)]


def test_exdyna_balances_better_than_static() -> None:
    """Blocks flow out of the heavy partition: the padding cost f(t) = n max k_i / sum k_i falls
    below the static layout's, and the layout is the same on every worker."""
    n, numel, iterations = 8, 1 << 16, 150
    dyn, static = Team("exdyna", n, 0.01, blocks=256), Team("exdyna-static", n, 0.01, blocks=256)
    f_dyn, f_static = [], []
    for grads in skewed(iterations, n, numel, seed=4):
        for team, fs in ((dyn, f_dyn), (static, f_static)):
            ks = np.array(team.step("w", grads).proposed)
            fs.append(n * ks.max() / ks.sum())
        assert len({tuple(s.layout("w").count) for s in dyn.sparsifiers}) == 1
    assert np.mean(f_dyn[-50:]) < 0.8 * np.mean(f_static[-50:])
    assert static.sparsifiers[0].layout("w").count.tolist() == Layout.initial(numel, n, 256).count.tolist()
    heavy = dyn.sparsifiers[0].layout("w").count[3]
    assert heavy < 32  # the heavy partition gave blocks away


def test_exdyna_proposals_stay_in_the_partition_and_never_overlap() -> None:
    n, numel = 4, 1 << 14
    team = Team("exdyna", n, 0.02, blocks=64)
    for t, grads in enumerate(skewed(30, n, numel, seed=5)):
        accs = [m.accumulate("w", g) for m, g in zip(team.memories, grads)]
        props = [s.propose("w", a) for s, a in zip(team.sparsifiers, accs)]
        lay = team.sparsifiers[0].layout("w")
        for r, p in enumerate(props):
            start, end = lay.bounds((t + r) % n)
            assert len(p) >= 1 and p[0] >= start and p[-1] < end
        assert len(np.unique(np.concatenate(props))) == sum(len(p) for p in props)
        union = np.concatenate(props)
        for m in team.memories:
            m.consume("w", union)
        for s in team.sparsifiers:
            s.observe("w", [len(p) for p in props])


def test_exdyna_reaches_the_users_density() -> None:
    """Threshold scaling brings the aggregate count k' to within beta of k on stationary input."""
    n, numel = 4, 1 << 14
    team = Team("exdyna", n, 0.01, blocks=64)
    k = int(0.01 * numel)
    totals = []
    rng = np.random.default_rng(6)
    for _ in range(400):
        rnd = team.step("w", [rng.standard_normal(numel).astype(np.float32) * 0.01 for _ in range(n)])
        totals.append(sum(rnd.proposed))
    assert 1 / 1.3 < np.median(totals[-100:]) / k < 1.3


def oktopk_reference(accs: list[np.ndarray], k: int, tau: int) -> tuple[list[np.ndarray], list[str]]:
    """Ok-Topk's local rule as the authors' code runs it (at-or-above instead of strictly above):
    the selections, and which adjustments happened."""
    threshold, out, events = 0.0, [], []
    for t, acc in enumerate(accs):
        mag = np.abs(acc.astype(np.float64))
        if t % tau == 0:
            threshold = float(np.sort(mag)[-k])
        else:
            for _ in range(5):
                if np.count_nonzero(mag >= threshold) <= 3 * k // 2:
                    break
                threshold *= 1.03
                events.append("raise")
        chosen = np.flatnonzero(mag >= threshold)
        if len(chosen) < 3 * k / 4:
            threshold /= 1.012
            events.append("down")
        elif len(chosen) > 5 * k / 4:
            threshold *= 1.012
            events.append("up")
        out.append(chosen)
    return out, events


def test_oktopk_reuses_its_threshold_between_exact_iterations() -> None:
    """tau = 4: exact top-k at iterations 0 and 4; in between the last threshold, raised x1.03 while
    more than 3k/2 pass, nudged x/÷1.012 outside [3k/4, 5k/4]; the gradients' scale moves to take
    every branch."""
    rng = np.random.default_rng(3)
    scales = [1.0, 1.0, 1.6, 0.6, 1.0, 1.1, 0.9, 2.0]
    accs = [(s * rng.standard_normal(5000)).astype(np.float32) for s in scales]
    k = target_count(0.02, 5000)
    sparsifier = make_sparsifier("oktopk", 0.02, tau=4)
    want, events = oktopk_reference(accs, k, 4)
    for t, acc in enumerate(accs):
        assert np.array_equal(sparsifier.propose("w", acc), want[t]), t
    assert len(want[0]) == k and len(want[4]) == k
    assert {"raise", "up", "down"} <= set(events)
    with pytest.raises(ConfigError, match="sparsifier oktopk: tau 0 must be an integer >= 1"):
        make_sparsifier("oktopk", 0.02, tau=0)
