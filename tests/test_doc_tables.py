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
