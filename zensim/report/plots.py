"""Plots of results (matplotlib, Agg backend), every one from `RunRecord`s, simulated or emulated.

- `run_figure`: one run: absolute time (ms), time / dense ring all-reduce, and bytes per rank (max and
  mean sent), one bar per scheme;
- `sweep_figure`: a sweep group: the same three quantities against the first swept key (the GPU
  count for machines/gpus_per_machine, log2 axis; else the values as written, in order);
- `comparison_figure`: runs side by side: time per scheme per run, and each run's ratio to the first.

No two series share a colour and marker (`series_styles`); a scheme that ran the same program as an
earlier one (equal message logs) is drawn dashed/hatched and labelled '= <that scheme>'. Lossy schemes
(capabilities lossless=False) come after the lossless ones, labelled '(lossy)', drawn dotted (bars:
grey), with a note saying what that means (`LOSSY_LEGEND`). GPU counts are written out on axes. Titles name
the trace (file, content hash, iteration) and the cluster. `figure_bytes` renders a figure in the
format the output path names (`.png`, `.pdf`, `.svg`, ...: zensim.report.outputs.PLOT_FORMATS).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from zensim.atomic import write_atomic  # noqa: E402
from zensim.report.outputs import plot_format  # noqa: E402
from zensim.report.record import RunRecord  # noqa: E402
from zensim.report.runs import (Run, lossless_first, lossy_schemes, run_letters, same_program,  # noqa: E402
                                same_program_in)

# 20 distinct colours, the strong half of tab20 first (neighbours in tab20 are two shades of one hue)
COLOURS = plt.get_cmap("tab20").colors[0::2] + plt.get_cmap("tab20").colors[1::2]
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*", "h")  # 11: coprime with 20, pairs repeat after 220
SIZE_KEYS = ("machines", "gpus_per_machine")
LOSSY_LEGEND = ("(lossy): the scheme does not end with the dense sum (its capabilities say lossless=False), drawn "
                "dotted (bars: grey) and after the lossless ones: its time is not comparable with theirs as it is")
LOSSY_STYLE, LOSSY_COLOUR = ":", "0.6"


def series_styles(count: int) -> list[tuple[Any, str]]:
    """(colour, marker) of `count` series, all pairs distinct (colours alone distinct up to 20 series)."""
    return [(COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)]) for i in range(count)]


def figure_bytes(fig: Any, fmt: str) -> bytes:
    """The figure rendered in image format `fmt` (closed afterwards)."""
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def save_figure(fig: Any, path: str | Path) -> None:
    """Write the figure to `path` in the format its extension names (atomically)."""
    write_atomic(path, figure_bytes(fig, plot_format(path, str(path))))


def trace_title(rec: RunRecord) -> str:
    """'trace lstm-lm-128w.zt (sha256 1a2b3c4d), iteration 0' (empty when the record has no trace)."""
    trace = rec.trace
    if not trace.get("path"):
        return ""
    return f"trace {Path(trace['path']).name} (sha256 {str(trace.get('sha256', ''))[:8]}), iteration {trace.get('iteration')}"


def figure_title(rec: RunRecord, extra: str = "") -> str:
    """The title lines of a figure of one run: its trace, then its cluster and model (and `extra`)."""
    what = rec.model if rec.source == "simulated" else "emulated"
    parts = [trace_title(rec), f"{rec.cluster_name}, {what}" + (f", {extra}" if extra else "")]
    return "\n".join(p for p in parts if p)


def _labels(schemes: Sequence[str], same: dict[str, str], lossy: set[str] = frozenset()) -> tuple[list[str], set[str]]:
    """Legend labels ('hier-central = sparcml' for the same program, 'spardl (lossy)') and the schemes
    marked as the same program."""
    return [s + (f" = {same[s]}" if s in same else "") + (" (lossy)" if s in lossy else "") for s in schemes], set(same)


def gpu_axis(ax: Any, gpus: Sequence[float]) -> None:
    """A log2 x axis of GPU counts ticked at `gpus`, written out (128, not 2^7), no minor ticks."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(gpus), [f"{g:g}" for g in gpus])
    ax.minorticks_off()
    ax.set_xlabel("GPUs")


