"""docs/claims.md is what benchmarks/claims.py computes: every row regenerated (the cheap rows at
their stated settings, the committed files read again), so the page cannot go stale."""

from __future__ import annotations

from pathlib import Path

from benchmark_support import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "claims.md"


def test_page_is_what_the_script_writes():
    claims = load_benchmark("claims")
    want = claims.page().splitlines()
    got = PAGE.read_text().splitlines()
    assert [line for line in want if line not in got] == []
    assert [line for line in got if line not in want] == []
    assert got == want


def test_every_row_names_a_command_or_why_not():
    claims = load_benchmark("claims")
    for c in claims.collect(claims.NOT_ATTEMPTED):
        assert c.kind == "not attempted" and c.reason.startswith("not attempted")
    lines = PAGE.read_text().splitlines()
    rows = lines[lines.index("| --- | --- | --- | --- | --- | --- | --- | --- |") + 1:]
    for line in rows:
        cells = [x.strip() for x in line.strip("|").split(" | ")]
        assert len(cells) == 8, line
        assert cells[4] != "-" or cells[7] == "not attempted", line
        assert cells[5] in ("yes", "partly", "no", "-"), line
        assert cells[5] in ("yes", "-") or cells[6], line   # a reason wherever the shape differs
