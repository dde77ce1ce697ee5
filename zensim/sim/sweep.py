"""Running a scenario: every point an independent task, here in this process or on Dask, finished points
kept in a store so that a rerun skips them; tables and outputs (written all or none) from the records.

    outcome = run_scenario(scn, workers=4)                 # a local Dask cluster of 4 worker processes
    outcome = run_scenario(scn, scheduler="tcp://h:8786")  # a running Dask scheduler (e.g. on Slurm)
    outcome = run_scenario(scn)                            # workers=0: one after the other, here
    outcome.results, outcome.failures, outcome.reused, outcome.computed

A scenario with a `training:` section runs, per point, the training iterations of every scheme
(`zensim.train.iteration.iteration_records`: dense DDP first, the baseline) and reports them as
`zensim iteration` does: its table, JSON and CSV rows, Chrome trace and throughput-against-GPUs plot.

A failed point (any exception while simulating it, a worker that died) is reported with its swept
values and does not stop or lose the others; with a store, the finished points are kept and a rerun
computes only what is missing (docs/scenarios.md, Sweeps on Dask).
"""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from zensim.errors import ConfigError
from zensim.extras import require
from zensim.memo import Memo
from zensim.net.costs import Costs
from zensim.report.links import link_files
from zensim.report.outputs import plot_format, table_files
from zensim.report.provenance import code_version, file_sha256, provenance
from zensim.report.record import RunRecord, SCHEMA, results_csv, results_json
from zensim.report.runs import group_sweep
from zensim.report.table import render
from zensim.report.iteration import ITERATION_SCHEMA  # a stored point's iteration records
from zensim.sim.scenario import GPU_KEYS, STRATEGY_KEYS, Point, Scenario, plot_file
from zensim.sim.store import Store, content_key
from zensim.replay.iterations import ReplayIterationRecord
from zensim.train.iteration import SimulatedIterationRecord
from zensim.sim.iteration import run_iterations
from zensim.train.layers import LayerProfile

Results = list[tuple[Point, list[RunRecord]]]  # with a training: section, SimulatedIterationRecords
from zensim.replay.document import REPLAY_SCHEMA  # a stored point's replay records (its own document)
CONNECT_TIMEOUT = "10s"  # how long to keep trying a --scheduler address before giving up


@dataclass(frozen=True)
class PointTask:
    """Everything one point needs to run anywhere (a Dask worker included): picklable, self-contained."""

    index: int
    point: Point
    trace: Path
    schemes: tuple[str, ...]
    options: dict[str, Any]
    values: bool | None
    keep_timing: bool
    provenance: dict[str, Any]
    is_sweep: bool
    cache: Path | None = None  # the cache folder: message logs under cache/logs
    layers: LayerProfile | None = None  # with a training: section, the model's layer profile


@dataclass(frozen=True)
class Failure:
    """A point that did not finish: its index, swept values and the error."""

    index: int
    label: str
    error: str
    detail: str = ""  # the last lines of the traceback

    def line(self) -> str:
        """'point 3 (machines=64, model=maxmin): MemoryError: ...'."""
        return f"point {self.index} ({self.label or 'the only point'}): {self.error}"


@dataclass
class Outcome:
    """What a scenario run produced: finished points in sweep order, failures, and how many points came
    from the store (`reused`) or were simulated now (`computed`)."""

    results: Results = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    reused: int = 0
    computed: int = 0
    wall_s: float = 0.0


def run_point(task: PointTask, baselines: Memo[float] | None = None
              ) -> list[RunRecord] | list[SimulatedIterationRecord] | list[ReplayIterationRecord]:
    """Simulate one point (the function every worker runs); `baselines`: the dense baselines of the
    points run before it here (zensim.sim.run.dense_baseline), to reuse."""
    _bars_without_semaphore()
    p = task.point
    if p.training is not None:
        return _run_training(task)
    if p.replay is not None:
        return _run_replay(task)
    records = p.simulate.run(task.trace, list(task.schemes), options=task.options, costs=Costs.of(p.cluster, p.profile),
                             provenance=task.provenance, cache=task.cache, baselines=baselines)
    for rec in records:
        if task.is_sweep:
            rec.point, rec.sweep = task.index, dict(p.values)
        if not task.keep_timing:
            rec.simulated.timing = rec.simulated.log = None
    return records


def _bars_without_semaphore() -> None:
    """tqdm's bars share a lock, which its first bar in a process makes a multiprocessing RLock: in a Dask
    worker (a spawned process) a named semaphore, registered with the sweep's resource tracker. A worker
    killed when an interrupted sweep closes its cluster (Ctrl-C, SIGTERM while points run) never unregisters
    it, and Python ended the sweep with "resource_tracker: There appear to be 1 leaked semaphore objects to
    clean up at shutdown". A process runs its points one at a time, so a thread lock is all the bars need."""
    if not isinstance(getattr(tqdm, "_lock", None), type(threading.RLock())):
        tqdm.set_lock(threading.RLock())


