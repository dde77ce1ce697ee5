"""The communication dimension: who sends which item, carrying whose contributions, to whom, when.

A plan is a list of stages; a stage is a list of `Transfer(src, dst, item, origins)`: rank `src`
sends to `dst` its holdings of `item` (item 0 is the whole tensor under Centralization, item j
partition j under Parallelism) that carry the contributions of the ranks in `origins` (a bit mask
over ranks; `ALL` = every rank, i.e. the item fully aggregated). Plans are pure functions of n;
what a transfer costs on the wire depends on the data and on the aggregation dimension.

`symmetric`: whether, under Incremental Centralization, every rank sums the contributions in the
same association (then replicas are bit-identical; the ring is not).

Each pattern offers the three collectives the design space is built from:

- `allreduce(n, one_shot)`: Centralization, every rank the root of its own structure;
- `reduce_scatter(n)`: Parallelism step 1, item j aggregated towards its owner;
- `allgather(n)`: Parallelism step 2, every rank gets every aggregated item.

and states how its log follows from counts (zensim.schemes.sized): `counted(n, one_shot, central)`
is the rule that writes the log of its all-reduce (`central`) or of its reduce-scatter followed by
its own all-gather, or None where the sizes depend on more than counts (the driver runs those).

Hierarchy handles any n by folding: with p the largest power of two <= n, ranks p..n-1 first
send their data to rank r - p (one stage), the p ranks run recursive doubling / halving
(log2 p stages), and rank r - p finally sends the aggregate back to rank r (one stage).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from zensim.schemes import sized


@dataclass(frozen=True)
class Transfer:
    """At some stage `src` sends `dst` its `item` aggregated over the ranks in mask `origins`."""

    src: int
    dst: int
    item: int
    origins: int


Stage = list[Transfer]


class Stages(Sequence):
    """A plan whose stages are made on demand: stage s is `make(s)`, built when asked for and not
    kept (a ring of 1024 ranks has 2046 stages of 1024 transfers; the driver needs one at a time).
    Concatenates with `+` (lists or other Stages) into another lazy plan."""

    def __init__(self, count: int, make: Callable[[int], Stage]) -> None:
        self._count, self._make = count, make

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, s):  # type: ignore[no-untyped-def]
        if isinstance(s, slice):
            return [self._make(i) for i in range(self._count)[s]]
        if not -self._count <= s < self._count:
            raise IndexError(f"stage {s} of {self._count}")
        return self._make(s % self._count)

    def __add__(self, other: Sequence[Stage]) -> "Stages":
        first, rest = self, other
        return Stages(len(first) + len(rest), lambda s: first[s] if s < len(first) else rest[s - len(first)])

    def __radd__(self, other: Sequence[Stage]) -> "Stages":
        return Stages(len(other), lambda s: other[s]) + self


def full(n: int) -> int:
    """The mask of all n ranks."""
    return (1 << n) - 1


def ring_mask(lo: int, count: int, n: int) -> int:
    """Mask of the `count` ranks lo, lo+1, ... (mod n)."""
    lo %= n
    head = min(count, n - lo)
    return (((1 << head) - 1) << lo) | ((1 << (count - head)) - 1)


class Ring:
    """Ring: n-1 stages, rank r always sends to r+1 (mod n). Not symmetric: under Incremental
    Centralization each rank sums the others' contributions in its own ring order."""

    name = "ring"
    symmetric = False

    def allreduce(self, n: int, one_shot: bool) -> list[Stage]:
        """Stage s: r sends the window of ranks r-s..r (Incremental, aggregated), or only
        tensor r-s, the one r+1 lacks (One-shot: the ring all-gather)."""
        return Stages(n - 1, lambda s: [
            Transfer(r, (r + 1) % n, 0, 1 << ((r - s) % n) if one_shot else ring_mask(r - s, s + 1, n))
            for r in range(n)])

    def reduce_scatter(self, n: int) -> list[Stage]:
        """Stage s: r sends item r-1-s carrying ranks r-s..r; item j ends complete at rank j."""
        return Stages(n - 1, lambda s: [Transfer(r, (r + 1) % n, (r - 1 - s) % n, ring_mask(r - s, s + 1, n))
                                        for r in range(n)])

    def allgather(self, n: int) -> list[Stage]:
        """Stage s: r forwards aggregated item r-s to r+1."""
        everyone = full(n)
        return Stages(n - 1, lambda s: [Transfer(r, (r + 1) % n, (r - s) % n, everyone) for r in range(n)])

    def counted(self, n: int, one_shot: bool, central: bool) -> sized.CountRule | None:
        """The all-gather of every tensor (One-shot) or windows of ranks (Incremental); the
        reduce-scatter merging (Incremental) or bundling (One-shot) then the all-gather."""
        if central:
            return sized.ring_gather if one_shot else sized.ring_windows
        return partial(sized.ring_reduce, bundles=one_shot)