def lossy_note(fig: Any, lossy: set[str], y: float = -0.06) -> None:
    """LOSSY_LEGEND at height `y` (figure fraction; below the axes) when any series is lossy."""
    if lossy:
        fig.text(0.5, y, LOSSY_LEGEND, ha="center", fontsize=7, wrap=True)


def run_figure(records: Sequence[RunRecord]) -> Any:
    """One run: horizontal bars of time (ms), time / dense, and bytes per rank (max and mean sent, MB);
    lossless schemes first, lossy ones after them in grey."""
    lossy = lossy_schemes(records)
    records = sorted(records, key=lambda r: r.scheme in lossy)
    labels, marked = _labels([r.scheme for r in records], same_program(records), lossy)
    fig, axes = plt.subplots(1, 3, figsize=(14, 0.32 * len(records) + 1.8), sharey=True)
    y = range(len(records))
    hatch = ["//" if r.scheme in marked else "" for r in records]
    colours = [LOSSY_COLOUR if r.scheme in lossy else "tab:blue" for r in records]
    panels = [("time (ms)", [None if r.time_s is None else r.time_s * 1e3 for r in records]),
              ("time / dense ring all-reduce", [r.vs_dense for r in records])]
    for ax, (xlabel, values) in zip(axes, panels):
        ax.barh(y, [v if v is not None else 0 for v in values], color=colours, hatch=hatch, edgecolor="white")
        ax.set_xlabel(xlabel)
    axes[1].axvline(1.0, color="black", lw=1, ls="--")
    sent_max = [max(r.bytes_sent) / 1e6 if r.bytes_sent else 0 for r in records]
    sent_mean = [sum(r.bytes_sent) / len(r.bytes_sent) / 1e6 if r.bytes_sent else 0 for r in records]
    axes[2].barh(y, sent_max, color="tab:orange", label="max over ranks", hatch=hatch, edgecolor="white")
    axes[2].barh(y, sent_mean, color="tab:green", height=0.4, label="mean")
    axes[2].set_xlabel("MB sent per rank")
    axes[2].legend(fontsize=7)
    axes[0].set_yticks(list(y), labels)
    axes[0].invert_yaxis()
    if records:
        fig.suptitle(figure_title(records[0]), fontsize=9)
    lossy_note(fig, lossy)
    return fig


def _x_values(runs: Sequence[Run], x_key: str) -> tuple[list[float], list[str], bool]:
    """Positions, tick labels and GPU flag (a log2 axis of GPU counts) of the x axis of a sweep group."""
    if x_key in SIZE_KEYS:
        gpus = [float(run.records[0].gpus) for run in runs]
        return gpus, [f"{g:g}" for g in gpus], True
    labels = [str(run.sweep[x_key]) for run in runs]
    return [float(i) for i in range(len(runs))], labels, False


