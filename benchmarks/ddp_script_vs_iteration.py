"""A DDP script that is not a zensim workload, trained for real on the emulated cluster with DDP's default
hook and with `zensim_hook(SCHEME)`, against `zensim iteration`'s prediction: measured vs predicted.

The script is `benchmarks/recsys_ddp.py` (imports nothing of zensim) at a small size (EmbeddingBag 32,768 x 16,
Embedding 4,096 x 16, an MLP: 594,177 parameters, one DDP bucket), batch 256 per rank, `--steps` steps on
every rank. For each --ranks n:

- measured: `zensim emulate --ranks n --bandwidth B --script recsys_ddp.py [--hook SCHEME] --warmup W`, its
  median iteration after W warm-up iterations (stamp to stamp of the DDP forwards, slowest rank), read from
  --measured (the JSON `--run` writes there: `recsys-{hook}-{n}r-{bandwidth}.json`);
- predicted: the layer profile --layers (recorded on a quiet machine by `zensim layers record --script`, one
  thread, as each rank runs: with the step's other time and zensim_hook's own work per bucket, which the
  timeline prices as the rank's compute) x the calibration's cpu_slowdown; the cluster of the calibration --calibration
  (links, host efficiency, exchange CPU, work costs, 2 host cores shared by the n ranks: `shared_host`);
  DDP's buckets (25 MiB, first 1 MiB); the default hook as gloo's ring all-reduce with free sums; the
  scheme on the trace of the same steps captured here at n virtual ranks (`zensim capture --script
  --virtual-ranks n`), every bucket synchronized whole by the scheme as the hook does (`--sparse-buckets
  fused`, flat layout); links shared max-min fairly (`--model maxmin`: the emulator serves a NIC's flows in
  turn); with --hook-run-ms, zensim_hook's work in the scheme's run outside its stages per bucket, as
  benchmarks/hook_run_overhead.py measured it at n ranks, x cpu_slowdown (`--hook-run-s`); the median of
  the timed iterations. Twice: for a host of the ranks' own, and with the other
  sessions runnable during the run (`--run` samples them) as `Costs.host_others` (`--host-others`).

    flock /tmp/zsim-netns.lock flock /tmp/zsim-bench.lock .venv/bin/python benchmarks/ddp_script_vs_iteration.py \
        --run --measured DIR                                    # emulate into DIR, then compare
    .venv/bin/python benchmarks/ddp_script_vs_iteration.py     # compare the committed runs (docs/ddp-data/recsys-25mbit)

Prints a table: ranks, hook, set, measured median (min - max), predicted alone and its error, the other
runnable sessions, predicted with them and its error, cores busy, load. docs/ddp.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

from zensim.atomic import write_atomic
from zensim.net.costs import Costs
from zensim.net.profile import load_profile
from zensim.report.table import format_table
from zensim.sim.cluster import build_cluster
from zensim.train.buckets import DDPBuckets
from zensim.train.iteration import simulate_iteration
from zensim.train.layers import load_layers

SCRIPT = "benchmarks/recsys_ddp.py"
SMALL = ["--items", "32768", "--users", "4096", "--dim", "16"]
DATA = Path("docs/ddp-data")


def script_args(ranks: int, batch: int, steps: int) -> list[str]:
    """The script's arguments for `steps` steps on every one of `ranks` ranks (one epoch of the samples)."""
    return [*SMALL, "--batch", str(batch), "--samples", str(ranks * batch * steps)]


def measured_path(folder: Path, hook: str, ranks: int, bandwidth: str) -> Path:
    """Where the emulated run of `hook` at `ranks` is kept."""
    return folder / f"recsys-{hook}-{ranks}r-{bandwidth}.json"


def other_runnable() -> int:
    """Scheduling groups other than the emulated ranks' and this process's with a thread runnable now
    (state R): the other load competing with the ranks for the host's cores. With the kernel's autogroup
    scheduling (on here: /proc/sys/kernel/sched_autogroup_enabled) the cores are shared fairly among
    sessions first, and each rank is a session of its own, so a session with many runnable threads
    counts once. Kernel threads are left out (the network stack's work for the emulation is in the
    calibration)."""
    groups = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            if not cmdline or b"emulate.scriptrank" in cmdline:
                continue
            for task in (proc / "task").iterdir():
                stat = (task / "stat").read_text()
                if stat[stat.rindex(")") + 2] == "R":
                    group = (proc / "autogroup").read_text().split()  # empty: the root group, a task of its own
                    groups.add(group[0] if group else proc.name)
                    break
        except OSError:  # ended meanwhile
            continue
    return len(groups)


