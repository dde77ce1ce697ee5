"""Merge per-rank shards written by the DDP hook into one trace of all ranks (`zensim trace merge`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zensim.errors import TraceError
from zensim.trace.format import Trace, TraceWriter


def shard_rank(trace: Trace) -> tuple[int, int]:
    """(rank, world size) of a shard, from its provenance; TraceError if it is not a one-worker shard."""
    shard = trace.meta.get("provenance", {}).get("shard")
    if trace.workers != 1 or not isinstance(shard, dict):
        raise TraceError(f"{trace.path}: not a shard (a one-worker trace written by the DDP hook)")
    try:
        return int(shard["rank"]), int(shard["world_size"])
    except (KeyError, TypeError, ValueError):
        raise TraceError(f"{trace.path}: malformed shard provenance {shard!r}") from None


def _signature(trace: Trace) -> dict[str, Any]:
    """What every shard of one capture must share."""
    return {
        "tensors": [t.to_json() for t in trace.tensors],
        "iterations": trace.iterations,
        "value_dtype": trace.value_dtype,
        "workload": trace.meta.get("workload"),
        "world size": shard_rank(trace)[1],
    }


def _check(shards: Sequence[Trace]) -> list[Trace]:
    """The shards ordered by rank, after checking they form ranks 0..n-1 of one capture."""
    first = _signature(shards[0])
    for shard in shards[1:]:
        mine = _signature(shard)
        for key, value in mine.items():
            if value != first[key]:
                raise TraceError(f"{shard.path}: {key} differs from {shards[0].path}")
    by_rank: dict[int, Trace] = {}
    for shard in shards:
        rank, world = shard_rank(shard)
        if not 0 <= rank < world:
            raise TraceError(f"{shard.path}: rank {rank} out of range [0, {world})")
        if rank in by_rank:
            raise TraceError(f"{shard.path}: rank {rank} also in {by_rank[rank].path}")
        by_rank[rank] = shard
    world = first["world size"]
    missing = [r for r in range(world) if r not in by_rank]
    if missing:
        raise TraceError(f"{shards[0].path}: shards of {world} ranks, rank {missing[0]} missing ({len(missing)} missing)")
    return [by_rank[r] for r in range(world)]


def merge_shards(shard_paths: list[str], output: str) -> None:
    """Combine the shards of ranks 0..n-1 into one n-worker trace at `output` (written atomically)."""
    if not shard_paths:
        raise TraceError(f"{output}: no shards to merge")
    shards: list[Trace] = []
    try:
        for path in shard_paths:  # opened one by one so that a bad shard still closes the ones before it
            shards.append(Trace.open(path))
        ordered = _check(shards)
        head = ordered[0]
        provenance = {k: v for k, v in head.meta.get("provenance", {}).items() if k != "shard"}
        provenance["merged_from"] = len(ordered)
        with TraceWriter(output, head.tensors, workers=len(ordered), iterations=head.iterations,
                         value_dtype=head.value_dtype, batch_size=head.meta.get("batch_size"),
                         workload=head.meta.get("workload", ""), provenance=provenance) as writer:
            for it in range(head.iterations):
                for rank, shard in enumerate(ordered):
                    for t in range(len(head.tensors)):
                        if shard.chunk_is_dense(it, 0, t):
                            writer.write_dense(it, rank, t, shard.values(it, 0, t))
                        else:
                            writer.write(it, rank, t, shard.indices(it, 0, t), shard.values(it, 0, t))
    finally:
        for shard in shards:
            shard.close()
