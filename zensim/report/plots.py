"""Plots of results (matplotlib, Agg backend): time vs dense per scheme, and scaling with n.

Each plot is a function returning a matplotlib Figure; `figure_bytes` renders it in the format the
output path names (`.png`, `.pdf`, `.svg`, ...: zensim.report.outputs.PLOT_FORMATS)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from zensim.atomic import write_atomic  # noqa: E402
from zensim.report.outputs import plot_format  # noqa: E402


def figure_bytes(fig: Any, fmt: str) -> bytes:
    """The figure rendered in image format `fmt` (closed afterwards)."""
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def save_figure(fig: Any, path: str | Path) -> None:
    """Write the figure to `path` in the format its extension names (atomically)."""
    write_atomic(path, figure_bytes(fig, plot_format(path, str(path))))


def vs_dense_figure(rows: Sequence[Mapping[str, Any]]) -> Any:
    """Horizontal bars of each scheme's time normalized to dense ring all-reduce (1 = dense)."""
    rows = [r for r in rows if r.get("vs_dense") is not None]
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(rows) + 1.2))
    ax.barh([r["scheme"] for r in rows], [r["vs_dense"] for r in rows], color="tab:blue")
    ax.axvline(1.0, color="black", lw=1, ls="--")
    ax.invert_yaxis()
    ax.set_xlabel("communication time / dense ring all-reduce")
    if rows:
        ax.set_title(f"{rows[0]['cluster']}, {rows[0]['model']}", fontsize=9)
    return fig


def scaling_figure(table: Mapping[str, Mapping[int, float | None]], title: str = "") -> Any:
    """Lines of time / dense against the number of GPUs, one per scheme (log2 x axis)."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for scheme, by_n in table.items():
        points = sorted((n, v) for n, v in by_n.items() if v is not None)
        ax.plot([n for n, _ in points], [v for _, v in points], marker="o", label=scheme)
    ax.axhline(1.0, color="black", lw=1, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("time / dense ring all-reduce")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    return fig
