"""Where and when a benchmark ran, for the raw records the pages' tables are rendered from (issue 26,
item 7): the machine (CPU model, cores, memory, virtual or not), the load average at the start, the
commit, the command and the UTC time (zensim.report.provenance)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from zensim.report.provenance import provenance


def machine() -> str:
    """'2-core AMD EPYC (virtual machine), 23.5 GiB' from /proc (the cores this process may use)."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
                 "unknown CPU")
    virtual = " (virtual machine)" if " hypervisor" in cpuinfo else ""
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    kib = next((int(line.split()[1]) for line in meminfo.splitlines() if line.startswith("MemTotal:")), 0)
    return f"{len(os.sched_getaffinity(0))}-core {model}{virtual}, {kib / 2**20:.1f} GiB"


def host() -> dict[str, Any]:
    """The record's `host` block: machine, load average (1, 5, 15 min) now, and provenance."""
    return {"machine": machine(), "load": list(os.getloadavg()),
            **provenance(" ".join(["benchmarks/" + Path(sys.argv[0]).name, *sys.argv[1:]]))}
