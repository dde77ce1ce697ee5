"""Replay growth: events, events/s, CPU seconds and memory per message of the compiled replays as the
cluster grows (issue 27, item 3).

For each shape - one GPU per machine at each of `--flat` ranks (default 256,512,1024,2048), and
ZEN's layout at `--layout` MACHINESxGPUS (default 128x8,256x8) - and each of `--schemes` (default
zen,dense-allreduce), the driver makes the message log once in a process of its own (saved to a
temporary .npz, not timed; its CPU seconds and peak RSS printed), then each of `--models` (default maxmin, the batched default, and fifo)
replays it alone in a fresh process: the log loaded and the compiled loop loaded (a two-rank replay)
before the clock starts, so what is timed and measured is the replay. Printed per replay: messages,
events, CPU and wall seconds, events per CPU second, the process's peak RSS, and the replay's own
bytes per message ((peak RSS - RSS before the replay) / messages); then the growth exponents
between successive flat sizes (log(x2/x1) / log(n2/n1)) of CPU seconds, events and replay bytes.
`--lock F` takes an exclusive lock on file F (the team's bench lock) once the drivers have made
every log, and holds it while the replays run, one at a time. `--vs DIR`: each replay also run with
DIR first on PYTHONPATH (another checkout, the baseline), alternated with this one on the same log, the
rows labelled `vs` and `this`, and the ratios this / vs printed. `--timeout` bounds each replay (default 900 s; a replay cut off is reported as
such); `--json F` writes the rows. `--general`: each replay on the general path instead (the log's ranks a
client of the network, on its Python event loop: what other clients or a SimPy clock get).

The trace: `zensim trace synth --workers W --numel 10000000 --density 0.01 --overlap 0.3 --skew 4
--seed 1` with W the largest shape's GPUs (written once to a temporary directory, not timed), or `--trace`.

    .venv/bin/python benchmarks/growth.py [--flat 256,512,1024,2048] [--layout 128x8,256x8]
        [--schemes zen,dense-allreduce] [--models maxmin,fifo] [--lock /tmp/zsim-bench.lock] [--json F] [--general]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np

from zensim.layout import place, prepare_trace
from zensim.net.costs import Costs
from zensim.net.network import Network
from zensim.net.replay import LogReplay, Timing, replay
from zensim.net.topology import ClusterSpec
from zensim.run import Tables
from zensim.run.log import Message, MessageLog
from zensim.schemes import build_scheme
from zensim.trace.format import Trace
from zensim.trace.synth import SynthParams, synthesize

BANDWIDTH = 25e9 / 8  # bytes/s per NIC, as benchmarks/simulate.py


def rss_bytes() -> int:
    """Resident memory of this process now."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def drive(trace: str, machines: int, gpus: int, scheme: str, out: str) -> dict:
    """Make scheme's message log on machines x gpus from the trace's first iteration; save its columns."""
    t0, c0 = time.perf_counter(), time.process_time()
    with Trace.open(trace) as tr:
        prep = prepare_trace(tr, 0, machines, gpus, "zen")
    log = place(prep, lambda n, size, part: build_scheme(scheme, n, size, tables=tables), tables := Tables()).log
    np.savez(out, n=log.n, stages=log.num_stages, stage=log.stage, src=log.src, dst=log.dst, nbytes=log.nbytes,
             fmt=log.fmt, fmt_names=np.array(log.fmt_names), w_stage=log.w_stage, w_rank=log.w_rank,
             w_phase=log.w_phase, w_elements=log.w_elements, w_kind=log.w_kind, kind_names=np.array(log.kind_names),
             w_launches=log.w_launches)
    return {"messages": len(log), "driver_wall_s": time.perf_counter() - t0, "driver_cpu_s": time.process_time() - c0,
            "driver_peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def load(path: str) -> MessageLog:
    """A log saved by `drive`."""
    z = np.load(path)
    return MessageLog.from_columns(int(z["n"]), int(z["stages"]), (z["stage"], z["src"], z["dst"], z["nbytes"]),
                                   z["fmt"], z["fmt_names"].tolist(), (z["w_stage"], z["w_rank"], z["w_phase"],
                                   z["w_elements"]), z["w_kind"], z["kind_names"].tolist(),
                                   launches=z["w_launches"])


def general(log: MessageLog, costs: Costs, model: str) -> Timing:
    """The log replayed on the general path: its ranks started as a client of the network, on the
    network's Python event loop (what other clients or a SimPy clock get)."""
    net = Network(costs, model)
    client = LogReplay(net, log)
    client.start()
    net.run()
    return client.timing()


def time_replay(path: str, machines: int, gpus: int, model: str, on_general: bool = False) -> dict:
    """Replay the saved log alone on `model` (this process), compiled (`on_general`: on the general
    path): the compiled code loaded first (a two-rank replay, two flows sharing a link), then timed."""
    log = load(path)
    run = general if on_general else replay
    tiny = MessageLog(2, 1, [Message(0, 0, 1, 1000, "coo"), Message(0, 1, 0, 1000, "coo"),
                             Message(0, 0, 1, 3000, "coo")])
    run(tiny, Costs(ClusterSpec(2, 1, BANDWIDTH)), model)  # load the compiled code (not timed)
    costs = Costs(ClusterSpec(machines, gpus, BANDWIDTH))
    before = rss_bytes()
    t0, c0 = time.perf_counter(), time.process_time()
    timing = run(log, costs, model)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"events": timing.events, "cpu_s": cpu, "wall_s": wall, "events_per_cpu_s": timing.events / max(cpu, 1e-9),
            "peak_rss": peak, "rss_before": before, "replay_bytes_per_message": (peak - before) / max(len(log), 1),
            "makespan_s": timing.makespan}


