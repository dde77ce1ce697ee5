"""Replays over iterations from requests: what `zensim simulate --replay A:B` and a scenario's
`iterations:` points run (zensim.replay: sparsifier + scheme methods, state carried).

    records, methods, (first, last), costs = run_replay(request, trace, "topka,exdyna+cltk", options={})
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.sim.request import ReplayRequest


def replay_range(req: ReplayRequest, iterations: int) -> tuple[int, int]:
    """The request's A:B as (first, last) within a trace of `iterations` iterations (errors name --replay)."""
    from zensim.replay.iterations import parse_range

    return parse_range(str(req.range), iterations)


def replay_methods(req: ReplayRequest, gpus: int, numel: int, schemes: str | Sequence[str],
                   options: dict[str, Any] | None, default: Sequence[str] = ()):  # -> list[Method]
    """The methods (SCHEME[+SPARSIFIER] items, each with the request's sparsifier and density) for `gpus`
    ranks over `numel` elements; `default`: what 'all' means."""
    from zensim.replay.method import make_methods

    items = schemes if isinstance(schemes, str) else ",".join(schemes)
    return make_methods(items, req.sparsifier, req.density, gpus, numel, 0, options or {}, default=list(default))


def run_replay(req: ReplayRequest, trace: str | Path, schemes: str | Sequence[str], options: dict[str, Any] | None,
               *, costs: Costs | None = None, default: Sequence[str] = (), progress: bool = False,
               place: Callable[[str], str] | None = None):
    """The replay of the request on `trace` (`costs`: its cluster's, if built already): (records, methods,
    (first, last), costs), every value applied or kept asserted each iteration
    (zensim.replay.iterations.replay_iterations)."""
    from zensim.replay import replay_iterations
    from zensim.trace import Trace
    from zensim.trace.gradients import TraceGradients

    place = place or (lambda name: req.place(name))
    costs = costs if costs is not None else Costs.of(*req.build())
    cluster = costs.cluster
    req.check_layout(cluster.gpus_per_machine, place)
    with Trace.open(trace) as opened:
        source = TraceGradients(opened)
        if source.workers < cluster.gpus:
            raise ConfigError(f"{trace}: trace has {source.workers} workers, the cluster asks for {cluster.gpus} GPUs")
        first, last = replay_range(req, source.iterations)
        methods = replay_methods(req, cluster.gpus, source.numel, schemes, options, default)
        records = replay_iterations(source, methods, first, last, costs, req.model, progress=progress,
                                    model_options=req.model_options)
    return records, methods, (first, last), costs
