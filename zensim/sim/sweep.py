"""Running a scenario point by point: records per point, tables, and its outputs written atomically."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from zensim.errors import ConfigError
from zensim.report.export import to_csv, to_json
from zensim.report.outputs import plot_format
from zensim.report.table import format_table, render_records
from zensim.net.costs import Costs
from zensim.sim.run import DENSE, SimRecord, simulate
from zensim.sim.scenario import Point, Scenario, plot_file

Results = list[tuple[Point, list[SimRecord]]]


def run_scenario(scn: Scenario, progress: bool = False) -> Results:
    """Simulate every point of the scenario in order; timings and logs are kept only if a timeline is asked for."""
    keep = "timeline" in scn.outputs
    results: Results = []
    bar = tqdm(scn.points, desc="sweep", unit="point", disable=None if progress and scn.is_sweep else True)
    for point in bar:
        bar.set_postfix_str(point.label(), refresh=False)
        records = simulate(scn.trace, scn.schemes, Costs.of(point.cluster, point.profile), point.model,
                           iteration=point.iteration, layout=point.layout,
                           maxmin_batch=point.maxmin_batch, options=scn.options, values=scn.values,
                           progress=progress)
        if not keep:
            for rec in records:
                rec.timing = rec.log = None
        results.append((point, records))
    return results


def rows(results: Results) -> list[dict]:
    """One row per (point, scheme): the point's index and swept values ('sweep.KEY'), then the record."""
    return [{"point": i, **{f"sweep.{k}": v for k, v in point.values.items()}, **rec.to_dict()}
            for i, (point, records) in enumerate(results) for rec in records]


def render_results(scn: Scenario, results: Results) -> str:
    """The simulate table for one point; for a sweep, time / dense per scheme against the first swept key,
    one table per combination of the other swept keys."""
    if not scn.is_sweep:
        return render_records(results[0][1])
    x_key = scn.swept[0]
    blocks = []
    for group, members in _groups(scn, results).items():
        heads = [f"{x_key}={p.values[x_key]}" for p, _ in members]
        table = [["dense ms", *(_dense_ms(recs) for _, recs in members)]]
        table += [[name, *(recs[j].vs_dense for _, recs in members)] for j, name in enumerate(scn.schemes)]
        title = f"time / dense ring all-reduce{', ' + group if group else ''}"
        blocks.append(title + "\n" + format_table(table, ["scheme", *heads]))
    return "\n\n".join(blocks)


def write_outputs(scn: Scenario, results: Results) -> None:
    """Write the scenario's outputs, all of them or none (temporary files, then renames), creating folders.
    Every path was checked when the scenario loaded."""
    table = rows(results)
    files: dict[Path, str | bytes] = {}
    if "json" in scn.outputs:
        files[scn.outputs["json"]] = to_json(table)
    if "csv" in scn.outputs:
        files[scn.outputs["csv"]] = to_csv(table)
    if "timeline" in scn.outputs:
        from zensim.report.chrome import chrome_trace
        tracks = [(f"{r.scheme} @ {p.label()}" if p.values else r.scheme, r.timing, r.log)
                  for p, recs in results for r in recs]
        files[scn.outputs["timeline"]] = json.dumps(chrome_trace(tracks))
    if "plot" in scn.outputs:
        files.update(_plots(scn, results, scn.outputs["plot"]))
    scn.files.write(files)


def _plots(scn: Scenario, results: Results, template: Path) -> dict[Path, bytes]:
    """One point: bars of time / dense. A sweep: lines of time / dense against the GPU count, one figure per
    combination of the other swept keys (named by the {KEY} placeholders of the path)."""
    from zensim.report.plots import figure_bytes, scaling_figure, vs_dense_figure

    if not scn.is_sweep:
        return {template: figure_bytes(vs_dense_figure([r.to_dict() for r in results[0][1]]), plot_format(template))}
    out = {}
    for group, members in _groups(scn, results).items():
        lines = {name: {p.cluster.gpus: recs[j].vs_dense for p, recs in members if recs[j].vs_dense is not None}
                 for j, name in enumerate(scn.schemes)}
        lines = {name: line for name, line in lines.items() if line}
        path = plot_file(template, members[0][0], scn.swept[0])
        if not lines:
            raise ConfigError(f"{path}: nothing to plot{', ' + group if group else ''} (no scheme has a time here)")
        title = f"{scn.path.name}: {members[0][0].model}" if "model" not in scn.swept[1:] else scn.path.name
        out[path] = figure_bytes(scaling_figure(lines, title=f"{title}, {group}" if group else title), plot_format(path))
    return out


def _groups(scn: Scenario, results: Results) -> dict[str, list[tuple[Point, list[SimRecord]]]]:
    """Points grouped by their values of every swept key but the first ('model=fifo'), in sweep order."""
    out: dict[str, list[tuple[Point, list[SimRecord]]]] = {}
    for point, records in results:
        key = ", ".join(f"{k}={point.values[k]}" for k in scn.swept[1:])
        out.setdefault(key, []).append((point, records))
    return out


def _dense_ms(records: Sequence[SimRecord]) -> float | None:
    """Dense ring all-reduce time in ms at this point (simulate always runs it as the reference)."""
    dense = next((r for r in records if r.scheme == DENSE), None)
    if dense is not None and dense.time_s is not None:
        return dense.time_s * 1e3
    vs = next((r.vs_dense for r in records if r.vs_dense), None)
    t = next((r.time_s for r in records if r.vs_dense), None)
    return t / vs * 1e3 if vs and t is not None else None
