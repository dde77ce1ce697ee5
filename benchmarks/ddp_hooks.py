"""docs/ddp.md's three hooks on the emulated cluster: benchmarks/ddp_train.py (lstm-lm, 30 steps) on 4 ranks
at 25 Mbit/s per NIC direction under DDP's default hook, `zensim_hook("zen", dense_above=0.5)` and
`zensim_hook("zen")`, back to back, same seed and data; then each zensim run's trained parameters against
the default's (largest absolute difference, allclose at rtol 1e-5, atol 1e-6).

Needs root and the emulation testbed (ip, tc: docs/emulation.md); run it holding both locks:

    flock /tmp/zsim-netns.lock flock /tmp/zsim-bench.lock .venv/bin/python benchmarks/ddp_hooks.py --json FILE

--json FILE writes every run's `zensim emulate --json` document, rank 0's printed lines (its steps' seconds,
last loss, the hook's traffic), the comparison, the machine, the load average before and after, the commit
and the time (docs/ddp.md's table is rendered by benchmarks/doc_tables.py from the committed
docs/ddp-data/hooks.json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from run_record import host
from zensim.atomic import write_atomic

SCRIPT = Path(__file__).resolve().parent / "ddp_train.py"
HOOKS = {"default": ["--hook", "default"], "zen-dense-above-0.5": ["--hook", "zen", "--dense-above", "0.5"],
         "zen": ["--hook", "zen"]}


def emulate(name: str, folder: Path, steps: int) -> dict:
    """One `zensim emulate --script` run of hook `name`: its --json document and rank 0's lines."""
    logs, saved = folder / f"logs-{name}", folder / f"{name}.pt"
    command = [sys.executable, "-m", "zensim.cli", "emulate", "--ranks", "4", "--nic", "25mbit", "--script",
               str(SCRIPT), "--json", "--logs", str(logs), "--", *HOOKS[name], "--steps", str(steps), "--save", str(saved)]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"ddp_hooks: {name}: zensim emulate failed: {run.stderr.strip()}")
    return {"name": name, "args": HOOKS[name], "emulate": json.loads(run.stdout),
            "rank0": (logs / "rank0.log").read_text().splitlines()}


def compare(mine: Path, default: Path) -> dict:
    """A run's trained parameters against the default hook's."""
    a, b = torch.load(mine), torch.load(default)
    return {"max_abs_diff": max(float((a[k] - b[k]).abs().max()) for k in b),
            "largest_abs_value": max(float(b[k].abs().max()) for k in b), "tensors": len(b),
            "allclose": [k for k in b if torch.allclose(a[k], b[k], rtol=1e-5, atol=1e-6)]}


def main() -> int:
    """Run the three hooks, compare the parameters, print and write the record."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--json", metavar="FILE", help="also write the record as JSON to FILE")
    args = parser.parse_args()
    start = host()
    with tempfile.TemporaryDirectory(prefix="zsim-ddp-hooks-") as folder:
        runs = [emulate(name, Path(folder), args.steps) for name in HOOKS]
        for run in runs[1:]:
            run["parameters_vs_default"] = compare(Path(folder) / f"{run['name']}.pt", Path(folder) / "default.pt")
    for run in runs:
        print(run["name"], f"median {run['emulate']['median_s'] * 1e3:.0f} ms", *run["rank0"],
              run.get("parameters_vs_default", ""), sep="\n  ")
    if args.json:
        write_atomic(args.json, json.dumps({"host": start, "load_after": os.getloadavg(), "runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