def _run_training(task: PointTask) -> list[SimulatedIterationRecord]:
    """A training point: dense DDP and every scheme on the point's cluster, as `zensim iteration`; with a
    fusion strategy, the strategy with every sparse scheme (`none`: dense DDP), as `zensim iteration
    --strategy`."""
    p = task.point
    records = run_iterations([p.training], task.layers, task.schemes, trace=task.trace, options=task.options,
                             keep_runs=task.keep_timing)
    for rec in records:
        rec.provenance = task.provenance
        if task.is_sweep:
            rec.point, rec.sweep = task.index, dict(p.values)
    return records


def _run_replay(task: PointTask) -> list[ReplayIterationRecord]:
    """A replay point: every SCHEME[+SPARSIFIER] item over the iterations, state carried, as `zensim
    simulate --replay` (the invariant asserted every iteration)."""
    from zensim.sim.replay import run_replay

    p = task.point
    return run_replay(p.replay, task.trace, task.schemes, task.options, costs=Costs.of(p.cluster, p.profile))[0]


def point_key(task: PointTask, trace_sha256: str) -> str:
    """The store key of a point: everything its records depend on (trace content, iteration, cluster,
    profile, model, layout, schemes and their options, code version); not the provenance or timings."""
    p = task.point
    return content_key({"trace": trace_sha256, "cluster": p.cluster, "profile": p.profile, "layout": p.request.layout,
                        "model": p.request.model, "iteration": p.iteration, "maxmin_batch": p.request.maxmin_batch,
                        "schemes": task.schemes, "options": task.options, "values": task.values,
                        "training": p.training, "replay": p.replay, "layers": task.layers, "code": code_version()})


def run_scenario(scn: Scenario, progress: bool = False, command: str | None = None, *, workers: int = 0,
                 scheduler: str | None = None, store: str | Path | None = None, fresh: bool = False) -> Outcome:
    """Run every point of the scenario: here one after the other (`workers` 0), on a local Dask cluster of
    `workers` processes, or on the Dask scheduler at `scheduler`. With `store` (a folder), finished points
    are kept there and points already there are reused (unless `fresh`), and message logs are cached
    there (zensim.sim.logcache: each scheme's driver runs once per cluster shape); timelines need
    timings, which are not stored, so a scenario with a timeline output recomputes every point."""
    if workers < 0:
        raise ConfigError(f"--processes {workers}: must be 0 (in this process) or more")
    if scheduler is not None:
        require("distributed", "dask", f"--scheduler {scheduler}")
    elif workers > 0:
        require("distributed", "dask", f"--processes {workers}")
    start = time.perf_counter()
    keep = "timeline" in scn.outputs
    made = provenance(command, scenario=scn.path)
    root = Path(store).absolute() if store is not None else None
    tasks = [PointTask(i, p, scn.trace, tuple(scn.schemes), dict(scn.options), scn.values, keep, made, scn.is_sweep,
                       root, scn.layers) for i, p in enumerate(scn.points)]
    kept = Store(root, "points") if root is not None else None
    sha = file_sha256(scn.trace)
    keys = {t.index: point_key(t, sha) for t in tasks}
    done: dict[int, list[RunRecord]] = {}
    if kept is not None and not fresh and not keep:
        for t in tasks:
            stored = _load_point(kept, keys[t.index])
            if stored is not None:  # the same simulation, maybe of another scenario: this point's place in it
                for rec in stored:
                    rec.point, rec.sweep = (t.index, dict(t.point.values)) if t.is_sweep else (None, {})
                done[t.index] = stored
    outcome = Outcome(reused=len(done))
    todo = [t for t in tasks if t.index not in done]
    bar = tqdm(total=len(tasks), initial=len(done), desc="sweep", unit="point",
               disable=None if progress and scn.is_sweep else True)
    with bar:
        for task, records, failure in _execute(todo, workers, scheduler, progress):
            bar.update()
            if failure is not None:
                outcome.failures.append(failure)
                continue
            bar.set_postfix_str(task.point.label(), refresh=False)
            done[task.index] = records
            outcome.computed += 1
            if kept is not None and not keep:
                kept.put(keys[task.index], results_document(records))
    outcome.results = [(scn.points[i], done[i]) for i in sorted(done)]
    outcome.failures.sort(key=lambda f: f.index)
    outcome.wall_s = time.perf_counter() - start
    return outcome


