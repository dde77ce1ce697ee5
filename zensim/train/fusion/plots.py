"""Plots of the fusion figures (matplotlib, returned as image bytes so callers write them atomically).
Every line has its own (colour, marker) (zensim.report.plots.series_styles), legends sit below the
panels."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any


def missing_plot(degrees: Sequence[float], curves: Mapping[str, Sequence[float]], title: str,
                 fmt: str = "png", paper: bool = True) -> bytes:
    """Tensor missing rate (%) against fusion degree (%), one line per curve; SAFusion Fig. 3's end points."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from zensim.report.plots import series_styles

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (label, rates), (colour, marker) in zip(curves.items(), series_styles(len(curves))):
        ax.plot([100 * d for d in degrees], [100 * r for r in rates], color=colour, marker=marker, ms=3, label=label)
    if paper:
        ax.scatter([100, 100], [75, 81], marker="*", s=120, color="k", zorder=5,
                   label="SAFusion Fig. 3 at 100% (ResNet-152 75%, BERT-base 81%)")
    ax.set_xlabel("fusion degree (%)")
    ax.set_ylabel("tensor missing rate (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
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


def strategy_label(rec) -> str:
    """'behind d=0.5 (agsparse-ring)': a record's strategy, its fusion degree or cap, and its scheme."""
    st = rec.strategy
    size = f" d={st['degree']:g}" if st.get("degree") is not None else (
        f" {st['bucket_mb']:g} MiB" if st.get("bucket_mb") is not None else "")
    return f"{st['name']}{size}" + ("" if st["name"] == "none" else f" ({rec.scheme})")


def strategy_plot(records: Sequence, title: str, fmt: str = "png") -> bytes:
    """`strategy_figure` as image bytes in `fmt`."""
    return _image(strategy_figure(records, title), fmt)


def strategy_figure(records: Sequence, title: str) -> Any:
    """Samples/s and tensor missing rate per strategy, one series per GPU count; with several fusion
    degrees, both against the degree (behind and none as lines, the other strategies as levels, each
    line and level its own (colour, marker or line style)); the legend below the panels."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from zensim.report.plots import series_styles
    runs = [r for r in records if r.strategy]
    gpus = sorted({r.gpus for r in runs})
    degrees = sorted({r.strategy["degree"] for r in runs if r.strategy.get("degree") is not None})
    fig, (ax, ax_m) = plt.subplots(1, 2, figsize=(12, 4.5))
    if len(degrees) > 1:
        swept = [r for r in runs if r.strategy.get("degree") is not None]
        keys = list(dict.fromkeys((r.gpus, r.strategy["name"], r.scheme) for r in swept))
        levels = [r for r in runs if r.strategy.get("degree") is None]
        styles = series_styles(len(keys) + len(levels))
        for key, (colour, marker) in zip(keys, styles):
            line = sorted((r.strategy["degree"], r.samples_per_s, r.strategy["missing_rate"] or 0.0)
                          for r in swept if (r.gpus, r.strategy["name"], r.scheme) == key)
            label = f"{key[1]}" + ("" if key[1] == "none" else f" ({key[2]})") + f", {key[0]} GPUs"
            ax.plot([100 * d for d, _, _ in line], [v for _, v, _ in line], color=colour, marker=marker, label=label)
            ax_m.plot([100 * d for d, _, _ in line], [100 * m for _, _, m in line], color=colour, marker=marker,
                      label=label)
        for k, (r, (colour, _)) in enumerate(zip(levels, styles[len(keys):])):
            ax.axhline(r.samples_per_s, ls=("--", "-.", ":")[k % 3], lw=1, color=colour,
                       label=f"{strategy_label(r)}, {r.gpus} GPUs")
        ax.set_xlabel("fusion degree (% of the model's bytes per bucket)")
        ax_m.set_xlabel("fusion degree (%)")
    else:
        labels = list(dict.fromkeys(strategy_label(r) for r in runs))
        width = 0.8 / max(1, len(gpus))
        for k, (g, (colour, _)) in enumerate(zip(gpus, series_styles(len(gpus)))):
            by = {strategy_label(r): r for r in runs if r.gpus == g}
            x = np.arange(len(labels)) + width * k
            ax.bar(x, [by[lb].samples_per_s if lb in by else 0 for lb in labels], width=width, color=colour,
                   label=f"{g} GPUs")
            ax_m.bar(x, [100 * (by[lb].strategy.get("missing_rate") or 0) if lb in by else 0 for lb in labels],
                     width=width, color=colour, label=f"{g} GPUs")
        for a in (ax, ax_m):
            a.set_xticks(np.arange(len(labels)) + width * (len(gpus) - 1) / 2, labels, fontsize=7, rotation=20, ha="right")
    ax.set_ylabel("samples/s")
    ax_m.set_ylabel("tensor missing rate (%): tensors with no element selected / all")
    handles, names = ax.get_legend_handles_labels()
    fig.legend(handles, names, fontsize=6, ncol=3, loc="upper center", bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title, fontsize=9)
    return fig


def _image(fig, fmt: str) -> bytes:
    """The figure as image bytes in `fmt`; the figure is closed."""
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()
