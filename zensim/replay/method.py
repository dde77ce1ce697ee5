"""A method: a sparsifier paired with a scheme, each worker's state carried across iterations.

`Method(scheme, sparsifier, density, n, numel, ...)` holds the n workers' sparsifiers and residuals
(zensim.sparsify) and the scheme's program (zensim.schemes), and `step(grads)` runs one iteration:

1. every worker accumulates its gradient into its residual (error feedback) and proposes;
2. the proposals are combined as the sparsifier says (own, or union) and each worker's chunk is its
   accumulated values there, which leave its residual;
3. the chunks go through the scheme (zensim.run.run_ranks, values end to end); every value a scheme
   dropped on the way (`ctx.discard`: SparDL's re-selections, gTop-k's cuts) returns to the residual
   of the rank that dropped it;
4. every worker observes every worker's proposal size (ExDyna's block moves and threshold).

Steps 1 and 2 run for the n workers on the method's thread pool of one thread per core (numpy's array work
releases the GIL), started at its first step and stopped by `close()`; the methods of one `make_methods`
share one pool (they step one at a time); results do not depend on it (each worker's state is its own).
The applied gradient is rank 0's result (every rank's, bit-identical). Without a sparsifier
(`sparsifier=None`, the dense baseline) a worker's chunk is its whole gradient. Each scheme names the
sparsifier it is built for (`DEFAULT_SPARSIFIER`): SparDL selects per block (blocktopk, one block per
rank of a team), ExDyna's exchange takes ExDyna's proposals, Ok-Topk its local threshold re-use, the
rest take top-k. ExDyna's exchange always sends the values at the union of the proposals, whatever
sparsifier made them (as the authors' code does for top-k and the hard threshold too).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from zensim.errors import ConfigError
from zensim.run import run_ranks
from zensim.run.context import Tables
from zensim.schemes import build_scheme, scheme_options
from zensim.sparse.chunk import SparseChunk, union_indices
from zensim.sparsify import ErrorFeedback, SPARSIFIERS, make_sparsifier
from zensim.sparsify.team import UnionChunk

KEY = "flat"
DEFAULT_SPARSIFIER = {"spardl": "blocktopk", "exdyna": "exdyna", "oktopk": "oktopk", "dense-allreduce": None}
ITERATION_SET = ["dense-allreduce", "topka", "topkdsa", "gtopk", "spardl", "exdyna"]  # what 'all' means
NEEDS_DENSITY = ("spardl", "gtopk", "oktopk")  # schemes that re-select in transit and must know k
UNION_SCHEMES = ("exdyna",)  # schemes that take every worker's values at the union of all proposals


T = TypeVar("T")
R = TypeVar("R")


class WorkerPool:
    """A thread pool of one thread per core, started at the first `map` and stopped by `close()` (or
    at the end of a `with` block); a map after close starts it again."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """`fn` of every item, in order, on the pool's threads."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="zensim-worker")
        return list(self._executor.map(fn, items))

    def close(self) -> None:
        """Stop the threads (waiting for work under way)."""
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_sparsifier(scheme: str) -> str | None:
    """The sparsifier a scheme is paired with unless the user says otherwise."""
    return DEFAULT_SPARSIFIER.get(scheme, "topk")


@dataclass
class StepResult:
    """One iteration of a method: what was applied, the run's log and context, the proposal sizes."""

    applied: SparseChunk
    proposed: list[int]
    run: Any  # zensim.run.RunOutput
    discarded: int = 0


