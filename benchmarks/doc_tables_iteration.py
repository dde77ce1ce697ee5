"""docs/iteration.md's figure tables rendered from committed run records (benchmarks/doc_tables.py's registry).

The runs behind them take minutes (ZEN-size models: up to 8 min and 4.6 GB here at 2-8 machines, 8.4 GB
at 16), need network namespaces (the emulated DDP runs) or are timings of a shared machine, so a test
cannot re-run them; each was run once through `benchmarks/record_run.py`, which keeps the command's output with its
commit, machine, load, wall and CPU time and peak memory under docs/iteration-data/, and the page's table
is what these functions render from that record (tests/test_doc_tables.py). The tables of runs whose raw
output was never kept are rendered from docs/iteration-data/history.json, a dated transcription of the
page (labelled as such there).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from md_tables import markdown_table

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "iteration-data"
PAGE = "docs/iteration.md"
BASELINES = ("dense-allreduce", "sparcml", "omnireduce")
SCHEMES = (*BASELINES, "zen")
NICS = {"p3.16xlarge": "25 Gbps", "p3dn.24xlarge": "100 Gbps"}


def record(name: str) -> dict:
    """The committed record docs/iteration-data/NAME.json that benchmarks/record_run.py wrote."""
    return json.loads((DATA / f"{name}.json").read_text())


def zen_runs(*names: str) -> dict[tuple[str, str, int, str], dict]:
    """benchmarks/zen_figures.py --json rows of the records, by (model, preset, machines, scheme)."""
    return {(r["model"], r["preset"], r["gpus"] // 8, r["scheme"]): r
            for name in names for r in record(name)["output"]}


def _speedups(runs: dict, model: str, preset: str, machines: list[int], digits: int) -> list[str]:
    """ZEN's speedup over each baseline, 'a / b / ...' over the machine counts."""
    return [" / ".join(f"{runs[model, preset, m, s]['zen_speedup']:.{digits}f}" for m in machines) for s in BASELINES]


def _paper(model: str, preset: str) -> str:
    """ZEN's paper's speedups at 16 machines over dense / SparCML / OmniReduce ('-' where it gives none)."""
    from zen_figures import PAPER

    paper = PAPER.get((model, NICS[preset].replace(" ", "")), {})
    return " / ".join(f"{paper[s]:g}" if s in paper else "-" for s in BASELINES)


def _iteration_ms(runs: dict, model: str, preset: str, machines: int) -> str:
    """Iteration ms of dense / SparCML / OmniReduce / ZEN."""
    return " / ".join(f"{runs[model, preset, machines, s]['iteration_ms']:.4g}" for s in SCHEMES)


def zen_figures_cc6f0e3() -> list[str]:
    """The shipped traces' speedups at 2-16 machines as benchmarks/zen_figures.py gave them at cc6f0e3 (after
    OmniReduce's block-grid fix, under the former placeholder work costs), re-run at that commit."""
    runs, machines = zen_runs("zen-figures-cc6f0e3"), [2, 4, 8, 16]
    return markdown_table(["model, machine", "over dense", "over SparCML", "over OmniReduce"],
                          [[f"{model}, {preset}", *_speedups(runs, model, preset, machines, 3)]
                           for model in ("LSTM", "DeepFM") for preset in NICS])


def zen_size_deepfm() -> list[str]:
    """ZEN-size DeepFM at scale 0.25, our captured overlap and ZEN's densification, 2-16 machines."""
    runs = {"overlap 0.40": zen_runs("zen-size-0.25"), "ZEN's γ^8 = 1.86": zen_runs("zen-size-0.25-deepfm-gamma")}
    return markdown_table(
        ["DeepFM, rows x 0.25", "over dense", "over SparCML", "over OmniReduce",
         "iteration ms at 16 x 8: dense / SparCML / OmniReduce / ZEN"],
        [[f"{label}, {nic}", *_speedups(r, "DeepFM", preset, [2, 4, 8, 16], 3), _iteration_ms(r, "DeepFM", preset, 16)]
         for label, r in runs.items() for preset, nic in NICS.items()])


def zen_size_gap() -> list[str]:
    """benchmarks/zen_gap.py on the two ZEN-size DeepFM traces (scale 0.25): the embedding bucket alone, push and
    pull as the busiest NIC's MB (max / mean); a looked-up row is a block there, so the union's density is the
    fraction of blocks hit."""
    names = {"omnireduce": "OmniReduce", "zen": "ZEN"}
    rows = []
    for label, name in (("overlap 0.40", "zen-gap-zen-size-o0.4"), ("ZEN's γ^8 = 1.86", "zen-gap-zen-size-gamma")):
        recs = {(r["machines"], r["scheme"]): r for r in record(name)["output"]}
        for m in sorted({m for m, _ in recs}):
            cells = []
            for scheme in names:
                r = recs[m, scheme]
                push, pull = (f"{st['busiest_kb'] / 1e3:.1f} ({st['imbalance']:.2f})" for st in r["stages"])
                cells.append(f"{r['sync_ms']:.1f}, {push}, {pull}")
            union, blocks = recs[m, "omnireduce"]["union"], recs[m, "omnireduce"]["blocks"]
            if f"{union:.3f}" != f"{blocks:.3f}":
                raise SystemExit(f"doc_tables: {name}: union {union:.3f} and blocks {blocks:.3f} differ at {m} "
                                 "machines: the page's merged column no longer fits")
            rows.append([label, m, *cells, f"{union:.3f}"])
    return markdown_table(["trace", "machines", "OmniReduce: sync ms, push, pull", "ZEN: sync ms, push, pull",
                           "union = blocks"], rows)


def zen_size_scaled() -> list[str]:
    """Both ZEN-size models at scale 0.25, 2-16 machines, beside the paper's speedups at 16."""
    runs = zen_runs("zen-size-0.25")
    return markdown_table(
        ["model, machine", "over dense", "over SparCML", "over OmniReduce",
         "ZEN's paper at 16 (dense / SparCML / OmniReduce)"],
        [[f"{model}, {preset} {nic}", *_speedups(runs, model, preset, [2, 4, 8, 16], 2), _paper(model, preset)]
         for model in ("LSTM", "DeepFM") for preset, nic in NICS.items()])


# the scale-1 runs at 2-16 machines, one record per benchmarks/zen_figures.py command (the 16 machines alone: 8.4 GB)
ZEN_SIZE_1 = ("zen-size-1-m2-4", "zen-size-1-m8", "zen-size-1-m16")


def _samples(runs: dict, model: str, preset: str, machines: int) -> str:
    """Samples/s of dense / SparCML / OmniReduce / ZEN in thousands (three digits)."""
    return " / ".join(f"{runs[model, preset, machines, s]['samples_per_s'] / 1e3:.3g}k" for s in SCHEMES)


def zen_size_16() -> list[str]:
    """Both ZEN-size models at scale 1 and 16 machines (docs/iteration-data/zen-size-1-m16.json): samples/s,
    iteration ms and ZEN's speedups, beside the paper's."""
    runs = zen_runs("zen-size-1-m16")
    compute = " / ".join(f"{runs[model, 'p3.16xlarge', 16, 'zen']['compute_ms']:.1f}" for model in ("LSTM", "DeepFM"))
    return markdown_table(
        ["model", "machine", "samples/s: dense / SparCML / OmniReduce / ZEN", f"iteration ms (compute {compute})",
         "ZEN over dense / SparCML / OmniReduce", "ZEN's paper"],
        [[model, f"{preset}, {nic}", _samples(runs, model, preset, 16), _iteration_ms(runs, model, preset, 16),
          " / ".join(_speedups(runs, model, preset, [16], 2)), _paper(model, preset)]
         for model in ("LSTM", "DeepFM") for preset, nic in NICS.items()])


def zen_size_machines() -> list[str]:
    """Both ZEN-size models at scale 1 against the machine count (the ZEN_SIZE_1 runs), beside the paper's
    speedups at 16 machines."""
    runs = zen_runs(*ZEN_SIZE_1)
    machines = sorted({m for _, _, m, _ in runs})
    return markdown_table(
        ["model, machine", "over dense", "over SparCML", "over OmniReduce", "ZEN's paper at 16"],
        [[f"{model}, {preset} {nic}", *_speedups(runs, model, preset, machines, 2), _paper(model, preset)]
         for model in ("LSTM", "DeepFM") for preset, nic in NICS.items()])


