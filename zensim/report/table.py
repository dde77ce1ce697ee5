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


def render_records(records: list) -> str:
    """The result table: times in ms, bytes in MB (max over ranks), balance (ZEN's push and pull
    imbalance of the partition; recv imb = max/mean of the bytes ranks receive before the pull) and
    the busiest link."""
    rows = [[r.scheme, None if r.time_s is None else r.time_s * 1e3, r.vs_dense, max(r.bytes_sent) / 1e6,
             max(r.bytes_received) / 1e6, r.push_imbalance, r.pull_imbalance, r.recv_imbalance, r.busiest_link,
             r.busiest_link_util] for r in records]
    head = f"{records[0].cluster}, layout {records[0].layout}, model {records[0].model}" if records else ""
    return head + "\n" + format_table(rows, ["scheme", "time ms", "vs dense", "max sent MB", "max recv MB",
                                             "push imb", "pull imb", "recv imb", "busiest link", "util"])
