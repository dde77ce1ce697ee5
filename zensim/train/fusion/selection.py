"""Selection on dense gradients, per tensor or per fused bucket: the sparse chunks a bucket synchronizes.

The iteration timeline (`zensim.train.syncs.SyncLogs`) asks, for each sparse part of a bucket and
a trace iteration, for the chunks its scheme runs on (a `zensim.layout.Prepared`). By default
they are the indices the trace recorded. A `Selection` makes them from a dense-gradient trace
(`zensim capture --dense`) with a sparsifier of `zensim.sparsify` at a density, per *unit*:

- ``"tensor"``: every tensor selected on its own, the selections concatenated (layer-wise
  compression; SAFusion: sparsify each tensor, then fuse the sparse tensors);
- ``"bucket"``: the part's tensors concatenated and selected once (sparsification-behind fusion,
  DDP buckets with one top-k each; Cupcake: fuse, then compress).

Where the selection runs follows the layout. Flat: every GPU selects on its own gradient. ZEN's
layout (the thesis' inter-machine compression, Cupcake §5.4.1): GPU l of machine m holds, after the
dense reduce-scatter inside the machine, shard l of the machine's summed gradient and selects on
that; with the ``"tensor"`` unit each tensor's piece of the shard is selected on its own.

Every selection counts the tensors it left without a single element: the *tensor missing rate*
(SAFusion §2.4) of the gradients the timeline really synchronizes, per GPU (flat) or per machine
(ZEN's layout: a tensor is missing when no shard of the machine kept any of it). There is no error
feedback: each iteration's selection sees that iteration's gradient alone. A trace that is not
dense (recorded indices: natural sparsity, or a selection made at capture) is used as recorded.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from zensim.errors import ConfigError
from zensim.layout import Prepared
from zensim.net.topology import ClusterSpec
from zensim.sparse.chunk import SparseChunk
from zensim.sparse.partition import even_boundaries
from zensim.sparsify import local_names, make_sparsifier
from zensim.trace.format import Trace

UNITS = ("tensor", "bucket")


@dataclass
class Missing:
    """Tensors left without any selected element, summed over the selections made so far."""

    missing: int = 0
    tensors: int = 0  # tensors x selecting units (GPUs or machines) x iterations

    @property
    def rate(self) -> float | None:
        """Missing / all (None before any selection)."""
        return self.missing / self.tensors if self.tensors else None


@dataclass
class Selection:
    """A sparsifier applied per `unit` ("tensor" or "bucket") to the dense gradients of a trace."""

    unit: str
    sparsifier: str = "topk"
    density: float = 0.01
    options: dict = field(default_factory=dict)
    counted: dict = field(default_factory=dict, repr=False)  # (names, iteration, m, g, flat) -> (missing, tensors)

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ConfigError(f"selection unit {self.unit!r}: choose from {', '.join(UNITS)}")
        if self.sparsifier not in local_names():
            raise ConfigError(f"--sparsifier {self.sparsifier}: choose from {', '.join(local_names())} "
                              "(sparsifiers whose workers select alone)")
        if not 0 < self.density <= 1:
            raise ConfigError(f"--density {self.density}: must be in (0, 1]")
        make_sparsifier(self.sparsifier, self.density, **self.options)  # options checked now

    def describe(self) -> str:
        """'topk 1% per bucket'."""
        return f"{self.sparsifier} {100 * self.density:g}% per {self.unit}"

    def missing_of(self, parts: Collection[tuple[str, ...]] | None = None) -> Missing:
        """Tensors missed over every selection made so far of the parts (tensor-name tuples) in `parts`
        (default: all)."""
        out = Missing()
        for (names, *_), (missing, tensors) in self.counted.items():
            if parts is None or names in parts:
                out.missing += missing
                out.tensors += tensors
        return out

    def applies(self, trace: Trace | None) -> bool:
        """Whether this trace's gradients are selected here (a dense trace) or taken as recorded."""
        return trace is not None and trace.is_dense

    def prepared(self, trace: Trace, names: Sequence[str], iteration: int, cluster: ClusterSpec, layout: str,
                 values: bool) -> Prepared:
        """The chunks of the tensors `names` (concatenated in this order) at trace `iteration`."""
        numels = [trace.tensors[trace.tensor_index(n)].numel for n in names]
        offsets = np.concatenate([[0], np.cumsum(numels)]).astype(np.int64)
        numel = int(offsets[-1])
        m, g = cluster.machines, cluster.gpus_per_machine
        flat = layout == "flat" or g == 1

        def gradient(worker: int) -> np.ndarray:
            out = np.empty(numel, np.float32)
            for name, lo, hi in zip(names, offsets[:-1], offsets[1:]):
                trace.dense(iteration, worker, name, out[lo:hi])
            return out

        key = (tuple(names), iteration, m, g, flat)
        missing = 0
        if flat:
            chunks = []
            for w in range(m * g):
                grad = gradient(w)
                idx = self._select(grad, self._pieces(offsets, 0, numel), seed=w)
                missing += _missing(idx, offsets)
                chunks.append(SparseChunk(idx, grad[idx] if values else None))
            self.counted[key] = (missing, len(names) * m * g)
            return Prepared(m, g, numel, [chunks], np.array([numel]))
        bounds = even_boundaries(numel, g)
        groups: list[list[SparseChunk]] = [[] for _ in range(g)]
        for machine in range(m):
            total = gradient(machine * g)
            for w in range(machine * g + 1, (machine + 1) * g):
                total += gradient(w)
            kept = []
            for local in range(g):
                lo, hi = int(bounds[local]), int(bounds[local + 1])
                idx = self._select(total[lo:hi], self._pieces(offsets, lo, hi), seed=machine * g + local)
                kept.append(idx + lo)
                groups[local].append(SparseChunk(idx, total[lo:hi][idx] if values else None))
            missing += _missing(np.concatenate(kept), offsets)
        self.counted[key] = (missing, len(names) * m)
        return Prepared(m, g, numel, groups, np.diff(bounds))

    def _pieces(self, offsets: np.ndarray, lo: int, hi: int) -> list[tuple[int, int]]:
        """The selection units of [lo, hi) (positions relative to lo): the whole range, or each tensor's piece."""
        if self.unit == "bucket":
            return [(0, hi - lo)]
        cuts = np.unique(np.clip(offsets, lo, hi)) - lo
        return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]

    def _select(self, values: np.ndarray, pieces: list[tuple[int, int]], seed: int) -> np.ndarray:
        """Sorted positions kept: the sparsifier on each piece of `values`."""
        sp = make_sparsifier(self.sparsifier, self.density, seed=seed, **self.options)
        parts = [np.asarray(sp.propose(str(a), values[a:b]), dtype=np.int64) + a for a, b in pieces]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _missing(indices: np.ndarray, offsets: np.ndarray) -> int:
    """Tensors (between consecutive `offsets`) that hold none of the sorted `indices`."""
    counts = np.diff(np.searchsorted(indices, offsets))
    return int((counts == 0).sum())
