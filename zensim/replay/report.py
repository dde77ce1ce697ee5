"""Tables and figures of a replay over iterations: the summary per method, and per iteration the
user-set vs actual density (build-up), the padding cost f(t), the simulated time and the global error.
Methods whose scheme is lossy (capabilities lossless=False) come after the others, marked; lines under
each table and the figure's axis labels define d, d', f(t), the global and kept errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from zensim.replay.iterations import ReplayIterationRecord
from zensim.report.runs import LOSSY_NOTE
from zensim.report.table import footnotes, format_table

COLUMNS = [("method", "method"), ("iterations", "iters"), ("user_density", "d"),
           ("actual_density_mean", "d' mean"), ("actual_density_p50", "d' p50"), ("actual_density_p99", "d' p99"),
           ("density_error_mean", "|d'-d| mean"), ("padding_mean", "f(t) mean"), ("padding_p99", "f(t) p99"),
           ("time_s_mean", "time s mean"), ("time_s_p50", "time s p50"), ("time_s_p99", "time s p99"),
           ("bytes_mean", "bytes mean"), ("global_error_mean", "global err"), ("conservation_p99", "kept err p99")]


# what a column's term means (zensim.report.table.footnotes), printed under the tables that show it
DEFINITIONS = {
    "d": "the user-set density (selected elements / all)",
    "d'": "the actual density: elements applied / all (above d: build-up of the union)",
    "|d'-d|": "the density error (ExDyna's eq. 6)",
    "f(t)": "the padding cost n max_i k_i / sum_i k_i of the workers' proposals k_i (ExDyna's eq. 5; 1: no padding)",
    "time s": "the simulated synchronization time of the iteration (s)",
    "bytes": "bytes sent by all ranks in the iteration",
    "global err": "global error: mean_i ||e_i|| / mean_i ||g_i||, the residuals e_i against the gradients g_i",
    "kept err": "kept error: max |sum_i e_i + applied so far - sum of the gradients so far| (float rounding: nothing lost)",
    "loss": "training loss, the mean of the last 10 iterations",
    "test": "the last evaluation on the held-out set (loss, accuracy)",
    "sync s": "the simulated synchronization time per iteration (s)",
    "clock s": "the simulated training time at the end: compute + synchronization of every iteration (s)",
    "lossy": LOSSY_NOTE,
}


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """`rows` under `columns` (key, title), lossy methods last with a 'lossy' column, the titles defined below."""
    lossy = [row.get("lossless") is False for row in rows]
    if any(lossy):
        rows = [dict(row, lossy="yes" if bad else "") for row, bad in sorted(zip(rows, lossy), key=lambda x: x[1])]
        columns = [columns[0], ("lossy", "lossy"), *columns[1:]]
    titles = [title for _, title in columns]
    return format_table([[row[key] for key, _ in columns] for row in rows], titles) + footnotes(titles, DEFINITIONS)


def render_summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """The summary rows as a text table (lossy methods last and marked, columns defined below it)."""
    return _table(rows, COLUMNS)


TRAINING_COLUMNS = [("method", "method"), ("iterations", "iters"), ("final_loss", "loss (last 10)"),
                    ("test_loss", "test loss"), ("test_accuracy", "test acc"), ("density_mean", "d' mean"),
                    ("sync_s_mean", "sync s mean"), ("clock_s", "clock s")]


def render_training(rows: Sequence[Mapping[str, Any]]) -> str:
    """`zensim converge`'s summary rows (zensim.replay.training.summarize_training) as a text table."""
    return _table(rows, TRAINING_COLUMNS)


def render_iterations(records: Sequence[ReplayIterationRecord], method: str) -> str:
    """One method's figures per iteration as a text table, its columns defined below it."""
    rows = [[r.iteration, r.actual_density, r.density_error, r.padding, r.time_s, r.bytes, r.global_error,
             r.conservation] for r in records if r.method == method]
    titles = ["iter", "d'", "|d'-d|", "f(t)", "time s", "bytes", "global err", "kept err"]
    return format_table(rows, titles) + footnotes(titles, DEFINITIONS)


def iterations_figure(records: Sequence[ReplayIterationRecord], title: str = "") -> Any:
    """Four panels against the iteration: actual density (the user's as a dashed line), f(t),
    simulated time and global error, one line per method, each its own (colour, marker); methods with
    a lossy scheme after the others, dotted and labelled, with a note; the legend below the panels."""
    import matplotlib.pyplot as plt

    from zensim.report.plots import LOSSY_STYLE, lossy_note, series_styles

    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = [("actual_density", "actual density d' = applied / elements (log)", True),
              ("padding", "padding cost f(t) = n max k_i / sum k_i", False),
              ("time_s", "simulated synchronization time (s, log)", True),
              ("global_error", "global error mean ||e_i|| / mean ||g_i||", False)]
    lossy = {r.method for r in records if r.lossless is False}
    methods = sorted(dict.fromkeys(r.method for r in records), key=lambda m: m in lossy)
    every = max(1, len({r.iteration for r in records}) // 15)  # markers on about 15 iterations
    for ax, (field, label, log) in zip(axes.flat, panels):
        for m, (colour, marker) in zip(methods, series_styles(len(methods))):
            mine = [r for r in records if r.method == m]
            ax.plot([r.iteration for r in mine], [getattr(r, field) for r in mine], color=colour, marker=marker,
                    markevery=every, ms=4, lw=1.3, ls=LOSSY_STYLE if m in lossy else "-",
                    label=m + (" (lossy)" if m in lossy else ""))
        if field == "actual_density":
            ax.axhline(records[0].user_density, color="k", ls="--", lw=1, label="user-set d")
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(label, fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("iteration")
        ax.xaxis.get_major_locator().set_params(integer=True)  # iterations, not 0.25
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, ncol=min(5, len(names)), loc="upper center", bbox_to_anchor=(0.5, 0.02))
    lossy_note(fig, lossy, 0.02 - 0.035 * (-(-len(names) // 5) + 1))  # below the legend's rows
    if title:
        fig.suptitle(title, fontsize=9)
    return fig