class Hierarchy:
    """Recursive doubling (Centralization) / halving then doubling (Parallelism), folded for any n."""

    name = "hierarchy"
    symmetric = True  # every merge combines two groups, and both partners merge the same two

    @staticmethod
    def shape(n: int) -> tuple[int, int]:
        """(p, L): the largest power of two p = 2**L <= n."""
        levels = n.bit_length() - 1
        return 1 << levels, levels

    @staticmethod
    def held(rank: int, k: int, n: int, p: int) -> int:
        """Ranks whose contributions active `rank` holds before doubling stage k (with folded ones)."""
        base, width = (rank >> k) << k, 1 << k
        folded = max(0, min(base + width, n - p) - base)  # q in base.. with q + p < n: a contiguous run
        return (((1 << width) - 1) << base) | (((1 << folded) - 1) << (base + p))

    def _fold(self, n: int, p: int, items: range) -> list[Stage]:
        """Ranks p..n-1 hand their own data of every item to rank r - p."""
        return [[Transfer(r, r - p, j, 1 << r) for r in range(p, n) for j in items]] if n > p else []

    def _unfold(self, n: int, p: int, items: range) -> list[Stage]:
        """Rank r - p sends every aggregated item to rank r."""
        return [[Transfer(r - p, r, j, full(n)) for r in range(p, n) for j in items]] if n > p else []

    def allreduce(self, n: int, one_shot: bool) -> list[Stage]:
        """Fold, log2 p exchange stages with partner r ^ 2**k (each sends all it holds), unfold."""
        p, levels = self.shape(n)
        doubling = [[Transfer(r, r ^ (1 << k), 0, self.held(r, k, n, p)) for r in range(p)] for k in range(levels)]
        return self._fold(n, p, range(1)) + doubling + self._unfold(n, p, range(1))

    def reduce_scatter(self, n: int) -> list[Stage]:
        """Fold, then recursive halving: at stage k, a sends partner b = a ^ 2**k the items whose
        root (item mod p) agrees with b on the low k+1 bits. Item j ends at active rank j mod p."""
        p, levels = self.shape(n)
        stages = []
        for k in range(levels):
            low = (1 << (k + 1)) - 1
            stages.append([
                Transfer(a, a ^ (1 << k), j, self.held(a, k, n, p))
                for a in range(p) for j in range(n) if (j % p) & low == (a ^ (1 << k)) & low
            ])
        return self._fold(n, p, range(n)) + stages

    def allgather(self, n: int) -> list[Stage]:
        """Recursive doubling in reverse order (a sends all aggregated items it holds), then unfold."""
        p, _ = self.shape(n)
        return self.doubling(n) + self._unfold(n, p, range(n))

    def counted(self, n: int, one_shot: bool, central: bool) -> sized.CountRule | None:
        """Recursive doubling / halving then doubling, merging or bundling, for n a power of two
        (a folded hierarchy: the driver's)."""
        if n & (n - 1):
            return None
        return partial(sized.hier_central if central else sized.hier_reduce, bundles=one_shot)

    def doubling(self, n: int) -> list[Stage]:
        """The all-gather's exchanges among the p active ranks (item j held at rank j mod p)."""
        p, levels = self.shape(n)
        stages = []
        for k in reversed(range(levels)):
            low = (1 << (k + 1)) - 1
            stages.append([
                Transfer(a, a ^ (1 << k), j, full(n))
                for a in range(p) for j in range(n) if (j % p) & low == a & low
            ])
        return stages


class P2P:
    """Point-to-point: one stage, every rank sends directly to every destination."""

    name = "p2p"
    symmetric = True

    def allreduce(self, n: int, one_shot: bool) -> list[Stage]:
        """Every rank sends its tensor to every other rank (aggregation is moot)."""
        return Stages(1, lambda s: [Transfer(r, q, 0, 1 << r) for r in range(n) for q in range(n) if q != r])

    def reduce_scatter(self, n: int) -> list[Stage]:
        """Push: rank r sends its part j to rank j."""
        return Stages(1, lambda s: [Transfer(r, j, j, 1 << r) for r in range(n) for j in range(n) if j != r])

    def allgather(self, n: int) -> list[Stage]:
        """Pull: server j sends its aggregated part to every other rank."""
        everyone = full(n)
        return Stages(1, lambda s: [Transfer(j, q, j, everyone) for j in range(n) for q in range(n) if q != j])

    def counted(self, n: int, one_shot: bool, central: bool) -> sized.CountRule | None:
        """Incremental only: every tensor to every rank, or push to the owner and pull from it."""
        if one_shot:
            return None
        return sized.p2p_gather if central else sized.p2p_reduce


class Binomial:
    """Pull by broadcast: each server's part goes down a binomial tree, ceil(log2 n) rounds
    (Sparse PS with the broadcast); only the all-gather is defined."""

    name = "binomial"
    symmetric = True

    def allgather(self, n: int) -> list[Stage]:
        """Round k: for every root j, the ranks j+rel (rel < 2**k) send item j to j+rel+2**k."""
        stages = []
        k = 0
        while (1 << k) < n:
            step = 1 << k
            stages.append([Transfer((j + rel) % n, (j + rel + step) % n, j, full(n))
                           for j in range(n) for rel in range(min(step, n - step))])
            k += 1
        return stages


class Doubling:
    """Pull by recursive doubling after a reduce-scatter that leaves item j at rank j (p2p, ring):
    ranks p..n-1 first hand their aggregated item to rank r - p (p the largest power of two <= n),
    then Hierarchy's exchanges (log2 p), then rank r - p sends rank r every item but its own;
    only the all-gather is defined."""

    name = "doubling"
    symmetric = True

    def allgather(self, n: int) -> list[Stage]:
        """The fold of the items held above p, recursive doubling, the unfold."""
        p, _ = Hierarchy.shape(n)
        if n == p:
            return Hierarchy().doubling(n)
        fold = [Transfer(r, r - p, r, full(n)) for r in range(p, n)]
        unfold = [Transfer(r - p, r, j, full(n)) for r in range(p, n) for j in range(n) if j != r]
        return [fold] + Hierarchy().doubling(n) + [unfold]


PATTERNS = {"ring": Ring(), "hierarchy": Hierarchy(), "p2p": P2P()}
PULLS = {"binomial": Binomial(), "doubling": Doubling()}  # pull patterns beside a point's own
