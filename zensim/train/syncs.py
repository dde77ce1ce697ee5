"""What each bucket synchronizes, and the cluster-wide message log of each synchronization.

Per tensor, the scheme assignment says where its sparsity comes from (issue 10 item 4): a tensor the
trace records (an embedding table's rows, a top-k/DGC selection) is synchronized sparse by the
chosen scheme on the trace's indices; every other parameter is dense and goes through the dense
all-reduce, as in ZEN's evaluation where only the sparse tensors use ZEN. Under
`dense-allreduce` everything is dense (DDP as it is).

A bucket becomes one or two *parts* synchronized one after the other on the communication stream:
its sparse members (the scheme on their concatenated index space) and its dense members (the dense
all-reduce of their total size, by the algorithm zensim.train.tuner picks for that size). With `own` sparse buckets (torch's rule for sparse gradients, the
default) a sparse tensor is a bucket of its own. With `fused` sparse tensors join DDP's buckets and
every bucket is synchronized as `zensim_hook` (zensim.ddp) synchronizes it: one part, the scheme's
run on the whole bucket, its dense members carried as every one of their elements (`carry`); with
`dense_above` the timeline all-reduces a bucket densely instead when its previous sum was denser
(`SyncLogs.density`, the figure the hook decides by).

Logs are made by the synchronization level, never here: the sparse part runs the scheme's stage
program through `zensim.layout` (ZEN's multi-GPU layout or flat), the dense part is a dense
all-reduce's log written from sizes (`zensim.layout.dense_log`, fp32, ring or recursive doubling;
its messages are the dense-allreduce / dense-doubling program's). Each log is made once per (bucket
part, trace iteration, dense algorithm).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from zensim.errors import ConfigError
from zensim.layout import Prepared, dense_log, intra_ring, place, prepare
from zensim.net.topology import ClusterSpec
from zensim.run import MessageLog, Tables
from zensim.schemes import build_scheme, needs_profile
from zensim.sparse.chunk import SparseChunk
from zensim.train.buckets import Bucket
from zensim.train.layers import LayerProfile
from zensim.trace.format import Trace
from zensim.trace.values import synthetic_values

DENSE = "dense-allreduce"
SPARSE_BUCKETS = ("own", "fused")


@dataclass(frozen=True)
class Part:
    """One synchronization of a bucket: `sparse` (the scheme on trace indices) or dense."""

    sparse: bool
    names: tuple[str, ...]
    numel: int
    dense: tuple[str, ...] = ()  # members a sparse part carries as every element (a dense layer in the scheme's run)
    sizes: tuple[int, ...] = ()  # each member's elements, where `dense` is not empty

    def densely(self) -> "Part":
        """The same members as one dense all-reduce (what `dense_above` turns a bucket into)."""
        return Part(False, self.names, self.numel)


@dataclass(frozen=True)
class BucketSync:
    """A bucket, when its last gradient is ready (seconds after backward starts), and its parts.

    `compress`: the bucket's compression on the compute stream, (seconds into backward, seconds)
    pairs (a fusion strategy's selection: per tensor after each gradient, or per bucket after the
    last); they delay the rest of backward, and the bucket is ready once the last one is done."""

    bucket: Bucket
    ready_s: float
    parts: tuple[Part, ...]
    compress: tuple[tuple[float, float], ...] = ()


def sparse_tensors(profile: LayerProfile, trace: Trace | None, scheme: str,
                   only: Sequence[str] | None = None) -> set[str]:
    """The tensors synchronized sparse: the trace's (all, or those named in `only`), none under
    dense-allreduce; ConfigError if a trace tensor is not a parameter of the profile or differs in size."""
    if trace is None or scheme == DENSE:
        return set()
    params = profile.by_name()
    names = [t.name for t in trace.tensors]
    for t in trace.tensors:
        if t.name not in params:
            raise ConfigError(f"{trace.path}: tensor {t.name!r} is not a parameter of the layer profile "
                              f"({profile.workload or 'its workload'})")
        if params[t.name].numel != t.numel:
            raise ConfigError(f"{trace.path}: tensor {t.name!r} has {t.numel} elements, the layer profile "
                              f"{params[t.name].numel}")
    if only is not None:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise ConfigError(f"--sparse-tensors: {unknown[0]!r} is not a tensor of {trace.path}")
        names = [n for n in names if n in set(only)]
    return set(names)


def bucket_syncs(profile: LayerProfile, buckets: Sequence[Bucket], sparse: set[str],
                 carry: bool = False) -> list[BucketSync]:
    """Each bucket's ready time and parts: sparse members first, then dense ones; with `carry` (the
    hook's synchronization) one sparse part of all members in bucket order, the dense ones carried."""
    ready = profile.ready_s
    out = []
    for b in buckets:
        members = [profile.params[i] for i in b.members]
        if carry:
            parts = [Part(True, tuple(p.name for p in members), sum(p.numel for p in members),
                          tuple(p.name for p in members if p.name not in sparse), tuple(p.numel for p in members))]
        else:
            parts = []
            for is_sparse in (True, False):
                mine = [p for p in members if (p.name in sparse) == is_sparse]
                if mine:
                    parts.append(Part(is_sparse, tuple(p.name for p in mine), sum(p.numel for p in mine)))
        out.append(BucketSync(b, float(ready[b.members[-1]]), tuple(parts)))
    return out


