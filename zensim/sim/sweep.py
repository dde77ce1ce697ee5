"""Running a scenario point by point: records per point, tables, and its outputs written all or none."""

from __future__ import annotations

import json
from pathlib import Path

from tqdm import tqdm

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.report.outputs import plot_format
from zensim.report.provenance import provenance
from zensim.report.record import RunRecord, results_csv, results_json
from zensim.report.runs import group_sweep
from zensim.report.table import render
from zensim.sim.run import simulate
from zensim.sim.scenario import Point, Scenario, plot_file

Results = list[tuple[Point, list[RunRecord]]]


def run_scenario(scn: Scenario, progress: bool = False, command: str | None = None) -> Results:
    """Simulate every point of the scenario in order; timings and logs are kept only if a timeline is asked
    for. Records of a sweep carry their point's index and swept values; every record names the scenario
    (and `command`, the command line that ran it, if any) in its provenance."""
    keep = "timeline" in scn.outputs
    made = provenance(command, scenario=scn.path)
    results: Results = []
    bar = tqdm(scn.points, desc="sweep", unit="point", disable=None if progress and scn.is_sweep else True)
    for i, point in enumerate(bar):
        bar.set_postfix_str(point.label(), refresh=False)
        records = simulate(scn.trace, scn.schemes, Costs.of(point.cluster, point.profile), point.model,
                           iteration=point.iteration, layout=point.layout, maxmin_batch=point.maxmin_batch,
                           options=scn.options, values=scn.values, progress=progress, provenance=made)
        for rec in records:
            if scn.is_sweep:
                rec.point, rec.sweep = i, dict(point.values)
            if not keep:
                rec.timing = rec.log = None
        results.append((point, records))
    return results


def records_of(results: Results) -> list[RunRecord]:
    """Every record of the results, in sweep order (one per point and scheme)."""
    return [rec for _, records in results for rec in records]


def render_results(results: Results) -> str:
    """The simulate table for one point; for a sweep, time / dense per scheme against the first swept key,
    one table per combination of the other swept keys."""
    return render(records_of(results))


def write_outputs(scn: Scenario, results: Results) -> None:
    """Write the scenario's outputs, all of them or none (temporary files, then renames), creating folders.
    Every path was checked when the scenario loaded."""
    records = records_of(results)
    files: dict[Path, str | bytes] = {}
    if "json" in scn.outputs:
        files[scn.outputs["json"]] = results_json(records)
    if "csv" in scn.outputs:
        files[scn.outputs["csv"]] = results_csv(records)
    if "timeline" in scn.outputs:
        from zensim.report.chrome import chrome_trace
        tracks = [(f"{r.scheme} @ {p.label()}" if p.values else r.scheme, r.timing, r.log)
                  for p, recs in results for r in recs]
        files[scn.outputs["timeline"]] = json.dumps(chrome_trace(tracks))
    if "plot" in scn.outputs:
        files.update(_plots(scn, results, scn.outputs["plot"]))
    scn.files.write(files)


def _plots(scn: Scenario, results: Results, template: Path) -> dict[Path, bytes]:
    """One point: the run's bars. A sweep: lines against the first swept key, one figure per combination
    of the other swept keys (named by the {KEY} placeholders of the path)."""
    from zensim.report.plots import figure_bytes, run_figure, sweep_figure

    if not scn.is_sweep:
        return {template: figure_bytes(run_figure(results[0][1]), plot_format(template))}
    out = {}
    for group, x_key, runs in group_sweep(records_of(results)):
        path = plot_file(template, runs[0].sweep, x_key)
        if not any(r.time_s is not None for run in runs for r in run.records):
            raise ConfigError(f"{path}: nothing to plot{', ' + group if group else ''} (no scheme has a time here)")
        out[path] = figure_bytes(sweep_figure(runs, x_key, group), plot_format(path))
    return out

