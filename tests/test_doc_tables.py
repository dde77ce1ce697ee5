"""The pages' figure tables that benchmarks/doc_tables.py makes are what it computes now: each one rebuilt
(seconds each) and compared line by line with its page, so no page can go stale (issue 26, item 7)."""

from __future__ import annotations

import pytest
from benchmark_support import ROOT, load_benchmark

doc_tables = load_benchmark("doc_tables")


@pytest.mark.parametrize("name", list(doc_tables.TABLES))
def test_page_table_is_what_the_script_computes(name):
    page, make = doc_tables.TABLES[name]
    assert doc_tables.page_table((ROOT / page).read_text(), name) == make()


def test_write_replaces_only_the_table():
    text = "intro\n" + doc_tables.marker("t") + "\n| a |\n|---|\n| 1 |\n\nafter | not a table\n"
    assert doc_tables.replace_table(text, "t", ["| a |", "|---|", "| 2 |", "| 3 |"]) == \
        "intro\n" + doc_tables.marker("t") + "\n| a |\n|---|\n| 2 |\n| 3 |\n\nafter | not a table\n"


@pytest.mark.parametrize("trace, iterations, name", [("digits-cnn-16w.zt", (0, 50), "exdyna-claims-digits"),
                                                     ("digits-cnn-16w-warm.zt", (0, 100), "exdyna-claims-digits-warm")])
def test_exdyna_claims_csv_is_what_the_script_writes(trace, iterations, name):
    """The committed CSV files the ExDyna tables are read from, re-run on the shipped traces (seconds)."""
    from zensim.trace.format import Trace
    from zensim.trace.gradients import TraceGradients

    exdyna_claims = load_benchmark("exdyna_claims")
    with Trace.open(ROOT / "traces" / trace) as t:
        rows = exdyna_claims.analyse(TraceGradients(t), *iterations, 0.01, None, False)
    assert exdyna_claims.csv_text(rows).encode() == (ROOT / "docs" / f"{name}.csv").read_bytes()


def test_every_marker_names_a_table_of_its_page():
    """A `<!-- table NAME: benchmarks/doc_tables.py -->` line no script renders would be a table no test checks."""
    pages = [ROOT / "traces" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = {(line.split()[2].rstrip(":"), str(page.relative_to(ROOT))) for page in pages
             for line in page.read_text().splitlines() if line.endswith(": benchmarks/doc_tables.py -->")}
    assert found == {(name, page) for name, (page, _) in doc_tables.TABLES.items()}


def test_record_run_keeps_the_output_with_its_provenance(tmp_path):
    """benchmarks/record_run.py: the command's JSON output, the commit and the machine in a .json.gz record."""
    import gzip
    import json
    import subprocess
    import sys

    out = tmp_path / "run.json.gz"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "record_run.py"), "-o", str(out), "--",
                    sys.executable, "-c", "print('{\"rows\": [1, 2]}')"], cwd=ROOT, check=True, capture_output=True)
    rec = json.loads(gzip.decompress(out.read_bytes()))
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert rec["output"] == {"rows": [1, 2]} and rec["commit"] == head
    assert "-core " in rec["machine"] and len(rec["load_before"]) == 3 and rec["wall_s"] > 0


def test_record_run_holds_its_locks_around_the_command(tmp_path):
    """--lock: the command runs while record_run holds the lock files (a non-blocking flock from inside fails),
    and the record names them."""
    import json
    import subprocess
    import sys

    out, locks = tmp_path / "run.json", [str(tmp_path / "a.lock"), str(tmp_path / "b.lock")]
    probe = ("import fcntl, json, os, sys\nheld = []\nfor p in sys.argv[1:]:\n    fd = os.open(p, os.O_RDONLY)\n"
             "    try:\n        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n        held.append(False)\n"
             "    except BlockingIOError:\n        held.append(True)\nprint(json.dumps(held))")
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "record_run.py"), "-o", str(out), "--lock", locks[0],
                    "--lock", locks[1], "--", sys.executable, "-c", probe, *locks], cwd=ROOT, check=True,
                   capture_output=True)
    rec = json.loads(out.read_text())
    assert rec["output"] == [True, True] and rec["locks"] == locks and rec["lock_wait_s"] >= 0


@pytest.mark.parametrize("argv, message", [(["-o", "{out}", "--", "false"], "false exited 1; {out} not written"),
                                           (["-o", "{out}.txt", "--", "true"], "must be a .json or .json.gz file")])
def test_record_run_refuses_and_writes_nothing(tmp_path, argv, message):
    """A failed command or a record that is not JSON: one line naming it, exit 1 or 2, no file."""
    import subprocess
    import sys

    out = tmp_path / "run.json"
    argv = [a.format(out=out) for a in argv]
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "record_run.py"), *argv], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode in (1, 2) and message.format(out=out) in proc.stderr.strip().splitlines()[-1]
    assert list(tmp_path.iterdir()) == []