@dataclass(frozen=True)
class Step:
    """One log a GPU's communication stream runs through; `compression`: its local work is the
    scheme's (priced by the work profile), not a dense collective's (one fused kernel)."""

    log: MessageLog
    compression: bool


class SyncLogs:
    """The logs each part runs through, made once per (part, trace iteration) and cached.

    A dense part is one step, the dense all-reduce by the algorithm asked for. A sparse part in ZEN's layout is three,
    one after the other on each GPU's stream exactly as the assembled log's stages would run: the
    dense reduce-scatter inside each machine, the scheme across machines (one instance per local rank,
    all at once), the dense all-gather; flat, it is the scheme alone."""

    def __init__(self, cluster: ClusterSpec, layout: str, scheme: str, trace: Trace | None,
                 options: dict | None = None, values: bool = False, selection=None) -> None:
        self.cluster = cluster
        self.layout = layout if cluster.gpus_per_machine > 1 else "flat"
        self.scheme = scheme
        self.trace = trace
        self.options = dict(options or {})
        self.values = values
        # a dense trace's sparse chunks by a selection (zensim.train.fusion.selection), else the recorded indices
        self.selection = selection if selection is not None and selection.applies(trace) else None
        self.tables = Tables()
        self.cache: dict[tuple, list[Step]] = {}  # (sparse part, trace iteration) -> its steps
        self.densities: dict[tuple, float] = {}  # (sparse part, trace iteration) -> density of its sum
        self.dense_cache: dict[tuple[int, str], MessageLog] = {}  # (elements, algorithm) -> log
        if trace is not None and scheme != DENSE and trace.workers < cluster.gpus:
            raise ConfigError(f"{trace.path}: trace has {trace.workers} workers, the cluster asks for {cluster.gpus} GPUs")

    def fits(self, cluster: ClusterSpec, layout: str, scheme: str, trace: Trace | None, options: dict | None,
             values: bool) -> bool:
        """Whether these logs are those of `scheme` with `options` and `values` in `layout` on `trace` (the
        same file) and a cluster of `cluster`'s shape (machines, GPUs per machine): bandwidths and
        latencies do not enter a log."""
        same_trace = (trace is None) == (self.trace is None) and (trace is None or trace.path == self.trace.path)
        return (same_trace and (cluster.machines, cluster.gpus_per_machine) == (self.cluster.machines, self.cluster.gpus_per_machine)
                and (layout if cluster.gpus_per_machine > 1 else "flat") == self.layout and scheme == self.scheme
                and dict(options or {}) == self.options and values == self.values and self.selection is None)

    def steps(self, part: Part, iteration: int, dense_algorithm: str = "ring") -> list[Step]:
        """The steps of `part` at trace iteration `iteration`; a dense part (which does not depend on
        the iteration) is the all-reduce by `dense_algorithm` (zensim.layout.DENSE_ALGORITHMS)."""
        if not part.sparse:
            return [Step(self.dense(part.numel, dense_algorithm), False)]
        key = (part, iteration)
        if key not in self.cache:
            self.cache[key] = self._sparse(part, iteration)
        return self.cache[key]

    def dense(self, numel: int, algorithm: str) -> MessageLog:
        """The dense all-reduce of `numel` fp32 elements by `algorithm`, from sizes: across all GPUs
        (flat), or in ZEN's layout (cached)."""
        key = (numel, algorithm)
        if key not in self.dense_cache:
            c = self.cluster
            self.dense_cache[key] = dense_log(c.machines, c.gpus_per_machine, numel, self.layout, algorithm)
        return self.dense_cache[key]

    def density(self, part: Part, iteration: int) -> float:
        """The density of the sum of a sparse `part` at trace iteration `iteration`: the union of the
        GPUs' indices (a carried dense member: all of it) over the part's elements, as `zensim_hook`
        measures a bucket's sum to decide `dense_above`."""
        key = (part, iteration)
        if key not in self.densities:
            trace, gpus = self.trace, range(self.cluster.gpus)
            nnz = sum(part.sizes[k] if name in part.dense else
                      len(np.unique(np.concatenate([trace.indices(iteration, w, name) for w in gpus])))
                      for k, name in enumerate(part.names))
            self.densities[key] = nnz / max(part.numel, 1)
        return self.densities[key]

    def _sparse(self, part: Part, iteration: int) -> list[Step]:
        """The scheme on the part's tensors at `iteration` (indices concatenated in member order)."""
        if self.selection is not None:
            prep = self.selection.prepared(self.trace, part.names, iteration, self.cluster, self.layout, self.values)
        else:
            prep = self._recorded(part, iteration)

        def build(n: int, size: int, group: Sequence[SparseChunk]):
            profile = group if needs_profile(self.scheme) else None
            return build_scheme(self.scheme, n, size, tables=self.tables, profile=profile, **self.options)

        placed = place(prep, build, self.tables)
        if len(placed.runs) == 1:
            return [Step(placed.log, True)]
        m, g = self.cluster.machines, self.cluster.gpus_per_machine
        n, middle = m * g, max(run.log.num_stages for run in placed.runs)
        across = MessageLog.concat([run.log.placed(np.arange(m) * g + local, 0, n, middle)
                                    for local, run in enumerate(placed.runs)], n, middle)
        return [Step(intra_ring(m, g, prep.sizes, 0, gather=False), False), Step(across, True),
                Step(intra_ring(m, g, prep.sizes, 0, gather=True), False)]

    def _recorded(self, part: Part, iteration: int) -> Prepared:
        """The chunks of the part's tensors as the trace recorded them (a carried dense member: every
        element), concatenated in member order, laid out for the cluster."""
        c, trace = self.cluster, self.trace
        chunks = []
        for w in range(c.gpus):
            idx, vals, offset = [], [], 0
            for k, name in enumerate(part.names):
                carried = name in part.dense
                idx.append((np.arange(part.sizes[k]) if carried else trace.indices(iteration, w, name)) + offset)
                if self.values:
                    stored = None if carried else trace.values(iteration, w, name)
                    vals.append(stored if stored is not None else synthetic_values(len(idx[-1]), iteration, w))
                offset += part.sizes[k] if part.sizes else trace.tensors[trace.tensor_index(name)].numel
            chunks.append(SparseChunk(np.concatenate(idx), np.concatenate(vals).astype(np.float32) if self.values else None))
        return prepare(chunks, part.numel, c.machines, c.gpus_per_machine, self.layout)