@contextmanager
def locked(path: str):
    """An exclusive lock on file `path` while the block runs."""
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def child(args: list, timeout: float | None = None, code: str | None = None) -> dict | str:
    """Run this script's --child mode with `args` (with checkout `code` first on PYTHONPATH); its JSON, or
    why it gave none."""
    env = None if code is None else {**os.environ, "PYTHONPATH": os.pathsep.join(
        [code] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    try:
        out = subprocess.run([sys.executable, __file__, "--child", json.dumps(args)], capture_output=True, text=True,
                             timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return f"cut off after {timeout:.0f} s"
    if out.returncode:
        return f"failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}"
    return json.loads(out.stdout)


def exponents(points: list[tuple[int, float]]) -> str:
    """Growth exponents log(x2/x1) / log(n2/n1) between successive (n, x) points."""
    return " ".join(f"{math.log(x2 / x1) / math.log(n2 / n1):.2f}" for (n1, x1), (n2, x2) in zip(points, points[1:])
                    if x1 > 0 and x2 > 0)


def main() -> None:
    """Run the benchmark and print its table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=None)
    ap.add_argument("--flat", default="256,512,1024,2048", help="ranks, one GPU per machine ('' for none)")
    ap.add_argument("--layout", default="128x8,256x8", help="ZEN's layout, MACHINESxGPUS ('' for none)")
    ap.add_argument("--schemes", default="zen,dense-allreduce")
    ap.add_argument("--models", default="maxmin,fifo")
    ap.add_argument("--lock", default=None, help="a lock file held around each timed replay")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per replay")
    ap.add_argument("--vs", default=None, help="a baseline checkout: each replay also run with it, alternated")
    ap.add_argument("--general", action="store_true", help="replay on the general path (the network's Python event "
                                                           "loop), not the compiled loop")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        what, *rest = json.loads(args.child)
        print(json.dumps(drive(*rest) if what == "drive" else time_replay(*rest)))
        return
    shapes = [(n, 1) for n in map(int, filter(None, args.flat.split(",")))]
    shapes += [tuple(int(x) for x in s.split("x")) for s in filter(None, args.layout.split(","))]
    schemes, models = args.schemes.split(","), args.models.split(",")
    rows = []
    codes = [("vs", args.vs), ("this", None)] if args.vs else [("this", None)]
    print(f"{'shape':>8} {'scheme':16} {'model':7} {'code':4} {'messages':>9} {'events':>10} {'cpu s':>8} {'wall s':>8} "
          f"{'events/s':>9} {'peak GiB':>8} {'B/msg':>6}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        trace = args.trace
        if trace is None:
            trace = str(Path(tmp) / "growth.zt")
            workers = max(m * g for m, g in shapes)
            synthesize(trace, workers, [("synthetic", 10_000_000)], SynthParams(density=0.01, overlap=0.3, skew=4.0),
                       seed=1)
        logs = []
        for machines, gpus in shapes:
            for scheme in schemes:
                path = str(Path(tmp) / f"{machines}x{gpus}-{scheme}.npz")
                made = child(["drive", trace, machines, gpus, scheme, path])
                if isinstance(made, str):
                    print(f"{machines}x{gpus} {scheme}: driver {made}", flush=True)
                else:
                    print(f"{machines}x{gpus} {scheme}: driver {made['messages']} messages, {made['driver_cpu_s']:.1f} s "
                          f"CPU, peak RSS {made['driver_peak_rss'] / 2**30:.2f} GiB", flush=True)
                    logs.append((machines, gpus, scheme, path, made))
        with locked(args.lock) if args.lock else nullcontext():
            for machines, gpus, scheme, path, made in logs:
                for model in models:
                    for label, code in codes:
                        got = child(["replay", path, machines, gpus, model, args.general], args.timeout, code)
                        row = {"machines": machines, "gpus": gpus, "scheme": scheme, "model": model, "code": label,
                               **made}
                        head = f"{machines:>4}x{gpus:<3} {scheme:16} {model:7} {label:4} {made['messages']:9d}"
                        if isinstance(got, str):
                            row["error"] = got
                            print(f"{head} {got}", flush=True)
                        else:
                            row.update(got)
                            print(f"{head} {got['events']:10d} {got['cpu_s']:8.2f} {got['wall_s']:8.2f} "
                                  f"{got['events_per_cpu_s']:9,.0f} {got['peak_rss'] / 2**30:8.2f} "
                                  f"{got['replay_bytes_per_message']:6.0f}", flush=True)
                        rows.append(row)
                    if args.vs and "cpu_s" in rows[-1] and "cpu_s" in rows[-2]:
                        a, b = rows[-1], rows[-2]
                        grew = [r["peak_rss"] - r["rss_before"] for r in (a, b)]
                        print(f"{'':8} this / vs: cpu x{a['cpu_s'] / b['cpu_s']:.2f}, replay bytes "
                              + (f"x{grew[0] / grew[1]:.2f}" if min(grew) > 0 else "n/a") + ", "
                              f"same events and makespan: {a['events'] == b['events'] and a['makespan_s'] == b['makespan_s']}",
                              flush=True)
                Path(path).unlink(missing_ok=True)
    print("\ngrowth exponents between successive flat sizes (cpu s, events, replay bytes):")
    for scheme in schemes:
        for model in models:
            for label, _ in codes:
                mine = [r for r in rows if r["scheme"] == scheme and r["model"] == model and r["gpus"] == 1
                        and r["code"] == label and "cpu_s" in r]
                n = [r["machines"] for r in mine]
                print(f"  {scheme:16} {model:7} {label:4} n {','.join(map(str, n))}: cpu "
                      f"{exponents([(r['machines'], r['cpu_s']) for r in mine])}; events "
                      f"{exponents([(r['machines'], r['events']) for r in mine])}; bytes "
                      f"{exponents([(r['machines'], r['peak_rss'] - r['rss_before']) for r in mine])}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
