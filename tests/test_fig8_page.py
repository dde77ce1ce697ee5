"""docs/results.md's Fig. 8 tables are what benchmarks/fig8.py computes: a cheap column per network model re-run."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmark_support import load_benchmark

from zensim.net.profile import WorkCost

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results.md"


def _page_column(title: str, column: str) -> dict[str, str]:
    """The cells of `column` in the page's table under the line starting with `title`, by row label."""
    lines = PAGE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    table = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip("|").split("|")])
        elif table:
            break
    at = table[0].index(column)
    return {row[0]: row[at] for row in table[2:]}


@pytest.mark.parametrize("model, column", [("fifo", "8x1"), ("maxmin", "16x8")])
def test_page_zero_work_column_is_what_the_script_computes(model, column):
    """One cheap column per network model (maxmin's in ZEN's layout: its sharing is where the page went
    stale once)."""
    fig8 = load_benchmark("fig8")
    page = _page_column(fig8.table_title(model, "zero"), column)
    schemes = [label for label in page if label != "dense all-reduce, ms"]
    assert set(schemes) == set(fig8.SCHEMES)
    col = fig8.run_column(column, model, WorkCost.zero(), schemes)
    assert page["dense all-reduce, ms"] == fig8.cell(col["dense_s"] * 1e3)
    assert {s: page[s] for s in schemes} == {s: fig8.cell(col["ratios"][s]) for s in schemes}
