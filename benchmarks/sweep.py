"""Sweeps: Dask against one process, resume after a kill, and the message-log cache.

    .venv/bin/python benchmarks/sweep.py dask  [--workers 2] [--gpus-per-machine 8]
                                                               # 200 points: sequential vs a local Dask
                                                               # cluster (ratio), then kill a Dask run half-way
                                                               # (SIGKILL to its process group) and resume it
    .venv/bin/python benchmarks/sweep.py cache                 # scenarios/scaling-lstm.yaml with a NIC axis:
                                                               # no cache, cold cache, warm cache

Every figure is measured in this one run, back to back; rows are compared without the fields that
say when and how fast they were made (wall_s, driver_s, log_cached, provenance). CPU seconds (user +
system, this process and its reaped children: the Dask workers and the sweep subprocesses) are printed
beside wall seconds, with the load average. Run it under `flock /tmp/zsim-bench.lock` on the shared
machine.
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from zensim.sim.scenario import load_scenario
from zensim.sim.sweep import records_of, run_scenario

ROOT = Path(__file__).resolve().parents[1]
VOLATILE = ("wall_s", "driver_s", "log_cached", "provenance")

# 4 x 5 x 5 x 2 = 200 points of the 128-worker LSTM trace at 2-16 machines x g GPUs (ZEN's layout; g from
# --gpus-per-machine, default 8: up to 128 ranks), five schemes, no cache: each point runs the driver and
# replays five logs, so the cluster's start and the per-task traffic are small beside the work
DASK_SCENARIO = {
    "trace": str(ROOT / "traces" / "lstm-lm-128w.zt"),
    "cluster": {"gpus_per_machine": 8},
    "schemes": ["dense-allreduce", "zen", "sparcml", "agsparse-ring", "sparse-ps"],
    "sweep": {"machines": [2, 4, 8, 16], "nic": ["10Gbps", "25Gbps", "50Gbps", "100Gbps", "200Gbps"],
              "nic_latency": ["2us", "5us", "10us", "25us", "50us"], "model": ["fifo", "maxmin"]},
    "outputs": {"csv": "rows.csv"},
}


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that were waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def stable(outcome) -> list[dict]:
    """The records without the fields that say when and how fast they were made."""
    return [{k: v for k, v in r.to_dict().items() if k not in VOLATILE} for r in records_of(outcome.results)]


def csv_rows(path: Path) -> list[dict]:
    """A results CSV's rows without the volatile columns."""
    with open(path) as f:
        return [{k: v for k, v in row.items() if k.split(".")[0] not in VOLATILE} for row in csv.DictReader(f)]


def kept_points(store: Path) -> int:
    """Points kept so far in a cache folder."""
    return sum(1 for p in (store / "points").rglob("*") if p.is_file() and not p.name.endswith(".tmp"))