def sweep_figure(runs: Sequence[Run], x_key: str, group: str = "") -> Any:
    """A sweep group: time (ms, log), time / dense and max MB sent per rank against the first swept key,
    one line per scheme (lossless ones first; lossy ones dotted, after them)."""
    lossy = lossy_schemes([r for run in runs for r in run.records])
    schemes = lossless_first(list(dict.fromkeys(r.scheme for run in runs for r in run.records)), lossy)
    x, ticks, gpus = _x_values(runs, x_key)
    labels, marked = _labels(schemes, same_program_in(runs), lossy)
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    quantities = [("time (ms)", lambda r: None if r.time_s is None else r.time_s * 1e3),
                  ("time / dense ring all-reduce", lambda r: r.vs_dense),
                  ("max MB sent per rank", lambda r: max(r.bytes_sent) / 1e6 if r.bytes_sent else None)]
    for ax, (ylabel, get) in zip(axes, quantities):
        for name, label, (colour, marker) in zip(schemes, labels, series_styles(len(schemes))):
            points = [(xi, get(run.by_scheme()[name])) for xi, run in zip(x, runs) if name in run.by_scheme()]
            points = [(xi, v) for xi, v in points if v is not None]
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], color=colour, marker=marker, label=label,
                        ls=LOSSY_STYLE if name in lossy else "--" if name in marked else "-",
                        mfc="none" if name in marked else colour)
        ax.set_ylabel(ylabel)
        if gpus:
            gpu_axis(ax, x)
        else:
            ax.set_xticks(x, ticks)
            ax.set_xlabel(x_key)
    axes[0].set_yscale("log")
    axes[1].axhline(1.0, color="black", lw=1, ls="--")
    axes[2].set_yscale("log")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, ncol=min(6, max(1, len(names))), loc="lower center", bbox_to_anchor=(0.5, -0.02))
    fig.subplots_adjust(bottom=0.16 + 0.03 * (len(names) // 6))
    first = runs[0].records[0]
    what = first.model if first.source == "simulated" else "emulated"
    sweep = f"sweep over {x_key} = {runs[0].sweep[x_key]} .. {runs[-1].sweep[x_key]}" + (f", {group}" if group else "")
    at = f"at {x_key} = {runs[0].sweep[x_key]}: {first.cluster_name}, {what}"
    fig.suptitle("\n".join(p for p in (trace_title(first), sweep, at) if p), fontsize=9)
    lossy_note(fig, lossy)
    return fig


def comparison_figure(runs: Sequence[Run]) -> Any:
    """Runs side by side, grouped bars per scheme (one colour per run): time (ms), each run's time over
    the first run's, time / dense ring all-reduce in its own run, max MB sent per rank. Schemes that
    are the same program in every run are labelled '= <that scheme>' and hatched; the title names
    the trace(s) and each run's cluster. Lossy schemes come after the lossless ones, labelled so."""
    lossy = lossy_schemes([r for run in runs for r in run.records])
    schemes = lossless_first(list(dict.fromkeys(r.scheme for run in runs for r in run.records)), lossy)
    letters = run_letters(len(runs))
    same = same_program_in(runs)
    labels, marked = _labels(schemes, same, lossy)
    fig, axes = plt.subplots(1, 4, figsize=(18, 0.35 * len(schemes) * max(1, len(runs) / 2) + 2.4), sharey=True)
    height = 0.8 / len(runs)
    styles = series_styles(len(runs))
    first = {s: r.time_s for s, r in runs[0].by_scheme().items()}
    panels = [("time (ms)", lambda s, r: None if r.time_s is None else r.time_s * 1e3),
              (f"time / run {letters[0]}'s time", lambda s, r: r.time_s / first[s] if r.time_s is not None and first.get(s) else None),
              ("time / dense ring all-reduce", lambda s, r: r.vs_dense),
              ("max MB sent per rank", lambda s, r: max(r.bytes_sent) / 1e6 if r.bytes_sent else None)]
    for k, (run, letter, (colour, _)) in enumerate(zip(runs, letters, styles)):
        recs = run.by_scheme()
        y = [i + (k - (len(runs) - 1) / 2) * height for i in range(len(schemes))]
        hatch = ["//" if s in marked else "" for s in schemes]
        for ax, (_, get) in zip(axes, panels):
            values = [get(s, recs[s]) if s in recs else None for s in schemes]
            ax.barh(y, [v if v is not None else 0 for v in values], height=height, color=colour, hatch=hatch,
                    edgecolor="white", label=f"{letter}: {run.label}" if ax is axes[0] else None)
    for ax, (xlabel, _) in zip(axes, panels):
        ax.set_xlabel(xlabel)
    for ax in axes[1:3]:
        ax.axvline(1.0, color="black", lw=1, ls="--")
    axes[0].set_yticks(range(len(schemes)), labels)
    axes[0].invert_yaxis()
    fig.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=1)  # below the x labels
    traces = list(dict.fromkeys(trace_title(run.records[0]) for run in runs))
    clusters: dict[str, list[str]] = {}
    for letter, run in zip(letters, runs):
        rec = run.records[0]
        what = rec.model if rec.source == "simulated" else "emulated"
        clusters.setdefault(f"{rec.cluster_name}, {what}", []).append(letter)
    lines = [t for t in traces if t] + [f"{', '.join(who)}: {where}" for where, who in clusters.items()]
    fig.suptitle("\n".join(lines), fontsize=9)
    lossy_note(fig, lossy)
    return fig
