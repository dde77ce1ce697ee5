"""Cost of `zensim capture --script --ranks N` on benchmarks/recsys_ddp.py, a DDP script that is
not a zensim workload: wall, user and system CPU and peak resident memory of the capture process, and the
trace's size, for each N (docs/capture.md, "Cost").

Each capture runs `--warmup 2 --iterations 5 --params 'items.*,users.*'` with `--samples` = N x 32 x 7, so
that one epoch is the 7 steps (the script runs to its end, every step N forward/backward passes). The
figures depend on the machine and its load: run under the bench lock; --json FILE writes them with the
machine, the load average before and after, the commit and the time (docs/capture.md's table is rendered
by benchmarks/doc_tables.py from the committed docs/capture-data/virtual-ranks.json).

    flock /tmp/zsim-bench.lock .venv/bin/python benchmarks/capture_virtual.py [--ranks 1 32 64] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run_record import host
from zensim.atomic import write_atomic
from zensim.report.table import format_table

SCRIPT = Path(__file__).resolve().parent / "recsys_ddp.py"


def capture(ranks: int, folder: Path) -> dict[str, float]:
    """One capture of `ranks` virtual ranks into `folder`: its process's wall, CPU and peak memory, the trace's
    bytes."""
    out = folder / f"recsys-{ranks}.zt"
    command = [sys.executable, "-m", "zensim.cli", "capture", "--script", str(SCRIPT), "--ranks", str(ranks),
               "--warmup", "2", "--iterations", "5", "--params", "items.*,users.*", "-o", str(out), "--",
               "--samples", str(ranks * 32 * 7)]
    errors = folder / f"recsys-{ranks}.stderr"
    with errors.open("w") as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)  # this child's own CPU and peak memory
        wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"capture_virtual: --ranks {ranks} failed: {errors.read_text().strip()}")
    return {"ranks": ranks, "wall_s": wall, "user_s": usage.ru_utime, "system_s": usage.ru_stime,
            "peak_rss_kib": usage.ru_maxrss, "trace_bytes": out.stat().st_size}


def main() -> int:
    """Run the captures, print the table, write --json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", nargs="+", type=int, default=[1, 32, 64])
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    start = host()
    with tempfile.TemporaryDirectory(prefix="zsim-capture-virtual-") as folder:
        rows = [capture(n, Path(folder)) for n in args.ranks]
    keys = list(rows[0])
    print(format_table([[r[k] for k in keys] for r in rows], keys))
    print(f"{start['machine']}; load average (1 min) before {start['load'][0]:.2f}, after {os.getloadavg()[0]:.2f}")
    if args.json:
        write_atomic(args.json, json.dumps({"host": start, "load_after": os.getloadavg(), "runs": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