def _load_point(store: Store, key: str) -> list[RunRecord] | list[SimulatedIterationRecord] | None:
    """A stored point's records (None if absent or unreadable: it is then computed again)."""
    data = store.get(key)
    if data is None:
        return None
    try:
        doc = json.loads(data)
        if doc["schema"] == ITERATION_SCHEMA:
            return [SimulatedIterationRecord(**r) for r in doc["records"]]
        if doc["schema"] == REPLAY_SCHEMA:
            return [ReplayIterationRecord(**r) for r in doc["records"]]
        assert doc["schema"] == SCHEMA
        return [RunRecord.from_dict(r) for r in doc["records"]]
    except (ValueError, KeyError, TypeError, AssertionError, ConfigError):
        return None


def results_document(records: list[RunRecord] | list[SimulatedIterationRecord]) -> str:
    """The records as JSON: a zensim-results/1 document (docs/reports.md), or for training iterations a
    zensim-iterations/1 document ({"schema", "records": [SimulatedIterationRecord fields]})."""
    if records and isinstance(records[0], SimulatedIterationRecord):
        return json.dumps({"schema": ITERATION_SCHEMA, "records": [r.to_dict() for r in records]}, indent=1)
    if records and isinstance(records[0], ReplayIterationRecord):
        return json.dumps({"schema": REPLAY_SCHEMA, "records": [r.to_dict() for r in records]}, indent=1)
    return results_json(records)


def _execute(tasks: list[PointTask], workers: int, scheduler: str | None,
             progress: bool) -> Iterator[tuple[PointTask, list[RunRecord] | None, Failure | None]]:
    """Run the tasks, yielding (task, records, None) or (task, None, failure) as each one ends."""
    if not tasks:
        return
    if workers == 0 and scheduler is None:
        baselines: Memo[float] = Memo()  # this run's, shared by its points
        for task in tasks:
            try:
                yield task, run_point(task, baselines), None
            except Exception as exc:  # a point's failure is reported; the others go on
                yield task, None, _failure(task, exc, traceback.format_exc())
        return
    from distributed import as_completed

    with dask_client(workers, scheduler) as client:
        futures = {client.submit(run_point, t, key=f"zensim-point-{t.index}-{id(t):x}", pure=False): t
                   for t in tasks}
        for future in as_completed(futures):
            task = futures[future]
            try:
                yield task, future.result(), None
            except Exception as exc:
                tb = future.traceback()
                yield task, None, _failure(task, exc, "".join(traceback.format_tb(tb)) if tb else "")


def _failure(task: PointTask, exc: BaseException, detail: str) -> Failure:
    lines = detail.strip().splitlines()
    return Failure(task.index, task.point.label(), f"{type(exc).__name__}: {exc}", "\n".join(lines[-6:]))


