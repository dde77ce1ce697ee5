"""ZEN Fig. 8 on the shipped LSTM trace under several local-work models: docs/results.md's tables.

Time of each scheme normalized to a dense ring all-reduce on the same cluster and work model
(`RunRecord.vs_dense`), one GPU per machine at 8 ... 128 machines and 16 x 8 GPUs in ZEN's layout,
25 Gbps NICs on a non-blocking switch, no latency, for each network model (maxmin, fifo) and each
local-work model:

- `zero`: local work free (communication only, the closed forms' model);
- `default`: the simulator's default work model, what it uses without a profile
  (zensim.net.profile.DEFAULT_PROFILE: per element the schemes' step code measured on an H200 with
  payloads on the device, per piece one kernel launch and synchronization measured there; the
  kinds it could not measure priced from the nearest measured one);
- `cpu-steps`: a profile fitted to `zensim work measure --kernels steps` (the schemes' own numpy
  step code, timed on a CPU; default docs/results-data/cpu-steps.profile.json);
- `h200-steps`: the same step code in torch, timed on an H200 GPU (`--kernels steps --device cuda`;
  docs/results-data/h200-steps.profile.json).

Then Kendall's tau-b (scipy.stats.kendalltau) between the schemes' rankings under each pair of work
models, per column and overall (the schemes ranked by the geometric mean of their normalized times
over the columns), and, at one column, the busiest rank's local work by kind under each model.
Each scheme's driver runs once per cluster shape (a message-log cache); the work models only
change the replays.

    .venv/bin/python benchmarks/fig8.py [--profile P.json] [--columns 8x1,...] [--models maxmin,fifo]
        [--work zero,default,cpu-steps,h200-steps] [--kinds-column 128x1] [--json FILE] [--plot FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

from zensim.net.costs import Costs
from zensim.net.profile import DEFAULT_PROFILE, WorkCost, load_profile
from zensim.net.replay import piece_seconds
from zensim.run import MessageLog
from zensim.sim.cluster import build_cluster
from zensim.sim.logcache import LogCache
from zensim.sim.run import simulate

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "traces" / "lstm-lm-128w.zt"
PROFILE = ROOT / "docs" / "results-data" / "cpu-steps.profile.json"
GPU_PROFILE = ROOT / "docs" / "results-data" / "h200-steps.profile.json"
COLUMNS = ("8x1", "16x1", "32x1", "64x1", "128x1", "16x8")
NETWORK_MODELS = ("maxmin", "fifo")
SCHEMES = ("dense-allreduce", "agsparse-ring", "agsparse-p2p", "sparcml", "sparse-ps", "omnireduce", "zen-coo",
           "zen", "hier-central", "zen-auto")
LINKS = {"nic": "25Gbps", "nic_latency": "0us", "nvlink_latency": "0us"}


@dataclass(frozen=True)
class WorkModel:
    """A named local-work model: its costs and the sentence that says where they come from."""

    name: str
    cost: WorkCost
    source: str


WORK_MODELS = ("zero", "default", "cpu-steps", "h200-steps")


def work_model(name: str, profile: str | Path = PROFILE, gpu_profile: str | Path = GPU_PROFILE) -> WorkModel:
    """The work model `name` (WORK_MODELS); `profile` is read for cpu-steps, `gpu_profile` for h200-steps."""
    if name == "zero":
        return WorkModel(name, WorkCost.zero(), "no local work: communication only")
    if name == "default":
        cost = WorkCost.default()
        return WorkModel(name, cost, "the simulator's default, measured on an H200: per element the step code with "
                         f"payloads on the device, per piece one kernel launch + sync ({cost.fixed['copy'] * 1e6:.1f} us), "
                         f"{_shown(DEFAULT_PROFILE)}")
    if name == "cpu-steps":
        return WorkModel(name, load_profile(profile).work,
                         f"measured on a CPU: the schemes' own numpy step code, {_shown(profile)}")
    if name == "h200-steps":
        return WorkModel(name, load_profile(gpu_profile).work,
                         f"measured on an H200: the same step code in torch on the GPU, {_shown(gpu_profile)}")
    raise ValueError(f"unknown work model {name!r} (known: {', '.join(WORK_MODELS)})")


def _shown(path: str | Path) -> str:
    """`path` relative to the repository when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def cluster_shape(column: str) -> tuple[int, int]:
    """'16x8' -> (16 machines, 8 GPUs per machine)."""
    machines, gpus = column.split("x")
    return int(machines), int(gpus)


