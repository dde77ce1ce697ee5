"""Hash partitioners: ZEN hierarchical hashing (Algorithm 1) and the single-hash strawman.

Hierarchical hashing, as modelled here (ZEN §3.2, SEEDS.md §2):

- h0 (high half of fmix64(id ^ key0)) maps an id to its partition p; h1 is the low half of that
  same hash (recomputed per partition after grouping, which is cheaper than carrying it), h2..hk use keys 1..k-1 (`hashing.hash_key`). The same seed on every rank, so the
  same id goes to the same server everywhere. The hash bitmap's domains 𝕀_i come from this same
  h0 (`hash_domains`), never from another modulus.
- memory: per partition r1 parallel slots and r2 serial slots (`scope="total"` divides the r1, r2
  given or derived for the whole memory among the n partitions; `"per_partition"` uses them for
  each). Default r1 = 2 x nnz of the chunk hashed (ZEN: 2|G|d_G), r2 = r1 / 10. Empty slots hold
  -1, never an id, so element 0 is an ordinary element.
- parallel writes, vectorized: in round i = 1..k every pending id targets slot h_i(id) of its
  partition; the ids whose slot is empty all write it at once (a scatter in which the largest id
  wins: a deterministic race, the same on numpy and on any torch device; `xp.claim`), then every
  writer reads its slot back; the ones that read another id lost the race (the
  read-after-write check that stands in for an atomic claim) and stay pending with the ids whose
  slot was already taken. Ids still pending after k rounds take the next serial slot of their
  partition (an atomic counter). A partition whose serial slots run out spills the rest into an
  overflow list: on a GPU the counter tells the thread it is past r2, it writes to a global spill
  buffer that the host grows and drains after the kernel. Nothing is ever lost; `stats.overflow`
  counts the spills.
- extract: each partition's occupied parallel slots, its serial slots and its spill. `split`
  returns the same sets sorted (a stable grouping by h0; tests check both agree).

Single hash (strawman): one hash into n x r slots, partition = slot // r, a collision overwrites:
all but one id per slot are lost and counted in `stats.lost`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from zensim.errors import ConfigError
from zensim.sparse import xp as backend
from zensim.sparse.chunk import SparseChunk, run_starts
from zensim.sparse.domain import ExplicitDomain
from zensim.sparse.hashing import hash64, hash_key, hash_to_range, low_to_range
from zensim.sparse.partition import PartitionStats, Partitioner, domains_from_owner, group_by_part
from zensim.sparse.xp import namespace

EMPTY = -1
SCOPES = ("total", "per_partition")


def h0_parts(indices: np.ndarray, n: int, seed: int) -> np.ndarray:
    """ZEN's h0: the partition (int64 in [0, n)) of each id, for a seed shared by all ranks."""
    return hash_to_range(indices, hash_key(seed, 0), n)


def hash_domains(numel: int, n: int, seed: int) -> tuple[ExplicitDomain, ...]:
    """All n hash partitions 𝕀_i = {id < numel : h0(id) = i}, from the same h0 as the partitioner
    (int32 ids below 2**31 elements). A partitioner computes them once and keeps them; programs
    built with the same `zensim.run.Tables` share them."""
    return tuple(domains_from_owner(numel, n, lambda ids: h0_parts(ids, n, seed)))


@dataclass
class HashTable:
    """The memory after hierarchical hashing: per partition its r1 parallel slots (EMPTY where
    free), its serial slots in write order, its overflow spill, and the statistics of the run."""

    slots: list[np.ndarray] = field(default_factory=list)
    serial: list[np.ndarray] = field(default_factory=list)
    spill: list[np.ndarray] = field(default_factory=list)
    stats: PartitionStats = field(default_factory=PartitionStats)

    def extract(self) -> list[np.ndarray]:
        """Per partition, every id written anywhere (parallel, serial, spill), sorted int64."""
        out = []
        for row, ser, sp in zip(self.slots, self.serial, self.spill):
            xp = namespace(row)
            out.append(xp.sort(xp.astype(xp.concat([row[row != EMPTY], ser, sp]), xp.int64)))
        return out


