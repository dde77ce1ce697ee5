"""A markdown table's lines: what benchmarks/doc_tables.py writes into the pages and what the benchmarks
that render their own page tables (zen_figures, zen_gap, ddp_script_vs_iteration, doc_tables_iteration)
print, from one function."""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A markdown table's lines."""
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)] + \
        ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
