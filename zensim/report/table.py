"""Plain-text tables for the terminal."""

from __future__ import annotations

from collections.abc import Sequence


def format_cell(value: object, precision: int = 4) -> str:
    """Render one cell: floats with `precision` significant digits, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{precision}g}"
    return str(value)


def format_table(rows: Sequence[Sequence[object]], headers: Sequence[str], precision: int = 4) -> str:
    """Align `rows` under `headers`; numbers right-aligned, text left-aligned."""
    cells = [[format_cell(v, precision) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out)
