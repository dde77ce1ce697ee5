"""Replay over iterations: every sparsifier + scheme pair keeps every value (applied or in a
residual, asserted every iteration), ExDyna's exchange is lossless on its input with the padding
it reports, and the densities behave as the papers say (top-k builds up, CLT-k and SparDL do not)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.topology import ClusterSpec
from zensim.replay import ConservationError, Method, parse_range, replay_iterations, summarize
from zensim.run import run_ranks
from zensim.run.transports import InBytes
from zensim.schemes import build_scheme
from zensim.sparsify import Team
from zensim.trace import Trace
from zensim.trace.gradients import SyntheticGradients, TraceGradients

DIGITS = Path(__file__).resolve().parent.parent / "traces" / "digits-cnn-16w.zt"
PAIRS = [("dense-allreduce", None), ("agsparse-hier", "topk"), ("spardl", "blocktopk"), ("exdyna", "exdyna"),
         ("exdyna", "exdyna-static"), ("exdyna", "cltk"), ("exdyna", "threshold"), ("sparcml", "dgc"), ("topkdsa", "topk")]


@pytest.fixture(scope="module")
def digits_records():
    source = TraceGradients(Trace.open(DIGITS))
    methods = [Method(s, sp, 0.01, 16, source.numel) for s, sp in PAIRS]
    return replay_iterations(source, methods, 0, 8, Costs(ClusterSpec.parse(16, 1, "10Gbps")))


def test_every_value_is_applied_or_kept_every_iteration(digits_records) -> None:
    """replay_iterations asserts it per iteration (ConservationError otherwise); the figures say so too."""
    assert len(digits_records) == 8 * len(PAIRS)
    for rec in digits_records:
        assert rec.conservation < 1e-5, rec


def test_densities_build_up_or_not(digits_records) -> None:
    rows = {row["method"]: row for row in summarize(digits_records)}
    topk = rows["agsparse-hier"]["actual_density_mean"]
    assert topk > 4 * 0.01  # 16 workers' top-1% sets overlap only in part: build-up
    assert rows["exdyna+cltk"]["actual_density_p99"] == pytest.approx(37 / 3658)  # the leader's k exactly
    assert rows["spardl"]["actual_density_p99"] <= 16 * 3 / 3658  # k / P per block, rounded up, never more
    assert rows["exdyna+cltk"]["padding_mean"] == 16.0  # one list of k, the others padded to it
    assert rows["agsparse-hier"]["padding_mean"] == 1.0
    assert rows["dense-allreduce"]["global_error_mean"] == 0.0


@pytest.mark.parametrize("workers,teams,sag", [(12, 3, "auto"), (16, 4, "bsag"), (16, 16, "bsag")])
def test_spardl_bsag_keeps_every_value_and_the_users_density(workers: int, teams: int, sag: str) -> None:
    """B-SAG over iterations of the shipped dense trace: the invariant every iteration (asserted by
    replay_iterations), every block at most L = ceil(k / p) after the SAG, h inside [k/P, dk/P]."""
    source = TraceGradients(Trace.open(DIGITS))
    method = Method("spardl", "blocktopk", 0.01, workers, source.numel, scheme_options={"teams": teams, "sag": sag})
    records = replay_iterations(source, [method], 0, 12, Costs(ClusterSpec.parse(workers, 1, "10Gbps")))
    p, c = workers // teams, method.program.block
    assert max(r.actual_density for r in records) <= p * c / source.numel
    assert all(c / teams <= ctl.h <= c for ctl in method.program.controllers)
    assert max(r.conservation for r in records) < 1e-5


def test_a_lost_value_is_caught(monkeypatch) -> None:
    source = SyntheticGradients(4, 3, 4096, seed=1)
    method = Method("spardl", "blocktopk", 0.05, 4, 4096)
    real = method.step

    def leaky(grads):  # drop what the scheme discarded instead of returning it to the residuals
        out = real(grads)
        for memory in method.memories:
            memory.residuals["flat"][:] = 0
        return out

    monkeypatch.setattr(method, "step", leaky)
    with pytest.raises(ConservationError, match="spardl: iteration 0"):
        replay_iterations(source, [method], 0, 3, Costs(ClusterSpec.parse(4, 1, "10Gbps")))


def test_exdyna_exchange_is_lossless_with_its_padding() -> None:
    n, numel = 5, 8192
    team = Team("exdyna", n, 0.02, blocks=64)
    rng = np.random.default_rng(2)
    for _ in range(3):
        rnd = team.step("w", [rng.standard_normal(numel).astype(np.float32) * 0.05 for _ in range(n)])
    prog = build_scheme("exdyna", n, numel)
    out = run_ranks(prog, rnd.sent)  # checks the dense sum and bit-identical replicas
    ks = np.array(rnd.proposed)
    assert out.context.stats["padding"] == pytest.approx(n * ks.max() / ks.sum())
    cols = out.log.arrays()
    index = cols["nbytes"][np.array(out.log.fmt_names)[out.log.fmt] == "index"].sum()
    assert index == n * (n - 1) * ks.max() * 4  # every list padded to the longest
    values = cols["nbytes"][np.array(out.log.fmt_names)[out.log.fmt] == "values"].sum()
    assert values == 2 * (n - 1) * len(rnd.positions) * 4  # ring all-reduce of the union's values
    wire = run_ranks(prog, rnd.sent, InBytes())
    assert np.array_equal(wire.log.bytes_received(), out.log.bytes_received())


def test_parse_range() -> None:
    assert parse_range("3:7", 50) == (3, 7) and parse_range(":", 50) == (0, 50) and parse_range("10:", 50) == (10, 50)
    for bad in ("7:3", "0:51", "x", "1:2:3"):
        with pytest.raises(ConfigError, match=f"--replay {bad}"):
            parse_range(bad, 50)


def test_exdyna_needs_a_sparsifier() -> None:
    with pytest.raises(ConfigError, match="scheme exdyna: needs a sparsifier"):
        Method("exdyna", None, 0.01, 4, 1000)


def test_simulate_iterations_command(tmp_path: Path, capsys) -> None:
    from zensim.cli import main

    plot, csv = tmp_path / "it.png", tmp_path / "it.csv"
    args = ["simulate", "--trace", str(DIGITS), "--replay", "2:5", "--scheme", "topka,spardl", "--machines", "16",
            "--nic", "10Gbps", "--plot", str(plot), "--csv", str(csv), "--per-iteration"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "iterations 2:5" in out and "spardl" in out and "f(t) mean" in out
    assert plot.read_bytes()[:4] == b"\x89PNG" and len(csv.read_text().splitlines()) == 1 + 2 * 3
    assert main(["simulate", "--trace", str(DIGITS), "--replay", "0:51", "--scheme", "spardl"]) == 2
    assert "--replay 0:51: must satisfy 0 <= A < B <= 50" in capsys.readouterr().err
    indices = Path(__file__).resolve().parent.parent / "traces" / "lstm-lm-128w.zt"
    assert main(["simulate", "--trace", str(indices), "--replay", "0:2", "--scheme", "spardl"]) == 2
    assert "indices only" in capsys.readouterr().err


def test_the_workers_threads_start_at_the_first_step_and_stop_with_the_run() -> None:
    """A method's threads start at its first step and stop at close(), and replay_iterations stops
    them (its own and its methods') on return."""
    import threading

    def workers() -> int:
        return sum(t.name.startswith("zensim-worker") and t.is_alive() for t in threading.enumerate())

    source = SyntheticGradients(4, 2, 4096, seed=1)
    method = Method("topka", "topk", 0.05, 4, 4096)
    before = workers()
    method.step([source.gradient(0, w) for w in range(4)])
    assert workers() > before
    method.close()
    assert workers() == before
    replay_iterations(source, [Method("topka", "topk", 0.05, 4, 4096)], 0, 2, Costs(ClusterSpec.parse(4, 1, "10Gbps")))
    assert workers() == before


def test_the_methods_of_a_replay_share_one_pool_of_a_thread_per_core() -> None:
    """make_methods' methods step one at a time on one pool: never more threads than cores, all stopped at
    once (by close() or at the end of a replay)."""
    import os
    import threading

    from zensim.replay import make_methods

    def workers() -> int:
        return sum(t.name.startswith("zensim-worker") and t.is_alive() for t in threading.enumerate())

    source = SyntheticGradients(8, 2, 4096, seed=1)
    methods = make_methods("topka,gtopk,exdyna", None, 0.05, 8, 4096, 0, {}, default=[])
    assert all(m.pool is methods[0].pool for m in methods)
    before = workers()
    for m in methods:
        m.step([source.gradient(0, w) for w in range(8)])
    assert 0 < workers() - before <= (os.cpu_count() or 1)
    methods[0].close()  # the pool of them all
    assert workers() == before
    methods = make_methods("topka,gtopk,exdyna", None, 0.05, 8, 4096, 0, {}, default=[])
    replay_iterations(source, methods, 0, 2, Costs(ClusterSpec.parse(8, 1, "10Gbps")))
    assert workers() == before