class HierarchicalHash(Partitioner):
    """ZEN Algorithm 1: h0 picks the partition, k rehash functions place ids in r1 parallel slots,
    the rest take r2 serial slots (then the overflow spill); never loses an id."""

    hashes = True

    @classmethod
    def for_scheme(cls, numel: int, n: int, seed: int = 0) -> "HierarchicalHash":
        """Seeded, without modelling its memory: the split is the same, its statistics unneeded."""
        return cls(numel, n, seed=seed, model_memory=False)

    def __init__(self, numel: int, n: int, seed: int = 0, k: int = 3, r1: int | None = None,
                 r2: int | None = None, load: float = 2.0, r2_ratio: float = 0.1,
                 scope: str = "total", model_memory: bool = True) -> None:
        super().__init__(numel, n)
        if k < 0 or not 0 < load < np.inf or not 0 <= r2_ratio < np.inf or scope not in SCOPES:
            raise ConfigError(f"hierarchical hash: need k >= 0, finite load > 0, finite r2_ratio >= 0, scope in {SCOPES}")
        if (r1 is not None and r1 < 1) or (r2 is not None and r2 < 0):
            raise ConfigError(f"hierarchical hash: r1 = {r1} must be >= 1, r2 = {r2} >= 0")
        self.seed, self.k, self.r1, self.r2 = int(seed), int(k), r1, r2
        self.load, self.r2_ratio, self.scope = float(load), float(r2_ratio), scope
        self.model_memory = model_memory
        self.keys = [hash_key(self.seed, i) for i in range(max(self.k, 1))]
        self._domains: tuple[ExplicitDomain, ...] | None = None

    @property
    def key(self) -> tuple:
        """What the domains depend on: every partitioner with the same key has the same domains."""
        return ("h0", self.numel, self.n, self.seed)

    def domains(self) -> list[ExplicitDomain]:
        if self._domains is None:
            self._domains = hash_domains(self.numel, self.n, self.seed)
        return list(self._domains)

    def owner(self, indices: np.ndarray) -> np.ndarray:
        return h0_parts(indices, self.n, self.seed)

    def domain(self, part: int) -> ExplicitDomain:
        return self.domains()[part]

    def memory(self, nnz: int) -> tuple[int, int]:
        """(r1, r2) slots per partition for hashing `nnz` ids."""
        r1 = self.r1 if self.r1 is not None else int(np.ceil(self.load * nnz))
        r2 = self.r2 if self.r2 is not None else int(np.ceil(self.r2_ratio * r1))
        if self.scope == "total":
            r1, r2 = -(-r1 // self.n), -(-r2 // self.n)
        if r1 > 2**32:
            raise ConfigError(f"hierarchical hash: {r1} parallel slots per partition exceed 2**32")
        return max(r1, 1), r2

    def split(self, chunk: SparseChunk) -> list[SparseChunk]:
        parts, table = self._hash(chunk, keep_table=False)
        self.stats.add(table.stats)
        return parts

    def hash_table(self, indices: np.ndarray) -> HashTable:
        """Run Algorithm 1 on `indices` (unique ids) and return the whole memory (stats untouched)."""
        return self._hash(SparseChunk(indices), keep_table=True)[1]

    def _hash(self, chunk: SparseChunk, keep_table: bool) -> tuple[list[SparseChunk], HashTable]:
        """Group by h0, then run the memory model of every partition at once."""
        r1, r2 = self.memory(chunk.nnz)
        parts = group_by_part(chunk, self.owner(chunk.indices), self.n)
        table = HashTable()
        if not (self.model_memory or keep_table):
            table.stats.elements = chunk.nnz
            return parts, table
        # numpy runs one partition at a time (its r1 slots stay in cache: 4x faster than all at once
        # on 10.7M ids); other libraries (a GPU) all partitions in one pass
        batches = [[p] for p in parts] if backend.is_numpy(chunk.indices) else [parts]
        for batch in batches:
            stats, rows, serial, spill = self._memory(batch, r1, r2)
            table.stats.add(stats)
            if keep_table:
                table.slots += rows
                table.serial += serial
                table.spill += spill
        return parts, table

    def _memory(self, parts: list[SparseChunk], r1: int,
                r2: int) -> tuple[PartitionStats, list, list, list]:
        """The memory of the partitions `parts` in one pass: k rounds of parallel writes with
        read-back, then serial slots. Their r1 slots lie side by side (the j-th's at j r1 ..), so a
        round is a few array operations over all their ids, not a loop over partitions (on a GPU: k
        rounds of kernels, not n k). Partitions share no slot, so each ends as if it ran alone.

        h1 is the low half of the h0 hash, recomputed on the grouped ids: cheaper than carrying it
        through the grouping's random gather."""
        indices = [p.indices for p in parts]
        xp = namespace(*indices)
        dev = backend.device(indices[0])
        grouped = xp.concat(indices)  # by partition, each partition's ids ascending
        counts = [int(x.shape[0]) for x in indices]
        m = len(parts)
        part = xp.repeat(xp.arange(m, device=dev), xp.asarray(counts, device=dev))
        dtype = xp.int32 if self.numel < 2**31 else xp.int64
        ids = xp.astype(grouped, dtype)
        row = xp.full(m * r1, EMPTY, dtype=dtype, device=dev)
        base = part * r1
        pending = xp.arange(ids.shape[0], device=dev)
        collided = ids.shape[0]
        for i in range(self.k):
            if i and not pending.shape[0]:
                break  # every id placed: the remaining rounds would write nothing
            if i == 0:
                target = base + low_to_range(hash64(grouped, self.keys[0]), r1)
                writers, taken, wids = pending, pending[:0], ids
            else:
                target = base[pending] + hash_to_range(ids[pending], self.keys[i], r1)
                free = row[target] == EMPTY
                writers, target, taken = pending[free], target[free], pending[~free]
                wids = ids[writers]
            backend.claim(row, target, wids)
            pending = xp.sort(xp.concat([taken, writers[row[target] != wids]]))  # ascending ids
            if i == 0:
                collided = pending.shape[0]
        # pending is grouped by partition (positions ascend): each partition's first r2 go serial
        left = backend.host(backend.bincount(part[pending], m)).tolist()
        starts = np.concatenate(([0], np.cumsum(left)[:-1])).astype(np.int64)
        rank = xp.arange(pending.shape[0], device=dev) - xp.repeat(backend.like(starts, pending),
                                                                   xp.asarray(left, device=dev))
        to_serial = rank < r2
        kept = [min(c, r2) for c in left]
        serial = backend.split(ids[pending[to_serial]], kept)
        spill = backend.split(ids[pending[~to_serial]], [c - k for c, k in zip(left, kept)])
        stats = PartitionStats(elements=int(ids.shape[0]), collided=int(collided), serial=int(pending.shape[0]),
                               overflow=int(sum(left) - sum(kept)))
        return stats, list(xp.reshape(row, (m, r1))), serial, spill


class SingleHash(Partitioner):
    """Strawman: one hash into n x r slots (partition = slot // r); colliding ids are lost.

    The winner of a slot is the largest id hashed there (a deterministic stand-in for "last
    writer wins"). Default r = ceil(numel / n): memory the size of the dense tensor.
    """

    hashes = True
    lossy = True

    @classmethod
    def for_scheme(cls, numel: int, n: int, seed: int = 0) -> "SingleHash":
        """Seeded."""
        return cls(numel, n, seed=seed)

    def __init__(self, numel: int, n: int, seed: int = 0, r: int | None = None) -> None:
        super().__init__(numel, n)
        self.r = int(r) if r is not None else max(-(-self.numel // self.n), 1)
        if self.r < 1:
            raise ConfigError(f"single hash: r = {r} slots per partition must be >= 1")
        self.seed = int(seed)
        self._domains: list[ExplicitDomain] | None = None

    def slot(self, indices: np.ndarray) -> np.ndarray:
        """The slot (int64 in [0, n r)) of each id."""
        return hash_to_range(indices, hash_key(self.seed, 0), self.n * self.r)

    def owner(self, indices: np.ndarray) -> np.ndarray:
        return self.slot(indices) // self.r

    @property
    def key(self) -> tuple:
        """What the domains depend on."""
        return ("single_hash", self.numel, self.n, self.seed, self.r)

    def domains(self) -> list[ExplicitDomain]:
        if self._domains is None:
            self._domains = domains_from_owner(self.numel, self.n, self.owner)
        return list(self._domains)

    def domain(self, part: int) -> ExplicitDomain:
        return self.domains()[part]

    def split(self, chunk: SparseChunk) -> list[SparseChunk]:
        slots = self.slot(chunk.indices)
        xp, dev = namespace(slots), backend.device(slots)
        order = backend.argsort(slots)
        ends = xp.concat([run_starts(slots[order])[1:], xp.ones(min(1, order.shape[0]), dtype=xp.bool, device=dev)])
        keep = xp.zeros(order.shape[0], dtype=xp.bool, device=dev)
        keep[order[ends]] = True  # the last (largest) id of each slot's run
        self.stats.add(PartitionStats(elements=chunk.nnz, lost=int(chunk.nnz - int(xp.sum(keep)))))
        kept = SparseChunk(chunk.indices[keep], None if chunk.values is None else chunk.values[keep])
        return group_by_part(kept, slots[keep] // self.r, self.n)
