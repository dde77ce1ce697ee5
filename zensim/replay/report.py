"""Tables and figures of a replay over iterations: the summary per method, and per iteration the
user-set vs actual density (build-up), the padding cost f(t), the simulated time and the global error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from zensim.replay.iterations import IterationRecord
from zensim.report.table import format_table

COLUMNS = [("method", "method"), ("iterations", "iters"), ("user_density", "d"),
           ("actual_density_mean", "d' mean"), ("actual_density_p50", "d' p50"), ("actual_density_p99", "d' p99"),
           ("density_error_mean", "|d'-d| mean"), ("padding_mean", "f(t) mean"), ("padding_p99", "f(t) p99"),
           ("time_s_mean", "time s mean"), ("time_s_p50", "time s p50"), ("time_s_p99", "time s p99"),
           ("bytes_mean", "bytes mean"), ("global_error_mean", "global err"), ("conservation_p99", "kept err p99")]


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    return format_table([[row[key] for key, _ in columns] for row in rows], [title for _, title in columns])


def render_summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """The summary rows as a text table."""
    return _table(rows, COLUMNS)


TRAINING_COLUMNS = [("method", "method"), ("iterations", "iters"), ("final_loss", "loss (last 10)"),
                    ("test_loss", "test loss"), ("test_accuracy", "test acc"), ("density_mean", "d' mean"),
                    ("sync_s_mean", "sync s mean"), ("clock_s", "clock s")]


def render_training(rows: Sequence[Mapping[str, Any]]) -> str:
    """`zensim converge`'s summary rows (zensim.replay.training.summarize_training) as a text table."""
    return _table(rows, TRAINING_COLUMNS)


def render_iterations(records: Sequence[IterationRecord], method: str) -> str:
    """One method's figures per iteration as a text table."""
    rows = [[r.iteration, r.actual_density, r.density_error, r.padding, r.time_s, r.bytes, r.global_error,
             r.conservation] for r in records if r.method == method]
    return format_table(rows, ["iter", "d'", "|d'-d|", "f(t)", "time s", "bytes", "global err", "kept err"])


def iterations_figure(records: Sequence[IterationRecord], title: str = "") -> Any:
    """Four panels against the iteration: actual density (the user's as a dashed line), f(t),
    simulated time and global error, one line per method."""
    import matplotlib.pyplot as plt


    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = [("actual_density", "actual density d' (log)", True), ("padding", "padding cost f(t)", False),
              ("time_s", "simulated time per iteration (s)", True), ("global_error", "global error", False)]
    methods = list(dict.fromkeys(r.method for r in records))
    for ax, (field, label, log) in zip(axes.flat, panels):
        for m in methods:
            mine = [r for r in records if r.method == m]
            ax.plot([r.iteration for r in mine], [getattr(r, field) for r in mine], label=m, lw=1.3)
        if field == "actual_density":
            ax.axhline(records[0].user_density, color="k", ls="--", lw=1, label="user-set d")
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("iteration")
    axes[0][0].legend(fontsize=7, ncol=2)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig
