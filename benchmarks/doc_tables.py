"""Figure tables of the pages made by scripts, so that no page can go stale by hand.

Each table follows a marker line on its page, `<!-- table NAME: benchmarks/doc_tables.py -->`, and is
the run of `|` lines after it; --write replaces that run with what the script computes now.
tests/test_doc_tables.py rebuilds every table named here and fails where a page differs.

    .venv/bin/python benchmarks/doc_tables.py [NAME ...]           # print the tables (default: all)
    .venv/bin/python benchmarks/doc_tables.py --write [NAME ...]   # rewrite them in their pages

Tables: shipped-traces (traces/README.md: every shipped trace's header, instant); zen-fig11-12,
zen-fig11-12-machines (docs/iteration.md: benchmarks/zen_figures.py's runs, about 13 s of CPU); zen-gap
(docs/iteration.md: benchmarks/zen_gap.py's terms, about 2 s); sparse-buckets (docs/iteration.md: the
hook's buckets at 25 Mbit/s, about 3 s); replay-density, replay-buildup (docs/replay.md: the replay
command shown there, at 16 and at 2-16 machines, about 10 s each); spardl-bsag (docs/replay.md: SparDL
with teams, about 5 s); zen-characteristics (docs/capture.md: `trace stats` of six shipped traces,
about 6 s); exdyna-claims-digits, -digits-warm, -wide-warm (docs/replay.md: window means of the
committed CSV files benchmarks/exdyna_claims.py writes; the test re-runs the shipped traces' two, 2 s);
ddp-script (docs/ddp.md: the committed emulated runs of benchmarks/ddp_script_vs_iteration.py against the
prediction, about 15 s); validation-errors (docs/validation.md: the committed `zensim validate --json`
records); exdyna-loop, exdyna-loop-partitions (docs/replay.md: the committed runs of
benchmarks/exdyna_loop.py, about 4 s); exdyna-claims-wide (docs/replay.md: window means of the committed
docs/exdyna-claims-wide.csv); trace-io (docs/trace-stats.md: the committed docs/trace-io.json of
benchmarks/trace_io.py --json); replay-loss (docs/replay.md: the committed --json of its `zensim converge`
command, docs/replay-loss.json.gz); roofline-h100 (docs/iteration.md: the committed
docs/iteration-data/roofline-h100.json of benchmarks/device_profiles.py --compare); replay-compare
(docs/replay.md: the committed docs/replay-compare/*.json of the page's benchmarks/replay.py --json runs).
Records of timed or emulated runs (re-measured under the locks, each with machine, load, commit and time):
replay-speed (docs/replay.md: docs/replay-speed/{spardl,exdyna}.json of benchmarks/replay.py --json);
replay-speed-history (docs/replay.md: a before/after pair of 2026-11-23, typed into
docs/replay-speed/history-select-scan.json: its output was not kept and its code is long replaced);
capture-speed, capture-virtual (docs/capture.md: docs/capture-data/{speed,virtual-ranks}.json of
benchmarks/capture.py --json and benchmarks/capture_virtual.py --json); ddp-hooks (docs/ddp.md:
docs/ddp-data/hooks.json of benchmarks/ddp_hooks.py, emulated); validation-runs (docs/validation.md: the
two 16-rank `zensim validate` runs' records of benchmarks/record_run.py --lock and their sampled load).
Records of runs too long for a test:
maxmin-bound (docs/simulator.md: docs/simulator-data/bound.json, benchmarks/simulate.py --scale --exact
--json runs of the default maxmin mode against exact max-min); growth-final, growth-exponents,
growth-local, growth-local-exponents, growth-sorts, growth-sorts-exponents, growth-lazy,
growth-lazy-exponents, growth-route, growth-route-exponents, growth-hold, growth-hold-exponents, growth-issue,
growth-issue-exponents (docs/simulator.md: docs/simulator-data/growth-final.json, growth-local.json,
growth-sorts.json, growth-lazy.json, growth-route.json, growth-hold.json and growth-issue.json, benchmarks/growth.py
--vs --json runs);
fusion-gemini (docs/fusion.md: docs/fusion-data/gemini.json of benchmarks/fusion.py gemini);
fusion-strategies, fusion-degrees (docs/fusion.md: docs/fusion-data/timeline-*.json.gz, the --json of the page's
`zensim iteration --strategy` runs on a 128-worker capture that is not shipped);
trace-scale-heldout (docs/trace-scale.md: docs/trace-scale-heldout.json.gz of benchmarks/trace_scale.py
--json); exdyna-diagnostics (docs/replay.md: the committed docs/exdyna-diagnostics/*.csv of
benchmarks/exdyna_claims.py with --permute 0 / --equalize on the wide model's warm capture, not shipped);
replay-exdyna-gpt (docs/replay.md: docs/replay-exdyna-gpt.csv.gz, the page's `zensim simulate --csv` on a
16-worker gpt-topk capture, not shipped). Tables typed from runs whose output is not committed carry a line
`<!-- typed table: WHAT PRODUCED IT; ... -->` instead.
(docs/results.md's Fig. 8 tables come from benchmarks/fig8.py, docs/claims.md from benchmarks/claims.py.)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from md_tables import markdown_table  # noqa: E402
from doc_tables_iteration import TABLES as ITERATION_TABLES  # docs/iteration.md's recorded runs  # noqa: E402


def marker(name: str) -> str:
    """The line that precedes table `name` on its page."""
    return f"<!-- table {name}: benchmarks/doc_tables.py -->"


def shipped_traces() -> list[str]:
    """traces/*.zt: file size, workers, iterations, recorded tensors and elements, values (dense or not),
    read from each file's header."""
    from zensim.trace.format import Trace

    rows = []
    for path in sorted((ROOT / "traces").glob("*.zt")):
        with Trace.open(path) as t:
            numel = sum(s.numel for s in t.tensors)
            values = t.value_dtype or "none"
            rows.append([path.name, f"{path.stat().st_size:,}", t.workers, t.iterations,
                         f"{len(t.tensors)} ({numel:,} elements)", f"{values}, **dense**" if t.is_dense else values])
    return markdown_table(["file", "bytes", "workers", "iterations", "recorded tensors", "values"], rows)


def zen_fig11_12() -> list[str]:
    """docs/iteration.md, Against ZEN's Fig. 11-12: ZEN's speedups at 16 machines (zen_figures.py)."""
    from zen_figures import page_tables

    return page_tables()[0]


def zen_fig11_12_machines() -> list[str]:
    """docs/iteration.md: ZEN's speedups against the machine count (zen_figures.py)."""
    from zen_figures import page_tables

    return page_tables()[1]


# docs/replay.md, Density per iteration: the command shown there (without its --plot and --csv)
REPLAY_DENSITY = ["simulate", "--trace", str(ROOT / "traces" / "digits-cnn-16w.zt"), "--iterations", "0:50",
                  "--machines", "16", "--nic", "10Gbps", "--nic-latency", "20us", "--scheme",
                  "dense-allreduce,topka,topka+dgc,topkdsa,gtopk,spardl,exdyna,exdyna+exdyna-static,exdyna+cltk,"
                  "exdyna+threshold,oktopk,oktopk+topk"]
REPLAY_NOTES = {"dense-allreduce": ("", " (explicit zeros dropped)"), "topka": (" (top-k + all-gather)", "")}


def _sig(value: float) -> str:
    """Three significant digits, trailing zeros kept (1.10); whole numbers and zero as integers."""
    return str(int(value)) if value == int(value) else f"{value:#.3g}"


def _tiny(value: float) -> str:
    """Two significant digits in e-notation without the exponent's leading zero (2.4e-7), or 0."""
    return "0" if value == 0 else f"{value:.2g}".replace("e-0", "e-")


def _json_of(argv: list[str]):
    """The --json document a zensim command prints."""
    import contextlib
    import io
    import json

    from zensim.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())


def _replay_summary(argv: list[str]) -> list[dict]:
    """The per-method summary of a `zensim simulate --iterations` command (its --json document)."""
    return _json_of(argv)["summary"]


def _with(argv: list[str], option: str, value: str) -> list[str]:
    """`argv` with `option`'s value replaced."""
    at = argv.index(option)
    return [*argv[:at + 1], value, *argv[at + 2:]]


def replay_density() -> list[str]:
    """docs/replay.md: density, f(t) and errors of every method over 50 iterations of the shipped dense
    trace (REPLAY_DENSITY, about 10 s of CPU)."""
    rows = []
    for s in _replay_summary(REPLAY_DENSITY):
        name, density = REPLAY_NOTES.get(s["method"], ("", ""))
        rows.append([s["method"] + name, f"{s['actual_density_mean']:#.3g}{density}", f"{s['actual_density_p50']:#.3g}",
                     f"{s['actual_density_p99']:#.3g}", _sig(s["padding_mean"]), _sig(s["global_error_mean"]),
                     _tiny(s["conservation_p99"])])
    return markdown_table(["method", "d' mean", "d' p50", "d' p99", "f(t) mean", "global error", "kept error p99"],
                          rows)


def replay_buildup() -> list[str]:
    """docs/replay.md: the mean density d' against the worker count n (REPLAY_DENSITY at 2-16 machines, four
    methods; about 10 s of CPU)."""
    methods = ["topka", "spardl", "exdyna", "exdyna+cltk"]
    rows = []
    for n in (2, 4, 8, 16):
        summary = _replay_summary(_with(_with(REPLAY_DENSITY, "--machines", str(n)), "--scheme", ",".join(methods)))
        rows.append([n, *(f"{s['actual_density_mean']:#.3g}" for s in summary)])
    return markdown_table(["n", *methods], rows)


def replay_loss() -> list[str]:
    """docs/replay.md, loss against simulated wall-clock: the summary of the committed
    docs/replay-loss.json.gz, the `--json` document of the page's `zensim converge` command."""
    import gzip
    import json

    with gzip.open(ROOT / "docs" / "replay-loss.json.gz", "rt") as f:
        summary = json.load(f)["summary"]
    return markdown_table(["method", "loss (last 10)", "test loss", "test accuracy", "d' mean", "sync s mean", "clock s"],
                          [[s["method"], f"{s['final_loss']:.3f}", f"{s['test_loss']:.3f}", f"{s['test_accuracy']:.3f}",
                            f"{s['density_mean']:.3f}", f"{s['sync_s_mean']:.1e}".replace("e-0", "e-"),
                            f"{s['clock_s']:.3f}"] for s in summary])


# docs/replay.md's comparison at 14 workers: (label, committed run docs/replay-compare/NAME.json, method, the
# run whose SparDL row divides the time, the paper's figure); each run is one of the page's commands
REPLAY_COMPARE = [("spardl (d = 1)", "compare", "spardl", "compare", ""),
                  ("spardl, B-SAG d = 7", "bsag7", "spardl", "compare",
                   "(Fig. 13-14: B-SAG d = 7 the fastest d at 14 workers, 1.25x in training time)"),
                  ("topka", "compare", "topka", "compare", "PAPER_TOPKA"),
                  ("topkdsa", "compare", "topkdsa", "compare", "PAPER_TOPKDSA"),
                  ("gtopk", "compare", "gtopk", "compare", "(not in Fig. 8)"),
                  ("oktopk, iterations 0-4", "oktopk", "oktopk", "oktopk", "PAPER_OKTOPK"),
                  ("oktopk+topk, iterations 0-4", "oktopk", "oktopk+topk", "oktopk", ""),
                  ("oktopk, iterations 32-63 of 64", "oktopk-64", "oktopk", "oktopk-64", ""),
                  ("oktopk+topk, iterations 32-63 of 64", "oktopk-topk-64", "oktopk+topk", "oktopk-topk-64", ""),
                  ("oktopk, 32-63, regions every iteration", "oktopk-repartition", "oktopk", "oktopk-64", ""),
                  ("oktopk+topk, 32-63, regions every iteration", "oktopk-repartition", "oktopk+topk", "oktopk-64", "")]


def replay_compare() -> list[str]:
    """docs/replay.md: simulated communication time of SparDL, TopkA, TopkDSA, gTop-k and Ok-Topk at 14 workers
    against SparDL's, from the committed docs/replay-compare/*.json that the page's `benchmarks/replay.py
    --compare ... --json FILE` commands wrote (about 3 min of CPU in all), beside SparDL's paper's ratios."""
    import json

    import replay

    runs = {name: {r["method"]: r for r in json.loads((ROOT / "docs" / "replay-compare" / f"{name}.json")
                                                      .read_text())["rows"]}
            for name in {run for _, run, _, base, _ in REPLAY_COMPARE} | {base for *_, base, _ in REPLAY_COMPARE}}

    def ratio(x: float) -> str:
        return "1" if x == 1 else f"{x:.1f}" if x >= 1 else f"{x:.2f}"

    def paper(cell: str) -> str:
        if not cell.startswith("PAPER_"):
            return cell
        speedups = getattr(replay, cell).values()
        return f"{min(speedups)}x - {max(speedups)}x"

    rows = []
    for label, run, method, base, cell in REPLAY_COMPARE:
        r = runs[run][method]
        rows.append([label, f"{r['time_s_mean']:.3g}", f"{r['bytes_mean']:.2e}".replace("e+0", "e"),
                     f"{r['actual_density_mean']:.4f}", ratio(r["time_s_mean"] / runs[base]["spardl"]["time_s_mean"]),
                     paper(cell)])
    return markdown_table(["method", "simulated s / iteration", "bytes / iteration (all ranks)", "d' mean",
                           "/ SparDL's time", "paper: SparDL faster by (Fig. 8)"], rows)


# docs/iteration.md's roofline table: its rows' order and labels
ROOFLINE_ROWS = {("gpt-topk-large", 16): "gpt-topk-large (114M params)", ("lstm-lm-large", 128): "lstm-lm-large",
                 ("deepfm-large", 4096): "deepfm-large", ("lstm-lm", 20): "lstm-lm", ("lstm-lm", 128): "lstm-lm",
                 ("deepfm", 256): "deepfm", ("deepfm", 1024): "deepfm", ("gpt-topk", 8): "gpt-topk"}


def roofline() -> list[str]:
    """docs/iteration.md: the H100 roofline estimate against the shipped measured profiles, from the committed
    docs/iteration-data/roofline-h100.json (`benchmarks/device_profiles.py --compare traces/layers --preset
    h100 --json ...`, about 2 min of CPU)."""
    import json

    rows = {(r["workload"], r["batch"]): r for r in
            json.loads((ROOT / "docs" / "iteration-data" / "roofline-h100.json").read_text())["rows"]}

    def ms(x: float) -> str:
        return f"{x:.4g}" if x >= 1 else f"{x:#.3g}"

    def gflop(x: float) -> str:
        return f"{x:.0f}" if x >= 100 else f"{x:.3g}" if x >= 10 else f"{x:.2g}"

    return markdown_table(
        ["workload", "batch", "measured ms", "estimate ms", "estimate / measured", "same, launch 0", "operators", "GFLOP"],
        [[label, batch, ms(r["measured ms"]), ms(r["estimate ms"]), f"{r['est/meas']:.2f}",
          f"{r['est/meas no launch']:.2g}", f"{r['operators']:.0f}", gflop(r["GFLOP"])]
         for (name, batch), label in ROOFLINE_ROWS.items() for r in [rows[name, batch]]])


def _seconds(value: float) -> str:
    """Three significant digits in e-notation without the exponent's leading zero (1.21e-4)."""
    return f"{value:.2e}".replace("e-0", "e-")


def spardl_bsag() -> list[str]:
    """docs/replay.md: SparDL's B-SAG (teams) against SparDL with one team at 12 and 16 workers
    (REPLAY_DENSITY's trace and network; about 5 s of CPU)."""
    rows = []
    for label, machines, options in (("12, d = 3 (B-SAG)", "12", '{"teams": 3}'),
                                     ("16, d = 4 (B-SAG forced)", "16", '{"teams": 4, "sag": "bsag"}')):
        argv = [*_with(_with(REPLAY_DENSITY, "--machines", machines), "--scheme", "spardl"), "--options"]
        (teams,), (one,) = _replay_summary([*argv, options]), _replay_summary([*argv, "{}"])
        rows.append([label, f"{teams['actual_density_mean']:#.3g}", f"{teams['actual_density_p99']:#.3g}",
                     _seconds(teams["time_s_mean"]), f"{teams['bytes_mean']:,.0f}",
                     f"{one['actual_density_mean']:#.3g}, {_seconds(one['time_s_mean'])}, {one['bytes_mean']:,.0f}"])
    return markdown_table(["workers, teams", "d' mean", "d' p99", "time s mean", "bytes mean",
                           "SparDL d = 1 at the same n: d', time, bytes"], rows)


EXDYNA_COLUMNS = {"k'/k": ".2f", "ratio": ".2f", "drift": ".3f", "grad drift": ".3f", "f dyn": ".2f",
                  "f static": ".2f", "f best": ".2f", "f lag": ".2f", "f poisson": ".2f", "f workers": ".2f",
                  "hit blocks": ".0f"}


def _float_rows(path: str) -> list[dict[str, float]]:
    """The rows of a committed all-numeric CSV under docs/, every value a float."""
    import csv

    with open(ROOT / "docs" / path, newline="") as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


def _window_means(rows: list[dict[str, float]], window: int, columns: dict[str, str],
                  mean: Callable[[list[dict[str, float]], str], float]) -> list[list[str]]:
    """One table row per `window` consecutive iterations: the span, then `mean(window, column)` of each
    column formatted with its spec."""
    return [[f"{w[0]['iteration']:.0f}-{w[-1]['iteration']:.0f}", *(format(mean(w, c), spec) for c, spec in columns.items())]
            for w in (rows[i:i + window] for i in range(0, len(rows), window))]


def exdyna_windows(name: str, window: int) -> list[str]:
    """docs/replay.md: window means of the committed per-iteration CSV docs/NAME.csv, which the
    page's `benchmarks/exdyna_claims.py ... --csv docs/NAME.csv` command writes (for the captures not
    shipped, the committed file is the record)."""
    from exdyna_claims import window_mean

    return markdown_table(
        ["iterations", "k'/k", "delta / delta*", "delta* drift / it", "fresh-gradient drift / it", "f dyn", "f static",
         "f best", "f lag", "f poisson", "f workers", "hit blocks"],
        _window_means(_float_rows(f"{name}.csv"), window, EXDYNA_COLUMNS, window_mean))


# docs/replay.md's diagnostics on the wide model's warm capture (made again on 2026-11-27): row label -> the
# committed CSV docs/exdyna-diagnostics/NAME.csv of `benchmarks/exdyna_claims.py WIDE.zt --window 25 [OPTIONS]
# --csv FILE`
EXDYNA_DIAGNOSTICS = {"as captured": "as-captured", "`--permute 0`": "permute0", "`--equalize`": "equalize",
                      "`--equalize --permute 0`": "equalize-permute0"}


def exdyna_diagnostics() -> list[str]:
    """docs/replay.md: means over iterations 25-124 (after warm-up) of the committed per-iteration CSVs of one
    capture of the wide model warmed up 200 steps, as captured and with the --permute 0 / --equalize
    diagnostics."""
    from exdyna_claims import window_mean

    rows = []
    for label, name in EXDYNA_DIAGNOSTICS.items():
        run = [r for r in _float_rows(f"exdyna-diagnostics/{name}.csv") if 25 <= r["iteration"] <= 124]
        rows.append([label, *(f"{window_mean(run, c):{spec}}" for c, spec in
                              (("k'/k", ".2f"), ("f dyn", ".2f"), ("f static", ".2f"), ("f workers", ".2f"),
                               ("f poisson", ".2f"), ("hit blocks", ".0f")))])
    return markdown_table(["gradients replayed", "k'/k", "f dyn", "f static", "f workers", "f poisson", "hit blocks"], rows)


def replay_exdyna_gpt() -> list[str]:
    """docs/replay.md, ExDyna on a larger captured model: density, f(t) and errors of each method, from the
    committed per-iteration CSV docs/replay-exdyna-gpt.csv.gz of the page's `zensim simulate --csv` on a
    16-worker gpt-topk capture that is not shipped (2.4 GB)."""
    import csv
    import gzip

    import numpy as np

    with gzip.open(ROOT / "docs" / "replay-exdyna-gpt.csv.gz", "rt", newline="") as f:
        methods: dict[str, list[dict]] = {}
        for r in csv.DictReader(f):
            methods.setdefault(r["method"], []).append(r)
    iterations = [int(r["iteration"]) for r in next(iter(methods.values()))]
    first, last = iterations[0], iterations[-1]
    rows = []
    for method, mine in methods.items():
        d, f = (np.array([float(r[c]) for r in mine]) for c in ("actual_density", "padding"))
        rows.append([method, f"{d[0]:#.3g}", f"{d[-1]:#.3g}", f"{d.mean():#.3g}", f"{f.mean():#.3g}",
                     f"{f[20:].mean():#.3g}", f"{f[-10:].mean():#.3g}",
                     f"{np.mean([float(r['global_error']) for r in mine]):#.3g}",
                     _tiny(float(np.percentile([float(r["conservation"]) for r in mine], 99)))])
    return markdown_table(["method", f"d' it {first}", f"d' it {last}", "d' mean", "f(t) mean",
                           f"f(t) mean it {iterations[20]}-{last}", "f(t) last 10", "global error mean",
                           "kept error p99"], rows)


def exdyna_wide_first() -> list[str]:
    """docs/replay.md: window means (arithmetic, drifts included) of the committed docs/exdyna-claims-wide.csv,
    digits-cnn-wide from the first training step, written by an earlier benchmarks/exdyna_claims.py (its
    capture deleted since, so the committed file is the record)."""
    import numpy as np

    columns = {"k'/k": ".2f", "ratio": ".2f", "drift": ".3f", "f dyn": ".2f", "f static": ".2f", "f best": ".2f",
               "f lag": ".2f", "f poisson": ".2f"}
    return markdown_table(
        ["iterations", "k'/k", "delta / delta*", "delta* drift / it", "f dyn", "f static", "f best", "f lag", "f poisson"],
        _window_means(_float_rows("exdyna-claims-wide.csv"), 50, columns, lambda w, c: np.nanmean([r[c] for r in w])))


# docs/capture.md, ZEN's characteristics: the paper's rows (ZEN section 2) and the shipped traces' (label,
# file, what the gamma^n cell adds)
ZEN_ROWS = {"ZEN LSTM (1B Word)": ["1.13%", "grows, < n", "> 60% in part 0; s > 70 at 128"],
            "ZEN DeepFM (Criteo)": ["2.80%", "γ^8 = 1.86 (5.2% after a machine's 8 GPUs, ZEN §5.3), grows, < n",
                                    "> 60% in part 0 (§2.1: \"in the six DL models\")"]}
TRACE_ROWS = [("lstm-lm 16 workers", "lstm-lm-16w", False), ("lstm-lm 128 workers", "lstm-lm-128w", False),
              ("ZEN DeepFM (Criteo)", None, False), ("deepfm 16 workers (synthetic)", "deepfm-16w", False),
              ("deepfm 128 workers (synthetic)", "deepfm-128w", True), ("gpt-topk 16 workers (top-1%)", "gpt-topk-16w", False),
              ("gpt-dgc 16 workers (DGC 1%)", "gpt-dgc-16w", False)]


def zen_characteristics() -> list[str]:
    """docs/capture.md: density, densification and skewness of the shipped traces (`zensim trace stats`,
    means over iterations and workers) beside ZEN's reported figures (about 6 s of CPU)."""
    from zensim.trace.format import Trace
    from zensim.trace.stats import trace_stats

    rows = [["ZEN LSTM (1B Word)", *ZEN_ROWS["ZEN LSTM (1B Word)"]]]
    for label, name, machine in TRACE_ROWS:
        if name is None:
            rows.append([label, *ZEN_ROWS[label]])
            continue
        with Trace.open(ROOT / "traces" / f"{name}.zt") as t:
            st = trace_stats(t, pairs=256, seed=0)
        gamma = {r["k"]: r["mean"] for r in st["densification"]}
        skew = {r["k"]: r["mean"] for r in st["skewness"]}
        n = max(gamma)
        last = f"{gamma[n]:.3g}" + (f" (n = {n})" if n != 16 else "") if not machine else \
            f"{gamma[n]:.3g} (γ^8 {gamma[8]:.3g})"
        share = f"{skew[8] / 8:.0%}"
        if machine:
            embedding = {r["k"]: r["mean"] for r in st["tensors"]["embedding.weight"]["skewness"]}
            share += f"; embedding alone {embedding[8]:.3g}"
        rows.append([label, f"{st['density']['mean']:.2%}", f"{gamma[2]:.3g} / {gamma[16]:.3g} / {last}",
                     f"{skew[8]:.3g} ({share}) / {skew[128]:.3g}"])
    return markdown_table(["trace", "density d", "γ at 2 / 16 / n workers",
                           "skewness s at 8 / 128 parts (share of part 0 at 8 parts ≈ s/8)"], rows)


# docs/iteration.md, the hook's buckets at 25 Mbit/s: the command there and each --sparse-buckets variant
SPARSE_BUCKETS = ["iteration", "--trace", str(ROOT / "traces" / "lstm-lm-16w.zt"), "--layers",
                  str(ROOT / "traces" / "layers" / "lstm-lm-b20.v100.layers.json"), "--scheme", "zen", "--machines",
                  "4,8", "--gpus-per-machine", "1", "--nic", "25Mbps", "--bucket-mb", "0.1", "--iterations", "4"]
SPARSE_VARIANTS = {"`own` (before: sparse tensors alone, dense ones all-reduced)": ["--sparse-buckets", "own"],
                   "`fused` (`zensim_hook(\"zen\")`)": ["--sparse-buckets", "fused"],
                   "`fused --dense-above 0.5` (`zensim_hook(\"zen\", dense_above=0.5)`)":
                       ["--sparse-buckets", "fused", "--dense-above", "0.5"]}


def sparse_buckets() -> list[str]:
    """docs/iteration.md: ZEN's iteration with each --sparse-buckets variant at 4 and 8 ranks (SPARSE_BUCKETS;
    about 3 s of CPU)."""
    rows = []
    for label, extra in SPARSE_VARIANTS.items():
        zen = [r for r in _json_of([*SPARSE_BUCKETS, *extra]) if r["scheme"] == "zen"]
        rows.append([label, *(f"{r['iteration_s'] * 1e3:.1f} ({r['speedup_vs_dense']:.2f}x)" for r in zen),
                     " / ".join(f"{r['nic_bytes_per_iteration'] / 1e6:.2f}" for r in zen)])
    return markdown_table(["`--sparse-buckets`", "zen, 4 ranks: iteration ms (vs dense DDP)", "zen, 8 ranks",
                           "NIC MB per iteration (4 / 8)"], rows)


def zen_gap() -> list[str]:
    """docs/iteration.md: where the DeepFM embedding bucket's time goes (zen_gap.py; about 2 s of CPU)."""
    from zen_gap import page_table

    return page_table()


def ddp_script() -> list[str]:
    """docs/ddp.md: the foreign DDP script's committed emulated runs against the prediction
    (ddp_script_vs_iteration.py; about 15 s of CPU)."""
    from ddp_script_vs_iteration import page_table

    return page_table()


def validation_errors() -> list[str]:
    """docs/validation.md: the maxmin model's |error| median / worst at 16 ranks, from the committed
    validation-data/validation.json that `zensim validate --json` wrote, beside the earlier runs'
    (validation-data/before-work-kinds/validation.json)."""
    import json

    def summary(path: Path) -> dict[float, dict]:
        return {s["rate_bps"]: s for s in json.loads(path.read_text())["summary"]
                if s["ranks"] == 16 and s["model"] == "maxmin"}

    def errors(s: dict, prefix: str = "") -> str:
        return f"{s[prefix + 'median_abs_err']:.1%} / {s[prefix + 'max_abs_err']:.1%} ({s[prefix + 'worst']})"

    data = ROOT / "docs" / "validation-data"
    now, before = summary(data / "validation.json"), summary(data / "before-work-kinds" / "validation.json")
    return markdown_table(["Mbit/s", "whole median / worst", "communication part median / worst",
                           "before the work kinds (same settings, 23 Nov 01:53-02:16 UTC)"],
                          [[f"{rate / 1e6:.0f}", errors(now[rate]), errors(now[rate], "comm_"),
                            f"whole {errors(before[rate])}, comm {errors(before[rate], 'comm_')}"]
                           for rate in sorted(now, reverse=True)])


def validation_runs() -> list[str]:
    """docs/validation.md, How these runs were made: the 16-rank `zensim validate` runs the page rests on, from
    their committed records (validation-data/run-n16-*.json.gz of `benchmarks/record_run.py --lock ...`: commit
    and the tracked files changed from it, locks held and the wait for them, UTC window, wall, CPU of the
    command and the processes it waited for, the ranks included, peak memory of the largest) and the 1-min
    load average sampled every 30 s beside each run (validation-data/final-n16-*.load, `HH:MM:SS load1 load5
    load15`; the samples inside the run's window)."""
    rows, data = [], ROOT / "docs" / "validation-data"
    runs = [_json(f"validation-data/{p.name}") for p in data.glob("run-n16-*.json.gz")]
    for run in sorted(runs, key=lambda r: r["start_utc"]):
        out = run["output"]
        (rate,), (n,) = out["rates_bps"], {p["ranks"] for p in out["profiles"]}
        tag = f"n{n}-{rate / 1e6:g}mbit"
        start, end = run["start_utc"][11:19], run["end_utc"][11:19]
        samples = [float(line.split()[1]) for line in (data / f"final-{tag}.load").read_text().splitlines()
                   if start <= line.split()[0] <= end]
        minutes, seconds = divmod(run["wall_s"], 60)
        changed = f" (+ {', '.join(run['local_changes'])} changed)" if run["local_changes"] else ""
        rows.append([tag, n, f"{rate / 1e6:g}", ",".join(map(str, out["iterations"])), run["commit"][:7] + changed,
                     " + ".join(Path(lock).stem.removeprefix("zsim-") for lock in run["locks"])
                     + f" (waited {run['lock_wait_s']:.0f} s)",
                     f"{start}-{end} ({run['start_utc'][:10]})", f"{minutes:.0f}:{seconds:05.2f}",
                     f"{run['user_s']:.0f} s user + {run['system_s']:.0f} s system", f"{run['peak_rss_mb']:.0f} MB",
                     f"{sum(samples) / len(samples):.1f} / {max(samples):.1f} ({len(samples)} samples)"])
    return markdown_table(["run", "ranks", "Mbit/s", "iteration", "commit", "locks held", "UTC", "wall",
                           "CPU (the command and its processes)", "peak memory (largest process)",
                           "load avg (1 min) mean / max"], rows)


def trace_io() -> list[str]:
    """docs/trace-stats.md: trace I/O figures from the committed docs/trace-io.json that
    `benchmarks/trace_io.py --json docs/trace-io.json` wrote."""
    import json

    run = json.loads((ROOT / "docs" / "trace-io.json").read_text())
    f = run["figures"]
    read = next(k for k in f if k.startswith("read one"))
    return markdown_table(["figure", "value"], [
        ["bytes per index (whole file)", f"{f['bytes per index (whole file)']:.3g} (target <= 3)"],
        [f"write {f['indices'] / 1e6:.1f}M indices (encode, write, fsync, rename)",
         f"{f['write (encode + write + fsync + rename)']:.2g} s"],
        ["open (header + table)", f"{f['open (header + chunk table)'] * 1e3:.2g} ms"],
        ["read one (iteration, worker)", f"{f[read] * 1e3:.2g} ms ({read.split(': ')[1]})"],
        ["full statistics", f"{f['full statistics (trace_stats)']:.2g} s (target <= 10 s)"],
        ["load average (1 min) before / after", f"{run['load_before'][0]:.2f} / {run['load_after'][0]:.2f}"]])


def exdyna_loop() -> list[str]:
    """docs/replay.md, ExDyna in training at the paper's size: the claims' figures of the committed runs
    docs/exdyna-loop-{gpu,gpu-seq,cpu}.csv.gz (what `benchmarks/exdyna_loop.py --from-csv FILE` prints; the
    run's size, device and pass from its .json; about 8 s of CPU)."""
    import json

    from zensim.replay.selection import load_rows, summarize

    rows = []
    for run in ("gpu", "gpu-seq", "cpu"):
        meta = json.loads((ROOT / "docs" / f"exdyna-loop-{run}.json").read_text())
        s = summarize(load_rows(str(ROOT / "docs" / f"exdyna-loop-{run}.csv.gz")))
        device = "CPU" if meta["run"]["device"] == "cpu" else meta["run"]["device_name"].removeprefix("NVIDIA ")
        if meta["run"].get("batched"):
            device += " batched"
        rows.append([f"{meta['workload']['parameters'] / 1e6:.1f}M, {device}, {s['iterations']:,} it.", s["reached_from"],
                     f"{s['share_in_band_after']:.0%}", f"{s['median_ratio_after']:.3f}",
                     f"{s['dynamic_f_mean']:#.3g} / {s['static_f_mean']:#.3g}",
                     f"{s['dynamic_f_mean_last_quarter']:#.3g} / {s['static_f_mean_last_quarter']:#.3g}",
                     f"{s['dynamic_bytes_mean'] / 1e3:#.3g}".rstrip(".") + f" / {s['static_bytes_mean'] / 1e3:#.3g}".rstrip(".") + " KB",
                     f"{s['dynamic_sim_s_mean'] * 1e3:#.3g} / {s['static_sim_s_mean'] * 1e3:#.3g} ms"])
    return markdown_table(["run", "reached (10 in a row in [0.8, 1.25])", "in band after", "median k'/k",
                           "f(t) dynamic / static, from reached", "last quarter", "bytes a worker, dynamic / static",
                           "simulated exchange, 25 Gbps"], rows)


def exdyna_loop_partitions() -> list[str]:
    """docs/replay.md: partition loads over the last quarter of the committed GPU run (`partition_loads` of
    docs/exdyna-loop-gpu.csv.gz) and the dynamic layout's blocks at its end; adjacent partitions equal in
    every row share one column (about 3 s of CPU)."""
    import json

    from zensim.replay.selection import load_rows, partition_loads

    parameters = json.loads((ROOT / "docs" / "exdyna-loop-gpu.json").read_text())["workload"]["parameters"]
    rows = load_rows(str(ROOT / "docs" / "exdyna-loop-gpu.csv.gz"))
    last = rows[len(rows) * 3 // 4:]

    def load(x: float) -> str:
        return f"{x:.1g}" if x < 0.01 else f"{x:.2g}" if x < 1 else f"{x:#.3g}"

    static, dynamic = partition_loads(last, "static"), partition_loads(last, "dynamic")
    columns = list(zip(map(load, static["partition_load"]), map(load, dynamic["partition_load"]),
                       map(str, dynamic["blocks"])))
    spans: list[list[int]] = []
    for p, cells in enumerate(columns):
        if spans and columns[spans[-1][0]] == cells:
            spans[-1][1] = p
        else:
            spans.append([p, p])
    heads = [f"{a}" if a == b else f"{a}-{b}" for a, b in spans]
    merged = [columns[a] if a == b else (*columns[a][:2], columns[a][2] + " each") for a, b in spans]
    return markdown_table(
        [f"{parameters / 1e6:.1f}M model, last {len(last):,} iterations; partition", *heads],
        [["static: load", *(c[0] for c in merged)], ["dynamic: load", *(c[1] for c in merged)],
         [f"dynamic: blocks (of {dynamic['block_size']:,} elements)", *(c[2] for c in merged)]])


def _json(path: str):
    """A committed JSON document under docs/ (gzip if its name ends in .gz)."""
    import gzip
    import json

    data = (ROOT / "docs" / path).read_bytes()
    return json.loads(gzip.decompress(data) if path.endswith(".gz") else data)


def _growth_key(record: dict, row: dict) -> tuple:
    """A `benchmarks/growth.py --json` row's (machines, gpus, scheme, model, side): the record's `code` map names
    the sides (before, after)."""
    return row["machines"], row["gpus"], row["scheme"], row["model"], record["code"].get(row["code"], row["code"])


def _growth_sides(record: dict) -> dict:
    """The rows of a `benchmarks/growth.py --json` record that ran, by _growth_key."""
    return {_growth_key(record, r): r for r in record["rows"] if "cpu_s" in r}


def growth_memory(path: str = "simulator-data/growth-memory.json") -> list[str]:
    """docs/simulator.md, memory per message: a committed `benchmarks/growth.py --vs` record (minutes of CPU
    at 2048 ranks: not re-run by the test): docs/simulator-data/growth-memory.json, the compact replay set-up
    against 0a639bc; growth-compact.json, compact dtypes against 61053c0."""
    side = _growth_sides(_json(path))
    keys = sorted({k[:4] for k in side}, key=lambda k: (k[2] != "zen", k[2], k[3], k[0]))
    rows = []
    for key in keys:
        before, after = side[key + ("before",)], side[key + ("after",)]
        if (before["events"], before["makespan_s"]) != (after["events"], after["makespan_s"]):
            raise ValueError(f"{path}: {key} changed events or makespan")
        rows.append([key[0], key[2], key[3], f"{before['messages']:,}", f"{before['events']:,}",
                     f"{before['cpu_s']:.2f} -> {after['cpu_s']:.2f}",
                     f"{before['peak_rss'] / 2**30:.2f} -> {after['peak_rss'] / 2**30:.2f}",
                     f"{before['replay_bytes_per_message']:.0f} -> {after['replay_bytes_per_message']:.0f}"])
    return markdown_table(["ranks", "scheme", "model", "messages", "events", "CPU s, before -> after",
                           "peak RSS GiB, before -> after", "replay bytes / message, before -> after"], rows)


def maxmin_bound() -> list[str]:
    """docs/simulator.md, The stated bound: the default maxmin mode against exact max-min on the benchmark
    logs, from the committed record docs/simulator-data/bound.json (benchmarks/simulate.py --scale --exact
    --json runs; the exact replays take minutes: not re-run by the test)."""
    record = _json("simulator-data/bound.json")
    rows = []
    for run in record["runs"]:
        for r in run["rows"]:
            fast, exact = r["maxmin"], r["maxmin-exact"]
            rows.append([run["shape"], r["scheme"], f"{r['messages']:,}", f"{exact['makespan_err']:+.4%}",
                         f"{exact['stage_err']:.4%}", f"{exact['stage_err_own']:.4%}",
                         f"{fast['cpu_s']:.2f} / {exact['cpu_s']:.2f}"])
    return markdown_table(["shape", "scheme", "messages", "makespan, default against exact",
                           "worst stage end, of the makespan", "of its own time", "replay CPU s, default / exact"],
                          rows)


def growth_final(path: str = "simulator-data/growth-final.json") -> list[str]:
    """docs/simulator.md, Growth: each replay before and after, back to back, and those run on one side only,
    from a committed `benchmarks/growth.py --vs --json` record: growth-final.json (61053c0 against the engine
    work of 27 Nov), growth-local.json (the link re-solves of 28 Nov), growth-sorts.json (radix sorts and the kept
    index, 28 Nov), growth-lazy.json (the lazy heap, 28 Nov, evening), growth-route.json (whole solves by route,
    28 Nov, night), growth-hold.json (joins that wait, 29 Nov), growth-issue.json (the issue's start against 29 Nov,
    late); minutes of CPU: not re-run by the test. A before cut off by its timeout shows as such; an after cut
    off is left out."""
    record = _json(path)
    side = _growth_sides(record)
    cut = {_growth_key(record, r)[:4]: r["error"] for r in record["rows"]
           if "error" in r and _growth_key(record, r)[4] == "before"}
    rows = []
    for key in sorted({k[:4] for k in side if k[4] == "after"}, key=lambda k: (k[2], k[3], k[1] > 1, k[0] * k[1])):
        before, after = side.get(key + ("before",)), side[key + ("after",)]
        moved = "-" if before is None else f"{after['makespan_s'] / before['makespan_s'] - 1:+.5%}"
        cpu_before = f"{before['cpu_s']:.2f} -> " if before else (f"{cut[key]} -> " if key in cut else "")
        rows.append([f"{key[0]} x {key[1]}", key[2], key[3], f"{after['messages']:,}",
                     (f"{before['events']:,} -> " if before and before["events"] != after["events"] else "")
                     + f"{after['events']:,}", cpu_before + f"{after['cpu_s']:.2f}",
                     f"{after['events'] / after['cpu_s'] / 1e6:.2f}",
                     (f"{before['peak_rss'] / 2**30:.2f} -> " if before else "") + f"{after['peak_rss'] / 2**30:.2f}",
                     moved])
    return markdown_table(["shape", "scheme", "model", "messages", "events", "CPU s, before -> after",
                           "M events / CPU s, after", "peak RSS GiB, before -> after", "makespan, after / before"],
                          rows)


def growth_exponents(path: str = "simulator-data/growth-final.json") -> list[str]:
    """docs/simulator.md, Growth: the CPU growth exponents log(t2/t1) / log(n2/n1) between successive flat sizes,
    before and after, from the record of growth_final."""
    from growth import exponents

    side = _growth_sides(_json(path))
    rows = []
    for scheme, model in sorted({(k[2], k[3]) for k in side}):
        cells = []
        for label in ("before", "after"):
            points = sorted((k[0], r["cpu_s"]) for k, r in side.items()
                            if k[1] == 1 and k[2:4] == (scheme, model) and k[4] == label)
            cells.append(exponents(points).replace(" ", " / ") or "-")
            if label == "after":
                cells.insert(0, " -> ".join(str(n) for n, _ in points))
        rows.append([scheme, model, *cells])
    return markdown_table(["scheme", "model", "flat ranks", "CPU exponents, before", "CPU exponents, after"], rows)


def replay_speed_history() -> list[str]:
    """docs/replay.md, History: the before/after rounds of the selection scan's change (7e03f59 and after), from
    the committed record docs/replay-speed/history-select-scan.json (typed from the page of the time: the run's
    output was not kept; those commits' code is long replaced, so the pair is not re-run)."""
    record = _json("replay-speed/history-select-scan.json")
    return markdown_table(["round", "code", "spardl CPU s", "spardl wall s", "exdyna CPU s", "exdyna wall s"],
                          [[r["round"], r["code"], f"{r['spardl_cpu_s']:.2f}", f"{r['spardl_wall_s']:.1f}",
                            f"{r['exdyna_cpu_s']:.2f}", f"{r['exdyna_wall_s']:.1f}"] for r in record["rows"]])


def capture_speed() -> list[str]:
    """docs/capture.md, Speed: virtual-worker iterations per second, from the committed
    docs/capture-data/speed.json of `benchmarks/capture.py --iterations 3 --json` (run under the bench lock)."""
    runs = {(r["workload"], r["workers"]): r for r in _json("capture-data/speed.json")["results"]}
    counts = sorted({n for _, n in runs})
    return markdown_table(["workload", *(f"{n} workers: it/s" for n in counts),
                           f"worker micro-batches/s ({' / '.join(map(str, counts))})"],
                          [[w, *(f"{runs[w, n]['it_per_s']:.2g}" for n in counts),
                            " / ".join(f"{runs[w, n]['worker_steps_per_s']:.3g}" for n in counts)]
                           for w in dict.fromkeys(w for w, _ in runs)])


def capture_virtual() -> list[str]:
    """docs/capture.md, Cost: `zensim capture --script benchmarks/recsys_ddp.py --virtual-ranks N`'s wall, CPU,
    peak memory and trace size, from the committed docs/capture-data/virtual-ranks.json of
    `benchmarks/capture_virtual.py --json` (run under the bench lock)."""
    return markdown_table(["N", "wall", "user + sys CPU", "peak RSS", "trace"],
                          [[r["ranks"], f"{r['wall_s']:.1f} s", f"{r['user_s']:.1f} + {r['system_s']:.1f} s",
                            f"{r['peak_rss_kib'] * 1024 / 1e6:.0f} MB", f"{r['trace_bytes'] / 1e6:.1f} MB"]
                           for r in _json("capture-data/virtual-ranks.json")["runs"]])


def replay_speed() -> list[str]:
    """docs/replay.md, Replay speed: 100 iterations of 10M-element gradients at 16 workers, one method per
    run, from the committed docs/replay-speed/{spardl,exdyna}.json of `benchmarks/replay.py --schemes S
    --json` (each under the bench lock)."""
    rows = []
    for method in ("spardl", "exdyna"):
        run = _json(f"replay-speed/{method}.json")
        (r,), (wall, cpu) = run["rows"], run["replay_wall_cpu_s"][method]
        rows.append([method, f"{wall:.1f}", f"{cpu:.1f}", f"{cpu / run['settings']['iterations']:.2f}",
                     f"{run['load_before'][0]:.2f}, {run['load_after'][0]:.2f}", f"{run['peak_rss_gib']:.2f} GiB",
                     f"{run['setup_s']:.1f}", f"{r['time_s_mean']:.3g}", f"{r['actual_density_mean']:.4f}",
                     f"{r['padding_mean']:.3g}"])
    return markdown_table(["method", "replay wall s", "replay CPU s (all threads)", "CPU s / iteration",
                           "load (1 min) before, after", "peak resident memory", "set-up s", "simulated s / it",
                           "d' mean", "f(t) mean"], rows)


# docs/ddp.md's three hooks: benchmarks/ddp_hooks.py's run names and the page's labels
DDP_HOOKS = {"default": "DDP default (gloo all-reduce)", "zen-dense-above-0.5": '`zensim_hook("zen", dense_above=0.5)`',
             "zen": '`zensim_hook("zen")`'}


def ddp_hooks() -> list[str]:
    """docs/ddp.md, Real training on the emulated cluster: the three hooks' iteration times, traffic and trained
    parameters, from the committed docs/ddp-data/hooks.json of `benchmarks/ddp_hooks.py --json` (emulated, both
    locks held)."""
    import re

    runs = _json("ddp-data/hooks.json")["runs"]
    default = runs[0]["emulate"]["median_s"]
    rows = []
    for run in runs:
        e, steps = run["emulate"], next(re.search(r"(\d+) steps in ([0-9.]+) s", line) for line in run["rank0"]
                                        if " steps in " in line)
        cell = "-"
        if "parameters_vs_default" in run:
            c = run["parameters_vs_default"]
            close = ("allclose(rtol 1e-5, atol 1e-6)" if len(c["allclose"]) == c["tensors"] else
                     f"allclose(rtol 1e-5, atol 1e-6) in {len(c['allclose'])} of {c['tensors']} tensors")
            largest = f" (largest abs value {c['largest_abs_value']:.3g})" if run is runs[1] else ""
            cell = f"max abs diff {c['max_abs_diff']:.1e}".replace("e-0", "e-") + f"{largest}; {close}"
        speedup = default / e["median_s"]
        rows.append([DDP_HOOKS[run["name"]], f"{e['median_s'] * 1e3:.0f} ms ({e['min_s'] * 1e3:.0f}-{e['max_s'] * 1e3:.0f})",
                     "1" if run is runs[0] else f"**{speedup:.2f}x**", f"{float(steps[2]):.1f} s",
                     f"{min(e['wire_tx']) / 1e6:.0f}-{max(e['wire_tx']) / 1e6:.0f} MB", cell])
    return markdown_table(["hook", "iteration median (min-max), slowest rank", "speedup vs default",
                           f"rank 0's {steps[1]} steps", f"bytes out of each NIC ({steps[1]} steps)",
                           "trained parameters vs default"], rows)


def fusion_gemini() -> list[str]:
    """docs/fusion.md, Gemini on the iteration timeline: checkpoint overhead interleaved and blocking, from the
    committed docs/fusion-data/gemini.json of `benchmarks/fusion.py gemini --nic 25Gbps,100Gbps --out
    docs/fusion-data` (about 35 s of CPU)."""
    rows = []
    for run in _json("fusion-data/gemini.json")["rows"]:
        measured = {(m["mode"], m["every"]): m for m in run["measured"]}
        iteration = run["iteration_s"]

        def share(overhead: float, every: int) -> str:
            return f"{100 * overhead / (every * iteration):.2g}%"

        def period(mode: str, every: int) -> str:
            return "1" if every == 1 else f"{every} ({share(measured[mode, 1 if mode == 'blocking' else every]['overhead_s'], every)})"

        inter, block = measured["interleaved", 1], measured["blocking", 1]
        rows.append([run["nic"].replace("Gbps", " Gbps"), f"{iteration:.4g}", f"{run['idle_s']:.3g}",
                     f"{inter['overhead_s']:.3g} s ({share(inter['overhead_s'], 1)}), {inter['idle_after_s']:.2g} s idle left",
                     f"{block['overhead_s']:.3g} s ({share(block['overhead_s'], 1)})",
                     period("interleaved", run["every_k_interleaved"]), period("blocking", run["every_k_blocking"])])
    return markdown_table(["NIC", "iteration s", "NIC idle s / iteration", "interleaved, k = 1", "blocking, k = 1",
                           "every k under 1%: interleaved", "blocking"], rows)


# docs/fusion.md's strategies on the iteration timeline: strategy name -> the page's label
FUSION_STRATEGIES = {"none": "none (dense DDP)", "layerwise": "layer-wise", "behind": "sparsification-behind (DDP buckets)",
                     "safusion": "SAFusion", "cupcake": "Cupcake"}


def _fusion_runs(name: str) -> list[dict]:
    """The records of a committed `zensim iteration ... --strategy ... --json` run, docs/fusion-data/NAME.json.gz."""
    return _json(f"fusion-data/{name}.json.gz")


def fusion_strategies() -> list[str]:
    """docs/fusion.md, Throughput on the iteration timeline: every strategy with the threshold and the DGC
    compression cost, from the committed docs/fusion-data/timeline-strategies-{threshold,dgc}.json.gz."""
    runs = {cost: {r["strategy"]["name"]: r for r in _fusion_runs(f"timeline-strategies-{cost}")}
            for cost in ("threshold", "dgc")}
    rows = []
    for name, label in FUSION_STRATEGIES.items():
        t, d = runs["threshold"][name], runs["dgc"][name]
        groups = str(t["strategy"]["groups"]) + ("" if d["strategy"]["groups"] == t["strategy"]["groups"]
                                                 else f" (DGC: {d['strategy']['groups']})")
        missing = t["strategy"]["missing_rate"] or 0
        rows.append([label, groups, f"{t['iteration_s'] * 1e3:#.4g}",
                     _ratio(runs["threshold"]["none"]["iteration_s"] / t["iteration_s"]),
                     f"{t['compression_s'] * 1e3:.3g}", f"{missing:.1%}" if missing else "0",
                     f"{d['iteration_s'] * 1e3:#.4g}", _ratio(runs["dgc"]["none"]["iteration_s"] / d["iteration_s"])])
    return markdown_table(["strategy", "groups", "iteration ms (threshold cost)", "vs none", "compression ms", "missing",
                           "iteration ms (DGC cost)", "vs none"], rows)


def _ratio(x: float) -> str:
    """A speed ratio to three decimals, 1 as 1."""
    return "1" if round(x, 3) == 1 else f"{x:.3f}"


def fusion_degrees() -> list[str]:
    """docs/fusion.md, Fusion degree on the iteration timeline: behind and none against the fusion degree, from
    the committed docs/fusion-data/timeline-degrees.json.gz; consecutive degrees with the same figures share a row."""
    runs = _fusion_runs("timeline-degrees")
    by = {(r["strategy"]["name"], r["strategy"]["degree"]): r for r in runs}
    dense = by["none", 1]["iteration_s"]
    cells = []
    for degree in sorted({d for _, d in by}):
        b, n = by["behind", degree], by["none", degree]
        missing = b["strategy"]["missing_rate"] or 0
        cells.append((degree, [str(b["strategy"]["groups"]), f"{b['iteration_s'] * 1e3:#.4g}",
                               _ratio(dense / b["iteration_s"]), f"{missing:.1%}" if missing else "0",
                               f"{n['iteration_s'] * 1e3:#.4g}"]))
    rows = []
    for degree, row in cells:
        if rows and rows[-1][1] == row:
            rows[-1][0][1] = degree
        else:
            rows.append(([degree, degree], row))
    return markdown_table(["degree", "buckets", "behind ms", "behind vs dense DDP (one bucket)", "missing", "none ms"],
                          [[("0 (a bucket per tensor)" if lo == 0 else f"{lo:g}" if lo == hi else f"{lo:g} - {hi:g}"), *row]
                           for (lo, hi), row in rows])


def trace_scale_heldout() -> list[str]:
    """docs/trace-scale.md, The held-out check: each 128-worker trace fitted on 16 and 32 workers against the
    real one, from the committed docs/trace-scale-heldout.json.gz of `benchmarks/trace_scale.py --json`
    (about 20 min of a shared 2-core machine)."""
    record = _json("trace-scale-heldout.json.gz")
    names = {"lstm-lm-128w.zt": "LSTM", "deepfm-128w.zt": "DeepFM"}
    columns = [(names[Path(r["trace"]).name], fit, {row["metric"]: row for row in r["rows"]}, r["workers"])
               for r in record["results"] for fit in r["fits"]]

    def err(rows: dict, fit: str, metric: str) -> float:
        return 100 * rows[metric][f"{fit} err"]

    def errors(metrics: list[str]) -> list[str]:
        return [" / ".join(f"{err(rows, fit, m):+.2f}" for m in metrics) + "%" for _, fit, rows, _ in columns]

    def within(kind: str, shape: str) -> list[str]:
        cells = []
        for _, fit, rows, _ in columns:
            found = {m.split(" ", 2)[2]: err(rows, fit, m) for m in rows if m.startswith(f"{shape} {kind} ")}
            worst = max(found, key=lambda scheme: abs(found[scheme]))
            named = f"{worst} " if abs(found[worst]) >= 2 else ""
            cells.append(f"{sum(abs(e) <= 100 * record['tolerance'] for e in found.values())}/{len(found)} "
                         f"({named}{found[worst]:+.2f}%)")
        return cells

    workers = columns[0][3]
    reals = " / ".join(dict.fromkeys(f"{rows[f'gamma^{workers}']['real']:.2f}" for *_, rows, _ in columns))
    shapes = record["shapes"].split(",")
    table = [["γ^16 / γ^32 / γ^64", *errors(["gamma^16", "gamma^32", "gamma^64"])],
             [f"**γ^{workers}** (real {reals})",
              *(f"**{err(rows, fit, f'gamma^{workers}'):+.2f}%** ({rows[f'gamma^{workers}'][fit]:.2f})"
                for _, fit, rows, _ in columns)],
             ["s^8 / s^32 / s^128", *errors(["s^8", "s^32", "s^128"])]]
    for shape in shapes:
        table.append([f"ZEN push / pull, {shape.replace('x', ' x ')}",
                      *errors([f"{shape} zen push imbalance", f"{shape} zen pull imbalance"])])
    for kind in ("bytes", "time"):
        table += [[f"**{kind}** within 5%, {shape.replace('x', ' x ')} (worst)", *within(kind, shape)] for shape in shapes]
    return markdown_table(["", *(f"{name} fit {fit.removeprefix('fit')}" for name, fit, _, _ in columns)], table)


TABLES: dict[str, tuple[str, Callable[[], list[str]]]] = {
    **ITERATION_TABLES,
    "shipped-traces": ("traces/README.md", shipped_traces),
    "zen-fig11-12": ("docs/iteration.md", zen_fig11_12),
    "zen-fig11-12-machines": ("docs/iteration.md", zen_fig11_12_machines),
    "replay-density": ("docs/replay.md", replay_density),
    "replay-buildup": ("docs/replay.md", replay_buildup),
    "zen-gap": ("docs/iteration.md", zen_gap),
    "sparse-buckets": ("docs/iteration.md", sparse_buckets),
    "spardl-bsag": ("docs/replay.md", spardl_bsag),
    "zen-characteristics": ("docs/capture.md", zen_characteristics),
    "exdyna-claims-digits": ("docs/replay.md", lambda: exdyna_windows("exdyna-claims-digits", 10)),
    "exdyna-claims-digits-warm": ("docs/replay.md", lambda: exdyna_windows("exdyna-claims-digits-warm", 10)),
    "exdyna-claims-wide-warm": ("docs/replay.md", lambda: exdyna_windows("exdyna-claims-wide-warm", 25)),
    "ddp-script": ("docs/ddp.md", ddp_script),
    "validation-errors": ("docs/validation.md", validation_errors),
    "validation-runs": ("docs/validation.md", validation_runs),
    "trace-io": ("docs/trace-stats.md", trace_io),
    "replay-loss": ("docs/replay.md", replay_loss),
    "roofline-h100": ("docs/iteration.md", roofline),
    "replay-compare": ("docs/replay.md", replay_compare),
    "replay-speed": ("docs/replay.md", replay_speed),
    "replay-speed-history": ("docs/replay.md", replay_speed_history),
    "growth-memory": ("docs/simulator.md", growth_memory),
    "maxmin-bound": ("docs/simulator.md", maxmin_bound),
    "growth-final": ("docs/simulator.md", growth_final),
    "growth-exponents": ("docs/simulator.md", growth_exponents),
    "growth-compact": ("docs/simulator.md", lambda: growth_memory("simulator-data/growth-compact.json")),
    "growth-local": ("docs/simulator.md", lambda: growth_final("simulator-data/growth-local.json")),
    "growth-local-exponents": ("docs/simulator.md", lambda: growth_exponents("simulator-data/growth-local.json")),
    "growth-sorts": ("docs/simulator.md", lambda: growth_final("simulator-data/growth-sorts.json")),
    "growth-sorts-exponents": ("docs/simulator.md", lambda: growth_exponents("simulator-data/growth-sorts.json")),
    "growth-lazy": ("docs/simulator.md", lambda: growth_final("simulator-data/growth-lazy.json")),
    "growth-lazy-exponents": ("docs/simulator.md", lambda: growth_exponents("simulator-data/growth-lazy.json")),
    "growth-route": ("docs/simulator.md", lambda: growth_final("simulator-data/growth-route.json")),
    "growth-route-exponents": ("docs/simulator.md", lambda: growth_exponents("simulator-data/growth-route.json")),
    "growth-hold": ("docs/simulator.md", lambda: growth_final("simulator-data/growth-hold.json")),
    "growth-hold-exponents": ("docs/simulator.md", lambda: growth_exponents("simulator-data/growth-hold.json")),
    "growth-issue": ("docs/simulator.md", lambda: growth_final("simulator-data/growth-issue.json")),
    "growth-issue-exponents": ("docs/simulator.md", lambda: growth_exponents("simulator-data/growth-issue.json")),
    "capture-speed": ("docs/capture.md", capture_speed),
    "capture-virtual": ("docs/capture.md", capture_virtual),
    "ddp-hooks": ("docs/ddp.md", ddp_hooks),
    "fusion-gemini": ("docs/fusion.md", fusion_gemini),
    "fusion-strategies": ("docs/fusion.md", fusion_strategies),
    "fusion-degrees": ("docs/fusion.md", fusion_degrees),
    "trace-scale-heldout": ("docs/trace-scale.md", trace_scale_heldout),
    "exdyna-claims-wide": ("docs/replay.md", exdyna_wide_first),
    "exdyna-diagnostics": ("docs/replay.md", exdyna_diagnostics),
    "replay-exdyna-gpt": ("docs/replay.md", replay_exdyna_gpt),
    "exdyna-loop": ("docs/replay.md", exdyna_loop),
    "exdyna-loop-partitions": ("docs/replay.md", exdyna_loop_partitions),
}


def page_table(text: str, name: str) -> list[str]:
    """The lines of table `name` in a page's text (the `|` lines after its marker)."""
    lines = text.splitlines()
    if marker(name) not in lines:
        raise SystemExit(f"doc_tables: no line {marker(name)!r} in the page")
    start = lines.index(marker(name)) + 1
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return lines[start:end]


def replace_table(text: str, name: str, table: list[str]) -> str:
    """The page's text with table `name` replaced by `table`."""
    old = "\n".join([marker(name), *page_table(text, name)]) + "\n"
    return text.replace(old, "\n".join([marker(name), *table]) + "\n", 1)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the tables, or write them into their pages (--write)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help=f"tables (default all: {', '.join(TABLES)})")
    p.add_argument("--write", action="store_true", help="replace the tables in their pages")
    args = p.parse_args(argv)
    unknown = [n for n in args.names if n not in TABLES]
    if unknown:
        p.error(f"unknown table {unknown[0]!r} (choose from {', '.join(TABLES)})")
    for name in args.names or TABLES:
        page, make = TABLES[name]
        table = make()
        if args.write:
            path = ROOT / page
            path.write_text(replace_table(path.read_text(), name, table))
            print(f"{page}: {name} written")
        else:
            print("\n".join([f"{page}: {name}", *table, ""]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
