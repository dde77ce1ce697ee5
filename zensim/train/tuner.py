"""Which dense all-reduce algorithm a dense part runs: chosen by size, as NCCL's tuner chooses.

NCCL picks an algorithm (ring, tree, ...) per collective call from its size and the topology with
a per-algorithm alpha-beta model; for small buckets the tree's few latency steps beat the ring's
2(n-1). Here every candidate of zensim.layout.DENSE_ALGORITHMS (ring, recursive doubling) is
timed alone on an idle copy of the run's cluster (fifo: first come first served links with their
latencies, the run's costs, the dense collectives' work pricing) and the part takes the fastest;
ties go to the ring. The choice depends on the part's size and the cluster, never on the trace or
the scheme, so dense DDP and the dense parts of every sparse scheme's run choose alike. `choice`
other than "auto" forces one algorithm (`ring`: the results before the choice existed). The candidates'
times are kept in a bounded memo its owner hands to every tuner (by costs, layout and size): the fusion
strategies' timelines and the dense baseline of one simulated run ask for the same sizes again.
"""

from __future__ import annotations

from dataclasses import replace

from zensim.errors import ConfigError
from zensim.layout import DENSE_ALGORITHMS
from zensim.memo import Memo
from zensim.net.costs import Costs
from zensim.net.profile import WorkCost
from zensim.net.replay import replay
from zensim.train.syncs import SyncLogs

DENSE_CHOICES = ("auto", *DENSE_ALGORITHMS)


def check_dense_algorithm(choice: str) -> None:
    """ConfigError unless `choice` is one of DENSE_CHOICES."""
    if choice not in DENSE_CHOICES:
        raise ConfigError(f"--dense-algorithm {choice}: choose from {', '.join(DENSE_CHOICES)}")


class DenseTuner:
    """`tuner(numel)`: the algorithm of a dense all-reduce of `numel` fp32 elements (see the module
    docstring); `times` keeps each size's candidates' seconds alone, `chosen` each size's pick; `kept`:
    the candidates' times of other tuners, (costs, layout, elements) -> seconds alone per algorithm."""

    def __init__(self, logs: SyncLogs, costs: Costs, work: WorkCost | None, choice: str = "auto",
                 kept: Memo[dict[str, float]] | None = None) -> None:
        check_dense_algorithm(choice)
        self.logs, self.choice = logs, choice
        self.kept = kept if kept is not None else Memo()
        self.costs = costs if work is None else replace(costs, work=work)
        self.times: dict[int, dict[str, float]] = {}
        self.chosen: dict[int, str] = {}

    def __call__(self, numel: int) -> str:
        """The algorithm of a dense all-reduce of `numel` elements (the forced one, or the fastest alone)."""
        if numel not in self.chosen:
            if self.choice != "auto":
                self.chosen[numel] = self.choice
            else:
                key = (repr(self.costs), self.logs.layout, numel)  # every field of the costs, new ones too
                self.times[numel] = times = self.kept.get(key, lambda: {
                    name: replay(self.logs.dense(numel, name), self.costs, "fifo").makespan for name in DENSE_ALGORITHMS})
                self.chosen[numel] = min(DENSE_ALGORITHMS, key=times.__getitem__)
        return self.chosen[numel]