def emulate(hook: str, ranks: int, bandwidth: str, args: argparse.Namespace) -> dict:
    """One emulated training run (the caller holds /tmp/zsim-netns.lock), with the load before and after and
    the other runnable scheduling groups sampled every 0.5 s meanwhile (`other_runnable`)."""
    from emulate.script import emulate_script
    from zensim.net.units import parse_bandwidth

    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            samples.append(other_runnable())

    load = os.getloadavg()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = emulate_script(SCRIPT, script_args(ranks, args.batch, args.steps), ranks,
                                8 * parse_bandwidth(bandwidth, "--bandwidth"), args.warmup,
                                hook=None if hook == "default" else hook)
    finally:
        done.set()
        sampler.join()
    return result | {"load_before": list(load), "load_after": list(os.getloadavg()), "other_runnable": samples,
                     "other_runnable_mean": statistics.fmean(samples) if samples else None}


def timed_steps(args: argparse.Namespace) -> int:
    """Iterations the median is taken over: the intervals between the steps' forward stamps (steps - 1) after the warm-up."""
    return args.steps - 1 - args.warmup


def capture(ranks: int, args: argparse.Namespace, out: Path) -> None:
    """The trace of the timed steps at `ranks` virtual ranks (every parameter, indices only)."""
    subprocess.run([sys.executable, "-m", "zensim.cli", "capture", "--script", SCRIPT, "--virtual-ranks", str(ranks),
                    "--warmup", str(args.warmup), "--iterations", str(timed_steps(args)), "-o", str(out), "--",
                    *script_args(ranks, args.batch, args.steps)], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "OMP_NUM_THREADS": "1"})


def predict(hook: str, ranks: int, bandwidth: str, trace: Path | None, args: argparse.Namespace,
            others: float = 0.0) -> float:
    """The timeline's median iteration for `hook` at `ranks` (see the module docstring), with `others`
    always-runnable processes sharing the host's cores (Costs.host_others)."""
    calib = load_profile(args.calibration)
    cluster, _ = build_cluster(ranks, 1, nic=bandwidth, profile=args.calibration)
    costs = replace(Costs.of(cluster, calib), host_others=others)
    profile = load_layers(args.layers).scaled(calib.cpu_slowdown)
    common = dict(model=args.model, bucketing=DDPBuckets(), iterations=timed_steps(args),
                  dense_work="free", shared_host=True, dense_algorithm="ring", dense_baseline=False)
    if hook == "default":
        rec = simulate_iteration(profile, "dense-allreduce", costs, **common)
    else:
        run_s = args.hook_run_ms.get(ranks, 0.0) * 1e-3 * calib.cpu_slowdown
        rec = simulate_iteration(profile, hook, costs, trace=trace, layout="flat", sparse_buckets="fused",
                                 hook_run_s=run_s, **common)
    return statistics.median(rec.iteration_times_s)


def row(ranks: int, hook: str, folder: Path, measured: dict, alone: float, loaded: float | None) -> list:
    """A table row: the run's median (min, max) iteration; the prediction for a host of its own and its
    error; the other runnable scheduling groups measured during the run, the prediction with them and its error;
    the CPU the ranks used per second of the median iteration (cores busy, of the host's 2); the load."""
    cpu = measured.get("median_cpu_s")  # runs before the CPU stamps have none
    others = measured.get("other_runnable_mean")  # runs before the sampler have none
    load = f"{measured['load_before'][0]:.1f} -> {measured['load_after'][0]:.1f}"
    median = measured["median_s"]
    return [ranks, hook, folder.name, median * 1e3, measured["min_s"] * 1e3, measured["max_s"] * 1e3, alone * 1e3,
            f"{alone / median - 1:+.1%}", None if others is None else f"{others:.2f}",
            None if loaded is None else loaded * 1e3, None if loaded is None else f"{loaded / median - 1:+.1%}",
            None if cpu is None else f"{cpu / median:.2f}", load]


# zensim_hook's run outside the scheme's stages, ms a rank, measured by benchmarks/hook_run_overhead.py
# (docs/ddp-data/recsys-25mbit/hook-run-overhead.txt; '0' prices none)
MEASURED_HOOK_RUN_MS = "4=2.56,8=5.22"


def hook_run_ms(text: str) -> dict[int, float]:
    """--hook-run-ms '4=2.56,8=5.22': milliseconds per rank count ('0': none)."""
    if text == "0":
        return {}
    try:
        return {int(n): float(ms) for n, ms in (item.split("=") for item in text.split(","))}
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected RANKS=MS pairs separated by commas") from None