def emulated() -> list[str]:
    """benchmarks/iteration_vs_emulation.py --json at 25 and 0.25 MiB buckets: the real DDP run on emulated
    ranks against the timeline's prediction."""
    rows = []
    for name in ("emulated-b25", "emulated-b0.25"):
        run = record(name)["output"]
        m, (fifo, maxmin) = run["measured"], run["predictions"]
        n = fifo["buckets"]
        predicted = f"{fifo['iteration_s'] * 1e3:.1f} ms" if fifo["iteration_s"] == maxmin["iteration_s"] else \
            f"{fifo['iteration_s'] * 1e3:.1f} / {maxmin['iteration_s'] * 1e3:.1f} ms"
        errors = " / ".join(dict.fromkeys(f"{p['error']:+.1%}" for p in (fifo, maxmin)))
        rows.append([f"{run['settings']['bucket_mb']:g} MiB: {n} bucket{'s' * (n > 1)}",
                     " / ".join(f"{run['profile_ms'][k]:.1f}" for k in ("forward", "backward", "optimizer")),
                     f"{m['median_s'] * 1e3:.1f} ms ({m['min_s'] * 1e3:.1f} - {m['max_s'] * 1e3:.1f})",
                     predicted, errors])
    return markdown_table(["DDP buckets", "profile here: forward / backward / optimizer ms",
                           "measured median (min - max)", "predicted: fifo / maxmin (one where equal)", "error"], rows)


def history(name: str) -> list[str]:
    """A table of docs/iteration-data/history.json (transcribed from the page: the raw output was not kept)."""
    table = json.loads((DATA / "history.json").read_text())["tables"][name]
    return markdown_table(table["headers"], table["rows"])


def _speed_runs(name: str) -> dict[tuple[str, str, str], dict]:
    """benchmarks/iteration.py --json runs of a record, by (scheme, model, dense algorithm)."""
    return {(r["scheme"], r["model"], r["dense_algorithm"]): r for r in record(name)["output"]["runs"]}


def _same(values: list) -> str:
    """One value if all agree, else 'a / b / ...'."""
    return values[0] if len(set(values)) == 1 else " / ".join(values)


def speed_dense_algorithms() -> list[str]:
    """benchmarks/iteration.py --dense-algorithms ring,auto: the tuner's choice against the ring forced."""
    runs = _speed_runs("speed-dense-algorithms")
    return markdown_table(["scheme", "model", "dense", "iteration ms", "events", "wall s", "CPU s", "peak RSS MB"],
                          [[s, m, d, f"{r['iteration_ms']:.1f}", f"{r['events']:,}", f"{r['wall_s']:.2f}",
                            f"{r['cpu_s']:.2f}", f"{r['peak_rss_mb']:.0f}"] for (s, m, d), r in runs.items()])


# the timeline compiled (618a697) against the commit before it (1a4be60) and the code now, back to back
SPEED_RECORDS = ("speed-1a4be60", "speed-618a697", "speed-now")


def speed_compiled() -> list[str]:
    """benchmarks/iteration.py at 1a4be60, 618a697 and now, back to back: wall, CPU and memory of each, and
    the CPU time of the first over each other."""
    runs = {record(name)["commit"][:7]: _speed_runs(name) for name in SPEED_RECORDS}
    first, rows = next(iter(runs.values())), []
    for key in first:
        rs = [r[key] for r in runs.values()]
        cpu = [r["cpu_s"] for r in rs]
        rows.append([key[0], key[1], _same([f"{r['iteration_ms']:.1f}" for r in rs]),
                     _same([f"{r['events']:,}" for r in rs]), " / ".join(f"{r['wall_s']:.2f}" for r in rs),
                     " / ".join(f"{c:.2f}" for c in cpu), " / ".join(f"{cpu[0] / c:.1f}x" for c in cpu[1:]),
                     " / ".join(f"{r['peak_rss_mb']:.0f}" for r in rs)])
    commits = list(runs)
    labels = " / ".join(commits)
    return markdown_table(["scheme", "model", f"iteration ms {labels}", f"events {labels}", f"wall s {labels}",
                           f"CPU s {labels}", f"CPU s of {commits[0]} over {labels.split(' / ', 1)[1]}",
                           f"peak RSS MB {labels}"], rows)


TABLES: dict[str, tuple[str, Callable[[], list[str]]]] = {
    "zen-fig11-12-cc6f0e3": (PAGE, zen_figures_cc6f0e3),
    "zen-size-deepfm": (PAGE, zen_size_deepfm),
    "zen-size-gap": (PAGE, zen_size_gap),
    "zen-size-scaled": (PAGE, zen_size_scaled),
    "zen-size-16": (PAGE, zen_size_16),
    "zen-size-machines": (PAGE, zen_size_machines),
    "emulated": (PAGE, emulated),
    "emulated-first-run": (PAGE, lambda: history("emulated-first-run")),
    "emulated-e1bdaf1": (PAGE, lambda: history("emulated-e1bdaf1")),
    "speed-first-run": (PAGE, lambda: history("speed-first-run")),
    "speed-c784ebe": (PAGE, lambda: history("speed-c784ebe")),
    "speed-dense-algorithms": (PAGE, speed_dense_algorithms),
    "speed-compiled": (PAGE, speed_compiled),
}
