"""Plain-text tables for the terminal: one run, a sweep, a comparison of runs.

Every table takes `RunRecord`s (simulated or emulated alike); columns no record has a value for are
left out (an emulation has no busiest link, a simulation no correctness check). Lossy schemes (their
capabilities say lossless=False) come after the lossless ones, marked in a 'lossy' column; lines
under a table define its columns that are not self-explanatory (`footnotes`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zensim.report.record import RunRecord
from zensim.report.runs import (DENSE, LOSSY_NOTE, Run, differing, group_sweep, lossless_first, lossy_schemes,
                                run_letters, same_program, split_runs)


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


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


# (header, value of a record); a column is shown when any record has a value in it
COLUMNS: list[tuple[str, Any]] = [
    ("time ms", lambda r: _ms(r.time_s)),
    ("min ms", lambda r: _ms(min(r.emulated.times_s)) if r.emulated and len(r.emulated.times_s) > 1 else None),
    ("max ms", lambda r: _ms(max(r.emulated.times_s)) if r.emulated and len(r.emulated.times_s) > 1 else None),
    ("vs dense", lambda r: r.vs_dense),
    ("max sent MB", lambda r: max(r.bytes_sent) / 1e6 if r.bytes_sent else None),
    ("max recv MB", lambda r: max(r.bytes_received) / 1e6 if r.bytes_received else None),
    ("push imb", lambda r: r.push_imbalance),  # ZEN's push and pull imbalance of the partition
    ("pull imb", lambda r: r.pull_imbalance),
    ("recv imb", lambda r: r.recv_imbalance),  # max / mean of the bytes ranks receive before the pull
    ("busiest link", lambda r: r.busiest_link),
    ("util", lambda r: r.busiest_link_util),
    ("flushed", lambda r: r.values_flushed or None),  # non-zero values the wire's dtype rounded to zero
    ("correct", lambda r: None if not r.emulated or r.emulated.correct is None else "yes" if r.emulated.correct else "NO"),
]


# what a column means, printed under every table that shows it
DEFINITIONS = {
    "vs dense": "time / the dense ring all-reduce's time on the same cluster and trace (< 1: faster than dense)",
    "max sent MB": "the most payload MB any one rank sent (recv: received)",
    "push imb": "ZEN's partition imbalance: max over workers i, servers j of n |I_i^j| / |I_i| (1 = balanced)",
    "pull imb": "ZEN's partition imbalance: max over servers j of n |I_j| / |I| (1 = balanced)",
    "recv imb": "max / mean over ranks of the bytes received before the pull",
    "util": "the busiest link's bytes / (its capacity x the scheme's time)",
    "flushed": "non-zero values the wire's value dtype rounded to zero",
    "same as": "an earlier scheme that ran the very same program (identical message log)",
    "lossy": LOSSY_NOTE,
}


def footnotes(headers: Sequence[str], definitions: dict[str, str] = DEFINITIONS) -> str:
    """Lines defining the terms of `definitions` that `headers` show ('  vs dense: ...'), in the headers'
    order: a term is shown by a header equal to it or starting with it and a space ('d' mean' shows
    d'); empty when none is shown."""
    shown = [term for h in headers for term in definitions if h == term or h.startswith(term + " ")]
    return "".join(f"\n  {term}: {definitions[term]}" for term in dict.fromkeys(shown))


def _lossy_column(names: Sequence[str], lossy: set[str]) -> list[tuple[str, list[object]]]:
    """The 'lossy' column ('yes' on lossy schemes) when any of `names` is lossy, else nothing."""
    return [("lossy", ["yes" if n in lossy else "" for n in names])] if lossy & set(names) else []


def run_title(rec: RunRecord) -> str:
    """'16x8 GPUs, NIC 25Gbps, ..., layout zen, model fifo, work: default work model: NVIDIA H200, ...;
    trace x.zt (sha256 1a2b3c4d) iteration 0' (the work model: the first clause of its source)."""
    trace = rec.trace
    what = f"layout {rec.layout}, model {rec.model}" if rec.source == "simulated" else "emulated"
    work = str(rec.cluster.get("costs", {}).get("work_source") or "").split(";")[0]
    if work and rec.source == "simulated":
        what += f", work: {work}"
    where = f"{rec.cluster_name}, {what}"
    if trace.get("path"):
        where += f"; trace {trace['path']} (sha256 {str(trace.get('sha256', ''))[:8]}) iteration {trace.get('iteration')}"
    return where


def render_records(records: Sequence[RunRecord]) -> str:
    """The table of one run: one row per scheme; a 'same as' column names an earlier scheme that ran
    the very same program (identical message log)."""
    if not records:
        return "(no records)"
    same = same_program(records)
    lossy = lossy_schemes(records)
    records = sorted(records, key=lambda r: r.scheme in lossy)  # lossless first, each group in its order
    names = [r.scheme + (" (torch)" if r.kind == "peer" else "") for r in records]
    columns = _lossy_column([r.scheme for r in records], lossy)
    columns += [(h, [get(r) for r in records]) for h, get in COLUMNS]
    columns = [(h, vals) for h, vals in columns if any(v is not None for v in vals)]
    if same:
        columns.append(("same as", [same.get(r.scheme, "") for r in records]))
    rows = [[name, *(vals[i] for _, vals in columns)] for i, name in enumerate(names)]
    heads = [h for h, _ in columns]
    return run_title(records[0]) + "\n" + format_table(rows, ["scheme", *heads]) + footnotes(heads)


def render_sweep(records: Sequence[RunRecord]) -> str:
    """Time / dense per scheme against the first swept key, one table per combination of the other
    swept keys (the layout of docs/results.md), with the dense time in ms as the first row."""
    blocks = []
    lossy = lossy_schemes(records)
    for group, x_key, points in group_sweep(records):
        heads = [f"{x_key}={p.sweep[x_key]}" for p in points]
        schemes = lossless_first(list(dict.fromkeys(r.scheme for p in points for r in p.records)), lossy)
        marks = _lossy_column(["", *schemes], lossy)
        table: list[list[object]] = [["dense ms", *(_ms(p.dense_time()) for p in points)]]
        table += [[name, *(p.by_scheme().get(name).vs_dense if name in p.by_scheme() else None for p in points)]
                  for name in schemes]
        table = [[row[0], *(vals[i] for _, vals in marks), *row[1:]] for i, row in enumerate(table)]
        title = f"time / dense ring all-reduce{', ' + group if group else ''}"
        blocks.append(title + "\n" + format_table(table, ["scheme", *(h for h, _ in marks), *heads])
                      + "\n  dense ms: the dense ring all-reduce's time (ms); the rows below it: each scheme's "
                      "time / that" + footnotes([h for h, _ in marks]))
    return "\n\n".join(blocks)


def render(records: Sequence[RunRecord]) -> str:
    """One run's table, or a sweep's tables when the records are several points of a sweep."""
    if len({r.point for r in records}) > 1 and all(r.sweep for r in records):
        return render_sweep(records)
    return "\n\n".join(render_records(run.records) for run in split_runs(records))


def render_comparison(runs: Sequence[Run]) -> str:
    """Runs side by side: each run's time per scheme (ms) and its ratio to the first run, then the
    parameters that differ between the runs (what the comparison is about)."""
    letters = run_letters(len(runs))
    lossy = lossy_schemes([r for run in runs for r in run.records])
    schemes = lossless_first(list(dict.fromkeys(r.scheme for run in runs for r in run.records)), lossy)
    marks = _lossy_column(schemes, lossy)
    heads = ([h for h, _ in marks] + [f"{x} ms" for x in letters] + [f"{x}/A" for x in letters[1:]]
             + [f"{x} vs dense" for x in letters])
    rows = []
    for i, name in enumerate(schemes):
        recs = [run.by_scheme().get(name) for run in runs]
        times = [None if r is None else r.time_s for r in recs]
        ratios = [t / times[0] if t is not None and times[0] else None for t in times[1:]]
        rows.append([name, *(vals[i] for _, vals in marks), *(_ms(t) for t in times), *ratios,
                     *(None if r is None else r.vs_dense for r in recs)])
    notes = footnotes([h for h, _ in marks]) + ("\n  B/A: run B's time / run A's (likewise for later runs)"
                                                  if len(runs) > 1 else "") + "\n  " + (
        "A vs dense: time / the dense ring all-reduce's time in run A's own cluster and trace (likewise B, ...)")
    legend = "\n".join(f"{x} = {run.label}" for x, run in zip(letters, runs))
    diff = differing(runs)
    diffs = "\n".join(f"  {key}: " + " | ".join(f"{x}={format_cell(v)}" for x, v in zip(letters, values))
                      for key, values in diff.items())
    return (f"comparison of {len(runs)} runs\n{legend}\n" + format_table(rows, ["scheme", *heads]) + notes
            + ("\nparameters that differ:\n" + diffs if diffs else "\nno parameter differs (same trace, cluster, model)"))


__all__ = ["DENSE", "DEFINITIONS", "footnotes", "format_cell", "format_table", "render", "render_comparison", "render_records", "render_sweep",
           "run_title"]
