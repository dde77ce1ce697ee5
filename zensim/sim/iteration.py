"""Training iterations from requests: what `zensim iteration` and a scenario's `training:` points run.

    layers = layer_profile(request, trace)
    records = run_iterations(requests, layers, ["zen"], trace=trace, options={})

Each request (zensim.sim.request.IterationRequest) is one cluster and one bucketing or fusion strategy;
`zensim iteration --machines 2,4 --strategy all --fusion-degree 0,1` is the product of its lists, a
scenario's sweep the product of its axes. Dense DDP, every run's baseline, is simulated once per cluster
and bucketing and shared by the runs that follow it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from zensim.errors import ConfigError
from zensim.memo import Memo
from zensim.net.costs import Costs
from zensim.sim.request import IterationRequest, takes_cap
from zensim.train.buckets import make_bucketing
from zensim.train.iteration import SimulatedIterationRecord, iteration_records, simulate_iteration
from zensim.train.layers import LayerProfile
from zensim.train.syncs import DENSE


def layer_profile(req: IterationRequest, trace: str | Path | None,
                  place: Callable[[str], str] = lambda name: "--" + name) -> LayerProfile:
    """The request's layer profile (its layers file, or for its device the shipped one beside the
    trace, else an estimate), scaled by its compute_scale; `place(field)` names a field in errors."""
    from zensim.train.devices import get_device
    from zensim.train.layers import load_layers
    from zensim.train.shipped import device_layers

    if (req.layers is None) == (req.device is None):
        raise ConfigError(f"{place('layers')} or {place('device')}: give one (the model's per-layer profile: a "
                          "file, or a GPU preset v100, a100, h100)")
    if req.layers is not None:
        return load_layers(req.layers).scaled(req.compute_scale)
    get_device(req.device, place("device"))
    if trace is None:
        raise ConfigError(f"{place('device')}: needs a trace (its workload and batch choose the model)")
    corpus = req.corpus and str(req.corpus)
    return device_layers(trace, req.device, corpus, place("device")).scaled(req.compute_scale)


def check_schemes(requests: Sequence[IterationRequest], schemes: Sequence[str], trace: str | Path | None,
                  where: str = "--scheme") -> None:
    """A sparse scheme needs a trace, a strategy other than none a sparse scheme (`where` names the schemes)."""
    sparse = [s for s in schemes if s != DENSE]
    if sparse and trace is None:
        raise ConfigError("--trace: needed for a sparse scheme (without a trace every tensor is dense)")
    for req in requests:
        if req.strategy not in (None, "none") and not sparse:
            raise ConfigError(f"{where}: a strategy other than none needs a sparse scheme for its compressed "
                              f"buckets (strategy {req.strategy})")


def distinct(requests: Sequence[IterationRequest]) -> list[IterationRequest]:
    """Each request once, in order, its fusion degree dropped where its strategy has none (layerwise,
    safusion and cupcake run once whatever the degrees asked for)."""
    return list(dict.fromkeys(r.one_point() for r in requests))


def run_count(requests: Sequence[IterationRequest], schemes: Sequence[str]) -> int:
    """How many records run_iterations makes (a progress bar's total)."""
    sparse = len([s for s in schemes if s != DENSE])
    return sum(1 if r.strategy == "none" else sparse if r.strategy else sparse + 1 for r in distinct(requests))


def run_iterations(requests: Sequence[IterationRequest], layers: LayerProfile, schemes: Sequence[str], *,
                   trace: str | Path | None, options: dict[str, Any] | None = None, keep_runs: bool = True,
                   dense_times: Memo | None = None, done: Callable[[], Any] | None = None
                   ) -> list[SimulatedIterationRecord]:
    """Every request's records, in order: without a strategy dense DDP then every other scheme
    (zensim.train.iteration.iteration_records), with one the strategy with every sparse scheme (`none`:
    dense DDP; zensim.train.fusion.schedule.run_strategy). `keep_runs` False drops each record's run
    (the timeline's events); `done()` is called after each record."""
    from zensim.train.fusion.schedule import compression_cost, run_strategy
    from zensim.train.fusion.strategies import Compression

    dense_times = Memo() if dense_times is None else dense_times  # the dense algorithms' times alone
    baselines: dict[IterationRequest, SimulatedIterationRecord] = {}
    records: list[SimulatedIterationRecord] = []
    sparse_schemes = [s for s in schemes if s != DENSE]
    for req in distinct(requests):
        costs = dataclasses.replace(Costs.of(*req.build()), host_others=req.host_others)
        common = dict(req.timeline_keywords(), dense_times=dense_times)
        bucket_mb = req.bucket_mb if req.strategy is None else None  # a strategy's cap is not the baseline's
        key = dataclasses.replace(req, strategy=None, fusion_degree=None, bucket_mb=bucket_mb)
        dense = baselines.get(key)
        if dense is None:
            bucketing = make_bucketing(req.bucketing, bucket_mb, req.first_bucket_mb)
            dense = baselines[key] = simulate_iteration(layers, DENSE, costs, bucketing=bucketing, **common)
        run = dict(trace=trace, sparse=req.sparse_tensors and list(req.sparse_tensors),
                   first_iteration=req.first_iteration, options=options or {}, **common)
        if req.strategy is None:
            made = iteration_records(layers, sparse_schemes, costs, dense=dense, done=done,
                                     bucketing=make_bucketing(req.bucketing, req.bucket_mb, req.first_bucket_mb),
                                     sparse_buckets=req.sparse_buckets, dense_above=req.dense_above,
                                     hook_run_s=(req.hook_run_s or 0.0) * req.compute_scale, **run)
            if done:
                done()  # the baseline's
        else:
            comp = Compression(density=req.density, encode=compression_cost(req.compression_cost))
            degree_mb = req.bucket_mb if takes_cap(req.strategy) else None
            made = []
            for scheme in [DENSE] if req.strategy == "none" else sparse_schemes:
                made.append(run_strategy(req.strategy, layers, scheme, costs, dense=dense, compression=comp,
                                         sparsifier=req.sparsifier, degree=req.fusion_degree, bucket_mb=degree_mb,
                                         **run))
                if done:
                    done()
        if not keep_runs:
            for rec in made:
                rec.run = None
        records += made
    return records