@contextlib.contextmanager
def dask_client(workers: int, scheduler: str | None) -> Iterator[Any]:
    """A Dask client: of the scheduler at `scheduler` (tcp://HOST:PORT), or of a local cluster of
    `workers` single-threaded worker processes (closed on exit, whatever ends the run)."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise ConfigError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        with client:
            yield client
        return
    # Dask's own logs stay quiet below CRITICAL: what it logs at ERROR in a local cluster is transient and
    # retried (a heartbeat that did not reach the scheduler on a loaded host: a 22-line traceback after a
    # successful sweep), and a point's failure reaches the user as zensim's line from its future
    quiet = logging.CRITICAL
    # the scheduler's and workers' scratch space in a folder of this run, removed with it (Dask's
    # default, $TMPDIR/dask-scratch-space, stays behind after every sweep); no dashboard, and the
    # scheduler's HTTP server (health, metrics) on a free port of the loopback, not 8787 (taken by
    # any other Dask cluster on the host: "Port 8787 is already in use")
    with tempfile.TemporaryDirectory(prefix="zensim-dask-") as scratch, \
            dask.config.set({"temporary-directory": scratch}), \
            LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True, dashboard_address=None,
                         scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                         silence_logs=quiet, local_directory=scratch) as cluster, Client(cluster) as client:
        yield client


def records_of(results: Results) -> list[RunRecord]:
    """Every record of the results, in sweep order (one per point and scheme)."""
    return [rec for _, records in results for rec in records]


def render_results(results: Results) -> str:
    """The simulate table for one point; for a sweep, time / dense per scheme against the first swept key,
    one table per combination of the other swept keys. Training iterations: `zensim iteration`'s table,
    a row per (point, scheme), the swept values first."""
    records = records_of(results)
    if records and isinstance(records[0], SimulatedIterationRecord):
        from zensim.report.iteration import iteration_table

        return iteration_table(records)
    if records and isinstance(records[0], ReplayIterationRecord):
        from zensim.replay import summarize
        from zensim.replay.report import render_summary

        return "\n\n".join(f"{p.label() or 'replay'}:\n{render_summary(summarize(recs))}" for p, recs in results)
    return render(records)


def write_outputs(scn: Scenario, results: Results) -> None:
    """Write the scenario's outputs, all of them or none (temporary files, then renames), creating folders.
    Every path was checked when the scenario loaded."""
    records = records_of(results)
    files: dict[Path, str | bytes] = {}
    if scn.layers is not None:
        files.update(_training_outputs(scn, results))
        scn.files.write(files)
        return
    if any(p.replay is not None for p, _ in results):
        files.update(_replay_outputs(scn, results))
        scn.files.write(files)
        return
    if "json" in scn.outputs:
        files[scn.outputs["json"]] = results_json(records)
    files.update(table_files(scn.outputs, lambda: results_csv(records)))
    if "timeline" in scn.outputs:
        from zensim.report.chrome import chrome_trace, track_of
        tracks = [track_of(r, f"{r.scheme} @ {p.label()}" if p.values else r.scheme) for p, recs in results for r in recs]
        files[scn.outputs["timeline"]] = json.dumps(chrome_trace(tracks))
    if "plot" in scn.outputs:
        files.update(_plots(scn, results, scn.outputs["plot"]))
    files.update(link_files(records, scn.outputs, lambda key: f"{scn.path}: outputs.{key}"))
    scn.files.write(files)


def _replay_outputs(scn: Scenario, results: Results) -> dict[Path, str | bytes]:
    """A replay scenario's files: JSON (every point's summary and iterations), CSV and Parquet of every
    iteration (the swept values first), and per point the density, f(t), time and global error plot."""
    from zensim.replay import summarize
    from zensim.replay.report import iterations_figure
    from zensim.report.export import to_csv
    from zensim.report.plots import figure_bytes

    files: dict[Path, str | bytes] = {}
    if "json" in scn.outputs:
        files[scn.outputs["json"]] = json.dumps([{"point": p.values, "summary": summarize(recs),
                                                  "iterations": [r.to_dict() for r in recs]} for p, recs in results],
                                                indent=1)
    files.update(table_files(scn.outputs, lambda: to_csv([{**p.values, **r.to_dict()} for p, recs in results
                                                          for r in recs])))
    if "plot" in scn.outputs:
        for point, recs in results:
            path = plot_file(scn.outputs["plot"], point.values, () if scn.is_sweep else None)
            title = f"{scn.trace.name}: {point.cluster.describe()}, d = {point.replay.density}"
            files[path] = figure_bytes(iterations_figure(recs, title), plot_format(path))
    return files


def _training_outputs(scn: Scenario, results: Results) -> dict[Path, str | bytes]:
    """A training scenario's files: JSON, CSV and Parquet of the iteration records, the Chrome trace (compute,
    compression and communication per GPU, link counters), throughput against the GPU count per scheme
    (one plot per combination of the swept keys that do not set the GPU count)."""
    from zensim.report.export import to_csv
    from zensim.report.iteration import iteration_rows, iteration_trace, throughput_figure
    from zensim.report.plots import figure_bytes

    records = records_of(results)
    files: dict[Path, str | bytes] = {}
    if "json" in scn.outputs:
        files[scn.outputs["json"]] = results_document(records)
    files.update(table_files(scn.outputs, lambda: to_csv(iteration_rows(records))))
    if "timeline" in scn.outputs:
        files[scn.outputs["timeline"]] = json.dumps(iteration_trace(records))
    if "plot" in scn.outputs:
        x_keys = tuple(k for k in scn.swept if k in GPU_KEYS + STRATEGY_KEYS)
        groups: dict[Path, list[SimulatedIterationRecord]] = {}
        for point, recs in results:
            path = plot_file(scn.outputs["plot"], point.values, x_keys if scn.is_sweep else None)
            groups.setdefault(path, []).extend(recs)
        prof = scn.layers
        for path, recs in groups.items():
            title = (f"{prof.workload or 'model'} on {prof.device}, batch {prof.batch_size}/GPU, "
                     f"{recs[0].cluster.split(',', 1)[-1].strip()}, {recs[0].model}")
            if any(r.strategy for r in recs):  # samples/s and tensor missing rate per strategy (against the degree)
                from zensim.train.fusion.plots import strategy_plot

                files[path] = strategy_plot(recs, title, plot_format(path))
            else:
                files[path] = figure_bytes(throughput_figure(recs, title), plot_format(path))
    return files


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
