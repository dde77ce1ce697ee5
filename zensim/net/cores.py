"""Local work on a host with fewer processors than ranks: an egalitarian processor-sharing pool.

Every job (a rank's `pre` or `post` work of a stage, in seconds of one processor) runs at speed
min(1, cores / active jobs), the fluid view of an OS time-slicing runnable processes over `cores`
CPUs. With at most `cores` jobs at a time each runs at full speed, so the pool changes nothing;
4 equal jobs on 2 cores all end after twice their length. `others`: processes outside the simulation
that are always runnable on the same host (another user's jobs), each taking its share:
speed min(1, cores / (active jobs + others)).
"""

from __future__ import annotations

from collections.abc import Callable

from zensim.net.clock import EventLoop

TOGETHER = 1e-12  # seconds of work within which jobs finish together (float residue of the advances)


class SharedCores:
    """Processor sharing of `cores` processors among the jobs submitted to it and `others` always-runnable
    processes outside it."""

    def __init__(self, clock: EventLoop, cores: int, others: float = 0.0) -> None:
        self.clock = clock
        self.cores = cores
        self.others = others
        self.left: dict[int, float] = {}  # job -> seconds of one-processor work left at self.time
        self.then: dict[int, tuple[Callable, tuple]] = {}
        self.time = 0.0
        self.version = 0
        self.next_job = 0

    def run(self, seconds: float, fn: Callable, *args) -> None:
        """Do `seconds` of work, then call fn(*args)."""
        self._advance()
        self.left[self.next_job] = seconds
        self.then[self.next_job] = (fn, args)
        self.next_job += 1
        self._arm()

    def _speed(self) -> float:
        return min(1.0, self.cores / (len(self.left) + self.others)) if self.left else 0.0

    def _advance(self) -> None:
        """Charge the work done since the last change to every running job."""
        done = (self.clock.now - self.time) * self._speed()
        if done > 0:
            for job in self.left:
                self.left[job] -= done
        self.time = self.clock.now

    def _arm(self) -> None:
        """One event at the next completion under the current speed; older events become stale."""
        self.version += 1
        if not self.left:
            return
        delay = max(min(self.left.values()), 0.0) / self._speed()
        self.clock.at(delay, self._due, self.version)

    def _due(self, version: int) -> None:
        """Retire the jobs finished now, re-arm, then run their continuations."""
        if version != self.version:
            return
        self._advance()
        first = max(min(self.left.values()), 0.0)  # the job this event was armed for, whatever the residue
        finished = [job for job, left in self.left.items() if left <= first + TOGETHER]
        for job in finished:
            del self.left[job]
        self._arm()
        for job in finished:
            fn, args = self.then.pop(job)
            fn(*args)