def run_column(column: str, model: str, work: WorkCost, schemes: Sequence[str] = SCHEMES,
               trace: str | Path = TRACE, cache: LogCache | None = None) -> dict:
    """One column of a table: the dense ring's seconds (`dense_s`), each scheme's time over it
    (`ratios`) and each scheme's message log (`logs`)."""
    machines, gpus = cluster_shape(column)
    cluster, _ = build_cluster(machines, gpus, **LINKS)
    records = simulate(trace, list(schemes), Costs(cluster, work), model, cache=cache)
    return {"dense_s": records[0].time_s / records[0].vs_dense, "ratios": {r.scheme: r.vs_dense for r in records},
            "logs": {r.scheme: r.simulated.log for r in records}}


def busiest_work(log: MessageLog, work: WorkCost) -> tuple[float, dict[str, float]]:
    """Seconds of local work of the rank with the most, and that rank's seconds by work kind (each
    piece priced as the replay prices it, zensim.net.replay.piece_seconds)."""
    cols = log.work_arrays()
    kind, seconds = cols["kind"], piece_seconds(log, work)
    rank = int(np.argmax(np.bincount(cols["rank"], weights=seconds, minlength=log.n)))
    mine = cols["rank"] == rank
    by_kind = np.bincount(kind[mine], weights=seconds[mine], minlength=len(log.kind_names))
    return float(by_kind.sum()), {name: float(s) for name, s in zip(log.kind_names, by_kind) if s > 0}


def ranking_tau(a: dict[str, float], b: dict[str, float]) -> float:
    """Kendall's tau-b between two rankings of the same schemes by their values."""
    names = sorted(a)
    return float(kendalltau([a[s] for s in names], [b[s] for s in names]).statistic)


def geometric_means(ratios: dict[str, dict[str, float]]) -> dict[str, float]:
    """Per scheme, the geometric mean of its normalized times over the columns (`ratios[column][scheme]`)."""
    schemes = next(iter(ratios.values()))
    return {s: math.exp(sum(math.log(ratios[c][s]) for c in ratios) / len(ratios)) for s in schemes}


def figure(models: dict[str, WorkModel], columns: Sequence[str] = COLUMNS,
           network_models: Sequence[str] = NETWORK_MODELS, schemes: Sequence[str] = SCHEMES,
           kinds_column: str | None = "128x1", trace: str | Path = TRACE) -> dict:
    """Every table: dense seconds and ratios per (network model, work model, column), Kendall's tau per
    network model and pair of work models (per column and overall), and the busiest rank's work by
    kind at `kinds_column` (maxmin's logs; the same logs for every network model)."""
    out: dict = {"trace": _shown(trace),
                 "columns": list(columns), "schemes": list(schemes), "links": LINKS,
                 "work_models": {m.name: m.source for m in models.values()}, "tables": {}, "kendall": {}, "work": {}}
    with tempfile.TemporaryDirectory() as folder:
        cache = LogCache(folder)
        for net, (name, wm) in itertools.product(network_models, models.items()):
            table = out["tables"].setdefault(net, {})[name] = {"dense_ms": {}, "ratios": {}}
            for column in columns:
                col = run_column(column, net, wm.cost, schemes, trace, cache)
                table["dense_ms"][column] = col["dense_s"] * 1e3
                table["ratios"][column] = col["ratios"]
                if column == kinds_column and net == network_models[0]:
                    for scheme, log in col["logs"].items():
                        total, by_kind = busiest_work(log, wm.cost)
                        out["work"].setdefault(name, {})[scheme] = {
                            "total_ms": total * 1e3, "by_kind_ms": {k: v * 1e3 for k, v in by_kind.items()}}
    for net, tables in out["tables"].items():
        for a, b in itertools.combinations(tables, 2):
            ra, rb = tables[a]["ratios"], tables[b]["ratios"]
            taus = {c: ranking_tau(ra[c], rb[c]) for c in columns}
            taus["overall"] = ranking_tau(geometric_means(ra), geometric_means(rb))
            out["kendall"].setdefault(net, {})[f"{a} vs {b}"] = taus
    return out


def cell(value: float) -> str:
    """A figure as the tables print it (three decimals)."""
    return f"{value:.3f}"


def table_title(network_model: str, work: str) -> str:
    """The bold line that names a table's network and work model on the page."""
    return f"**{network_model}, local work: {work}**"