@dataclass
class Method:
    """A sparsifier + scheme pair over n workers (see the module docstring)."""

    scheme: str
    sparsifier: str | None
    density: float
    n: int
    numel: int
    seed: int = 0
    scheme_options: dict[str, Any] = field(default_factory=dict)
    sparsifier_options: dict[str, Any] = field(default_factory=dict)
    check: bool = True
    pool: WorkerPool = field(default_factory=WorkerPool, repr=False, compare=False)  # the workers' threads

    def __post_init__(self) -> None:
        if self.sparsifier is not None and self.sparsifier not in SPARSIFIERS:
            raise ConfigError(f"--sparsifier {self.sparsifier}: unknown (choose from {', '.join(SPARSIFIERS)}, none)")
        options = dict(self.scheme_options)
        if self.scheme in NEEDS_DENSITY:
            options.setdefault("density", self.density)
        sp_options = dict(self.sparsifier_options)
        if self.sparsifier == "blocktopk" and self.scheme == "spardl":
            sp_options.setdefault("blocks", self.n // options.get("teams", 1))
        self.tables = Tables()
        self.program = build_scheme(self.scheme, self.n, self.numel, tables=self.tables, **options)
        self.sparsifiers = [make_sparsifier(self.sparsifier, self.density, r, self.n, self.seed + r, **sp_options)
                            for r in range(self.n)] if self.sparsifier else []
        self.memories = [ErrorFeedback() for _ in range(self.n)]
        self.combine = self.sparsifiers[0].combine if self.sparsifiers else "all"
        if self.scheme in UNION_SCHEMES:
            if not self.sparsifiers:
                raise ConfigError(f"scheme {self.scheme}: needs a sparsifier (its exchange is of proposals)")
            self.combine = "union"

    @property
    def label(self) -> str:
        """'scheme' or 'scheme+sparsifier' when the pair is not the scheme's default."""
        if self.sparsifier == default_sparsifier(self.scheme):
            return self.scheme
        return f"{self.scheme}+{self.sparsifier or 'none'}"

    def residual(self, rank: int) -> np.ndarray:
        """Worker `rank`'s residual (zeros before the first step)."""
        return self.memories[rank].residuals.get(KEY, np.zeros(self.numel, np.float32))

    def step(self, grads: list[np.ndarray]) -> StepResult:
        """One iteration on every worker's gradient (see the module docstring)."""
        if not self.sparsifiers:
            whole = np.arange(self.numel, dtype=np.int64)
            local = lambda r: self._take(r, self.memories[r].accumulate(KEY, grads[r]), whole)  # noqa: E731
        else:  # each worker's accumulate + propose (+ take) on its own (numpy releases the GIL: the cores share them)
            local = lambda r: self._propose(r, grads[r])  # noqa: E731
        proposals, chunks = map(list, zip(*self.pool.map(local, range(self.n))))
        counts = [len(p) for p in proposals]
        if self.combine == "union":
            chunks = self._union_chunks(proposals)
        run = run_ranks(self.program, chunks, check=self.check, tables=self.tables)
        dropped = 0
        for rank, parts in run.context.discarded.items():
            for part in parts:
                self.memories[rank].restore(KEY, part.indices, part.values)
                dropped += part.nnz
        for s in self.sparsifiers:
            s.observe(KEY, counts)
        return StepResult(run.results[0], counts, run, dropped)

    def close(self) -> None:
        """Stop the workers' threads (a later step starts them again; a shared pool's for every method)."""
        self.pool.close()

    def _propose(self, rank: int, grad: np.ndarray) -> tuple[np.ndarray, SparseChunk | None]:
        """Worker `rank`'s proposal, and its chunk unless the proposals are combined (a union)."""
        acc = self.memories[rank].accumulate(KEY, grad)
        proposal = self.sparsifiers[rank].propose(KEY, acc)
        if self.combine == "union":
            return proposal, None
        return self._take(rank, acc, proposal)

    def _take(self, rank: int, acc: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, SparseChunk]:
        """Worker `rank`'s values of `acc` at `positions` as its chunk; they leave its residual."""
        chunk = SparseChunk(positions, acc[positions].astype(np.float32, copy=False))
        self.memories[rank].consume(KEY, positions)
        return positions, chunk

    def _union_chunks(self, proposals: list[np.ndarray]) -> list[SparseChunk]:
        """Each worker's values at the union of all proposals (with its own proposal); they leave
        its residual."""
        union = union_indices([SparseChunk(p) for p in proposals])

        def take(rank: int) -> SparseChunk:
            residual = self.memories[rank].residuals[KEY]
            chunk = UnionChunk(union, residual[union].astype(np.float32), proposals[rank])
            self.memories[rank].consume(KEY, union)
            return chunk

        return self.pool.map(take, range(self.n))


def make_methods(spec: str, sparsifier: str | None, density: float, n: int, numel: int, seed: int,
                 options: dict, default: list[str]) -> list[Method]:
    """Methods from '--scheme' items SCHEME or SCHEME+SPARSIFIER ('all': `default`), each scheme
    with `sparsifier` (None: its own; 'none': no sparsifier) and the `options` it accepts."""
    items = default if spec == "all" else [item.strip() for item in spec.split(",")]
    for item in items:  # the item's own sparsifier is named with the item, before any scheme is built
        name, plus, kind = item.partition("+")
        if plus and kind not in (*SPARSIFIERS, "none"):
            raise ConfigError(f"--scheme {item}: unknown sparsifier {kind!r} (choose from {', '.join(SPARSIFIERS)}, none)")
    names = [item.partition("+")[0] for item in items]
    known = {o.name for name in names for o in scheme_options(name)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"--options: {unknown[0]!r} is accepted by none of {', '.join(names)} "
                          f"(theirs: {', '.join(sorted(known)) or 'none'})")
    methods, pool = [], WorkerPool()  # one pool for them all: a replay or a training steps them one at a time
    for item in items:
        name, _, kind = item.partition("+")
        kind = kind or (default_sparsifier(name) if sparsifier is None else sparsifier)
        accepted = {o.name for o in scheme_options(name)}
        methods.append(Method(name, None if kind == "none" else kind, density, n, numel, seed=seed,
                              scheme_options={k: v for k, v in options.items() if k in accepted}, pool=pool))
    return methods
