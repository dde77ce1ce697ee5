"""PNG plots of results (matplotlib, Agg backend): time vs dense per scheme, and scaling with n."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from zensim.report.export import write_atomic  # noqa: E402


def _save(fig: Any, path: str | Path) -> None:
    """Render to PNG bytes, then write atomically."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    write_atomic(path, buf.getvalue())


def plot_vs_dense(rows: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """Horizontal bars of each scheme's time normalized to dense ring all-reduce (1 = dense)."""
    rows = [r for r in rows if r.get("vs_dense") is not None]
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(rows) + 1.2))
    ax.barh([r["scheme"] for r in rows], [r["vs_dense"] for r in rows], color="tab:blue")
    ax.axvline(1.0, color="black", lw=1, ls="--")
    ax.invert_yaxis()
    ax.set_xlabel("communication time / dense ring all-reduce")
    if rows:
        ax.set_title(f"{rows[0]['cluster']}, {rows[0]['model']}", fontsize=9)
    _save(fig, path)


def plot_scaling(table: Mapping[str, Mapping[int, float | None]], path: str | Path, title: str = "") -> None:
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
    _save(fig, path)
