"""Run a benchmark command and keep its output with the run's provenance, for the pages' committed records.

Writes FILE (gzip when it ends in .gz) only after the command exits 0: the command line, the commit of
the working directory (and the tracked files changed from it), the UTC start and end, the machine (CPU model,
cores, memory), the load averages before and after, the command's wall time, user and system CPU seconds
and peak resident memory (of its largest process), and its standard output (parsed when it is JSON).
With `--lock FILE` (repeatable) it holds those lock files (flock, as `flock FILE` does) around the command and
records them and the time it waited for them; the timing starts once they are held.
A record of benchmarks/doc_tables.py's tables whose run is too long or too costly for a test.

    .venv/bin/python benchmarks/record_run.py -o docs/iteration-data/NAME.json[.gz] [--commit HASH] -- COMMAND ...
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import gzip
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence

from run_record import machine  # benchmarks/run_record.py: the machine as the other records name it
from zensim.atomic import write_atomic


def git_commit(cwd: str) -> dict[str, object]:
    """The working directory's commit and the tracked files that differ from it (none: the commit's code)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True,
                           text=True, check=True).stdout
    return {"commit": head.strip(), "local_changes": [line[3:] for line in dirty.splitlines()]}


def utc_now() -> str:
    """The time now, UTC, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def held(paths: Sequence[str]):
    """Hold exclusive flocks on the lock files, in order (blocking); yield the seconds spent waiting for them."""
    with contextlib.ExitStack() as stack:
        start = time.perf_counter()
        for path in paths:
            fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
            stack.callback(os.close, fd)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; write its record only if it succeeded."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", required=True, help="the record (.json or .json.gz)")
    p.add_argument("--commit", default=None, help="the commit the working directory's code was extracted from "
                   "(`git archive`) when it is not a checkout")
    p.add_argument("--lock", action="append", default=[], metavar="FILE",
                   help="a lock file to hold around the command (repeatable, taken in order)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("no command after --")
    if not args.output.endswith((".json", ".json.gz")):
        p.error(f"-o {args.output}: the record must be a .json or .json.gz file")
    source = {"commit": args.commit, "extracted": True} if args.commit else git_commit(os.getcwd())
    record = {"command": command, **source, "machine": machine()}
    with held(args.lock) as waited:
        if args.lock:
            record.update({"locks": args.lock, "lock_wait_s": waited})
        record.update({"start_utc": utc_now(), "load_before": list(os.getloadavg())})
        start = time.perf_counter()
        proc = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        record.update({"end_utc": utc_now(), "load_after": list(os.getloadavg()),
                       "wall_s": time.perf_counter() - start, "user_s": usage.ru_utime, "system_s": usage.ru_stime,
                       "peak_rss_mb": usage.ru_maxrss / 1024})
    if proc.returncode != 0:
        print(f"record_run: {command[0]} exited {proc.returncode}; {args.output} not written", file=sys.stderr)
        return 1
    try:
        record["output"] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        record["output_text"] = proc.stdout
    text = json.dumps(record, indent=1) + "\n"
    write_atomic(args.output, gzip.compress(text.encode(), mtime=0) if args.output.endswith(".gz") else text)
    print(f"record_run: {args.output} ({record['wall_s']:.1f} s wall, {record['user_s']:.1f} + "
          f"{record['system_s']:.1f} s CPU, {record['peak_rss_mb']:.0f} MB, load {record['load_before'][0]:.2f} -> "
          f"{record['load_after'][0]:.2f})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
