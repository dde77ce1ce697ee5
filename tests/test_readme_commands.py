"""README's first session: the `iteration` command and `sweep scenarios/iteration-deepfm.yaml`, said to be
the same runs, give the same records (issue 26: they used different clusters and gave different numbers)."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path

from zensim.cli import main
from zensim.sim.scenario import load_scenario
from zensim.sim.sweep import run_scenario

ROOT = Path(__file__).resolve().parents[1]
VOLATILE = ("wall_s", "provenance", "point", "sweep")  # when and how a record was made, and its sweep coordinates


def readme_command(name: str) -> list[str]:
    """The arguments of the README's first `.venv/bin/zensim NAME ...` command (continuation lines joined,
    the trailing comment dropped)."""
    text = (ROOT / "README.md").read_text().replace("\\\n", " ")
    line = next(ln for ln in text.splitlines() if ln.startswith(f".venv/bin/zensim {name} "))
    return shlex.split(line.split("#")[0])[1:]


def stable(records: list[dict]) -> list[dict]:
    """The records without the fields that say when, how and at which sweep point they were made, the
    trace's path resolved (the command names it from the repository, the scenario from its folder)."""
    out = [{k: v for k, v in r.items() if k not in VOLATILE} for r in records]
    for r in out:
        if r["inputs"]["trace"]:  # dense all-reduce reads no trace
            r["inputs"]["trace"]["path"] = str((ROOT / r["inputs"]["trace"]["path"]).resolve())
    return out


def test_readme_iteration_command_is_the_deepfm_scenario(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = readme_command("iteration")
    scn = load_scenario(ROOT / "scenarios" / "iteration-deepfm.yaml", out_dir=tmp_path)
    at = argv.index("--machines")
    assert [int(m) for m in argv[at + 1].split(",")] == [p.values["machines"] for p in scn.points]
    argv[at + 1] = str(scn.points[0].values["machines"])  # the first point is enough to compare the setups
    at = argv.index("--plot")
    del argv[at:at + 2]
    assert main([*argv, "--json"]) == 0
    command = json.loads(capsys.readouterr().out)
    scenario = [r.to_dict() for r in run_scenario(replace(scn, points=scn.points[:1])).results[0][1]]
    assert stable(command) == stable(scenario) and len(command) == 4