def parser() -> argparse.ArgumentParser:
    """The benchmark's options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", default="4,8")
    p.add_argument("--hooks", default="default,zen", help="'default' (DDP's all-reduce) and zensim schemes")
    p.add_argument("--bandwidth", default="25mbit")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=12, help="training steps on every rank")
    p.add_argument("--warmup", type=int, default=2, help="iterations left out of the median")
    p.add_argument("--model", default="maxmin", help="the timeline's sharing model (default maxmin: the emulator "
                   "serves a NIC's flows in turn, docs/emulation.md)")
    p.add_argument("--layers", default=str(DATA / "recsys-small.layers.json"))
    p.add_argument("--calibration", default="docs/ddp-data/calibration-25mbit-n16.json")
    p.add_argument("--measured", default=",".join(str(DATA / "recsys-25mbit" / r) for r in "abcde"),
                   help="folders of the emulated runs' JSON, comma-separated (a row per folder)")
    p.add_argument("--hook-run-ms", type=hook_run_ms, default=hook_run_ms(MEASURED_HOOK_RUN_MS), metavar="N=MS,...",
                   help="per rank count, zensim_hook's run outside the scheme's stages a bucket (benchmarks/"
                   f"hook_run_overhead.py; default {MEASURED_HOOK_RUN_MS}, docs/ddp-data/recsys-25mbit/hook-run-overhead.txt)")
    p.add_argument("--run", action="store_true", help="emulate now (hold /tmp/zsim-netns.lock) and write the JSON "
                   "into --measured")
    return p


def compare(args: argparse.Namespace) -> list[list]:
    """The table's rows (`row`): every --ranks x --hooks x --measured folder, emulated first with --run."""
    ranks = [int(n) for n in args.ranks.split(",")]
    hooks = args.hooks.split(",")
    folders = [Path(f) for f in args.measured.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in ranks:
            for hook in hooks:
                if args.run:
                    path = measured_path(folders[0], hook, n, args.bandwidth)
                    write_atomic(path, json.dumps(emulate(hook, n, args.bandwidth, args), indent=1))
                trace = None
                if hook != "default":
                    trace = Path(tmp) / f"recsys-{n}.zt"
                    if not trace.exists():
                        capture(n, args, trace)
                alone = predict(hook, n, args.bandwidth, trace, args)
                for folder in folders:
                    measured = json.loads(measured_path(folder, hook, n, args.bandwidth).read_text())
                    others = measured.get("other_runnable_mean")
                    loaded = None if others is None else predict(hook, n, args.bandwidth, trace, args, others)
                    rows.append(row(n, hook, folder, measured, alone, loaded))
    return rows


def page_table() -> list[str]:
    """docs/ddp.md's table: `compare` on the committed runs (docs/ddp-data/recsys-25mbit/{a..e}) with the
    default options, as markdown (about 15 s of CPU: two captures and the predictions)."""
    import contextlib

    from md_tables import markdown_table
    from zensim.report.table import format_cell

    with contextlib.chdir(Path(__file__).resolve().parent.parent):  # the options' paths are the repository's
        rows = compare(parser().parse_args([]))
    headers = ["ranks", "hook", "set", "measured median ms (min-max)", "predicted, host alone", "error",
               "others runnable", "predicted with them", "error", "cores busy", "load average"]
    cells = [[n, "default" if hook == "default" else f'`zensim_hook("{hook}")`', folder,
              f"{format_cell(median)} ({format_cell(low)}-{format_cell(high)})", alone, err, others, loaded, err2,
              cores, load] for n, hook, folder, median, low, high, alone, err, others, loaded, err2, cores, load in rows]
    return markdown_table(headers, [[format_cell(c) for c in row] for row in cells])


def main() -> int:
    """Emulate (--run) and compare, printing the table."""
    p = parser()
    args = p.parse_args()
    if args.run and len(args.measured.split(",")) != 1:
        p.error("--run writes into one --measured folder")
    rows = compare(args)
    print(f"{SCRIPT} {' '.join(SMALL)} --batch {args.batch}, {args.steps} steps, {args.warmup} warm-up, at "
          f"{args.bandwidth} per NIC; profile {args.layers}, calibration {args.calibration}, {args.model}"
          + (f"; hook run outside the stages {args.hook_run_ms} ms" if args.hook_run_ms else ""))
    print(format_table(rows, ["ranks", "hook", "run", "measured median ms", "min", "max", "predicted alone ms",
                              "error", "others runnable", "predicted ms", "error", "cores busy", "load"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