def bench_dask(workers: int, gpus_per_machine: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        scn_path = tmp / "s.yaml"
        scn_path.write_text(yaml.safe_dump({**DASK_SCENARIO, "cluster": {"gpus_per_machine": gpus_per_machine}}))
        scn = load_scenario(scn_path, tmp / "seq")
        points = len(scn.points)
        print(f"{points} points x {len(scn.schemes)} schemes, 2-16 machines x {gpus_per_machine} GPUs, no cache, "
              f"{os.cpu_count()} cores (shared); "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
        t0, c0 = time.perf_counter(), cpu_seconds()
        seq = run_scenario(scn)
        t_seq, c_seq = time.perf_counter() - t0, cpu_seconds() - c0
        print(f"  sequential (one process)        {t_seq:7.1f} s wall {c_seq:7.1f} s CPU   load {os.getloadavg()[0]:.1f}",
              flush=True)
        t0, c0 = time.perf_counter(), cpu_seconds()
        dask = run_scenario(scn, workers=workers)
        t_dask, c_dask = time.perf_counter() - t0, cpu_seconds() - c0
        same = stable(seq) == stable(dask)
        print(f"  local Dask cluster, {workers} workers   {t_dask:7.1f} s wall {c_dask:7.1f} s CPU   load "
              f"{os.getloadavg()[0]:.1f}   ratio Dask / sequential (wall) {t_dask / t_seq:.3f}   rows identical: {same}",
              flush=True)
        # kill a Dask run half-way (the whole process group, SIGKILL: no cleanup), then resume it
        from zensim.report.record import results_csv
        (tmp / "seq").mkdir(exist_ok=True)
        (tmp / "seq" / "rows.csv").write_text(results_csv(records_of(seq.results)))
        store, out = tmp / "cache", tmp / "run"
        cmd = [sys.executable, "-m", "zensim.cli", "sweep", str(scn_path), "--out", str(out), "--workers",
               str(workers), "--cache", str(store)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        while kept_points(store) < points // 2 and proc.poll() is None:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        time.sleep(1.0)  # let orphaned workers notice
        killed_at = kept_points(store)
        t0, c0 = time.perf_counter(), cpu_seconds()
        rerun = subprocess.run(cmd, capture_output=True, text=True)
        t_rerun, c_rerun = time.perf_counter() - t0, cpu_seconds() - c0
        summary = next(line for line in rerun.stderr.splitlines() if line.startswith(f"{points} points:"))
        print(f"  killed (SIGKILL) with {killed_at} of {points} points kept; rerun ({t_rerun:.1f} s wall, {c_rerun:.1f} s "
              f"CPU): {summary}")
        print(f"  resumed rows identical to the sequential run: {csv_rows(out / 'rows.csv') == csv_rows(tmp / 'seq' / 'rows.csv')}")
        leftovers = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
        print(f"  processes left in the killed run's process group: {len(leftovers)}")


def bench_cache() -> None:
    raw = yaml.safe_load((ROOT / "scenarios" / "scaling-lstm.yaml").read_text())
    raw["trace"]["path"] = str(ROOT / "traces" / "lstm-lm-128w.zt")
    raw["sweep"] = {"machines": raw["sweep"]["machines"], "nic": ["10Gbps", "25Gbps", "100Gbps"],
                    "model": raw["sweep"]["model"]}
    raw["outputs"] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "s.yaml").write_text(yaml.safe_dump(raw))
        scn = load_scenario(tmp / "s.yaml", tmp)
        print(f"scenarios/scaling-lstm.yaml with nic: [10Gbps, 25Gbps, 100Gbps]: {len(scn.points)} points x "
              f"{len(scn.schemes)} schemes, one process, 2 cores (shared)")
        runs = {}
        for name, store in (("no cache", None), ("cold cache", tmp / "cache"), ("warm cache", tmp / "cache")):
            t0 = time.perf_counter()
            outcome = run_scenario(scn, store=store, fresh=True)  # fresh: simulate every point, use only the log cache
            wall = time.perf_counter() - t0
            recs = records_of(outcome.results)
            driver = sum(r.simulated.driver_s for r in recs)
            runs[name] = (wall, driver, stable(outcome), sum(r.simulated.log_cached for r in recs), len(recs))
        base_wall, base_driver, base_rows, _, _ = runs["no cache"]
        for name, (wall, driver, rows, hits, count) in runs.items():
            print(f"  {name:10s}  wall {wall:7.1f} s  driver {driver:7.1f} s  logs from cache {hits:4d}/{count}  "
                  f"driver time saved {1 - driver / base_driver:6.1%}  wall / no cache {wall / base_wall:.3f}  "
                  f"rows identical: {rows == base_rows}")


def main() -> None:
    """Parse and run one benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("dask", "cache"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--gpus-per-machine", type=int, default=8, help="dask: GPUs per machine of every point")
    args = ap.parse_args()
    bench_dask(args.workers, args.gpus_per_machine) if args.what == "dask" else bench_cache()


if __name__ == "__main__":
    main()
