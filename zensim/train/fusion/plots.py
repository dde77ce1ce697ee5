"""Plots of the fusion figures (matplotlib, returned as image bytes so callers write them atomically)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence


def missing_plot(degrees: Sequence[float], curves: Mapping[str, Sequence[float]], title: str,
                 fmt: str = "png", paper: bool = True) -> bytes:
    """Tensor missing rate (%) against fusion degree (%), one line per curve; SAFusion Fig. 3's end points."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, rates in curves.items():
        ax.plot([100 * d for d in degrees], [100 * r for r in rates], marker="o", ms=3, label=label)
    if paper:
        ax.scatter([100, 100], [75, 81], marker="*", s=120, color="k", zorder=5,
                   label="SAFusion Fig. 3 at 100% (ResNet-152 75%, BERT-base 81%)")
    ax.set_xlabel("fusion degree (%)")
    ax.set_ylabel("tensor missing rate (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6)
    return _image(fig, fmt)


def throughput_plot(strategies: Sequence[str], series: Mapping[str, Sequence[float]], title: str,
                    fmt: str = "png") -> bytes:
    """Bars of samples/s per strategy, one bar group per series (a model, a cost profile)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(strategies) * max(1, len(series)) / 2), 3.5))
    width = 0.8 / max(1, len(series))
    for k, (label, values) in enumerate(series.items()):
        ax.bar(np.arange(len(strategies)) + width * k, values, width=width, label=label)
    ax.set_xticks(np.arange(len(strategies)) + width * (len(series) - 1) / 2, strategies, fontsize=8)
    ax.set_ylabel("samples/s")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return _image(fig, fmt)


def _image(fig, fmt: str) -> bytes:
    """The figure as image bytes in `fmt`; the figure is closed."""
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()