def _table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table under a title line: the first column text, the others right-aligned."""
    lines = ["| " + " | ".join(headers) + " |", "|---|" + "---:|" * (len(headers) - 1)]
    return f"{title}\n\n" + "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _work_cell(entry: dict) -> str:
    """'total (largest kind share%)' of one busiest-rank entry (just the total without work)."""
    top = max(entry["by_kind_ms"].items(), key=lambda kv: kv[1], default=None)
    return cell(entry["total_ms"]) + (f" ({top[0]} {top[1] / entry['total_ms']:.0%})" if top else "")


def markdown(fig: dict) -> str:
    """The tables as docs/results.md prints them: one per network model and work model, the work
    model named on each; the Kendall tau tables; the busiest rank's work by kind."""
    cols, schemes = fig["columns"], fig["schemes"]
    parts = []
    for net, tables in fig["tables"].items():
        for name, table in tables.items():
            rows = [["dense all-reduce, ms", *(cell(table["dense_ms"][c]) for c in cols)]]
            rows += [[s, *(cell(table["ratios"][c][s]) for c in cols)] for s in schemes]
            parts.append(_table(f"{table_title(net, name)} ({fig['work_models'][name]})", ["scheme", *cols], rows))
    for net, pairs in fig["kendall"].items():
        rows = [[pair, *(cell(taus[c]) for c in [*cols, "overall"])] for pair, taus in pairs.items()]
        parts.append(_table(f"**Kendall's tau-b between the rankings, {net}**", ["work models", *cols, "overall"],
                            rows))
    if fig["work"]:
        rows = [[s, *(_work_cell(fig["work"][name][s]) for name in fig["work"])] for s in schemes]
        parts.append(_table("**The busiest rank's local work, ms (its largest kind and share)**",
                            ["scheme", *fig["work"]], rows))
    return "\n\n".join(parts) + "\n"


def plot(fig: dict, path: str | Path, network_model: str = "maxmin") -> None:
    """Write `path`: one panel per work model, each scheme's time / dense against the GPU count over the
    one-GPU-per-machine columns (log-log), `network_model`'s tables."""
    import matplotlib.pyplot as plt

    from zensim.report.plots import save_figure, series_styles

    tables = fig["tables"][network_model]
    cols = [c for c in fig["columns"] if cluster_shape(c)[1] == 1]
    gpus = [cluster_shape(c)[0] for c in cols]
    figure_, axes = plt.subplots(1, len(tables), figsize=(5.5 * len(tables), 4.5), sharey=True, squeeze=False)
    for ax, (name, table) in zip(axes[0], tables.items()):
        for scheme, (colour, marker) in zip(fig["schemes"], series_styles(len(fig["schemes"]))):
            ax.plot(gpus, [table["ratios"][c][scheme] for c in cols], color=colour, marker=marker, label=scheme)
        ax.axhline(1.0, color="black", lw=1, ls="--")
        ax.set(yscale="log", xlabel="GPUs (1 per machine)", title=f"local work: {name}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(gpus, [str(g) for g in gpus])
    axes[0][0].set_ylabel("time / dense ring all-reduce")
    axes[0][0].legend(fontsize=7, ncol=2)
    figure_.suptitle(f"{Path(fig['trace']).name}, 25 Gbps, no latency, {network_model}", fontsize=9)
    save_figure(figure_, path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the figure; print its markdown, and write its JSON (--json) and plot (--plot)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default=str(PROFILE), help="the cpu-steps work profile (zensim-profile/1)")
    p.add_argument("--columns", default=",".join(COLUMNS), help="MACHINESxGPUS,... (default: Fig. 8's six)")
    p.add_argument("--models", default=",".join(NETWORK_MODELS), help="network models (default maxmin,fifo)")
    p.add_argument("--work", default=",".join(WORK_MODELS), help="work models, in order (default all four)")
    p.add_argument("--kinds-column", default="128x1", help="the column of the work-by-kind table ('' for none)")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="also plot maxmin's tables (else the first model's) to FILE (.png, .svg, ...)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write every figure as JSON to FILE")
    args = p.parse_args(argv)
    chosen = {name: work_model(name, args.profile) for name in args.work.split(",")}
    fig = figure(chosen, args.columns.split(","), args.models.split(","), kinds_column=args.kinds_column or None)
    if args.plot:
        plot(fig, args.plot, "maxmin" if "maxmin" in fig["tables"] else next(iter(fig["tables"])))
    if args.json:
        Path(args.json).write_text(json.dumps(fig, indent=1) + "\n")
    print(markdown(fig), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
