"""The fused-chain timeline: backward and compression on one stream, communication on another.

This is the timeline the thesis' Cupcake (ch. 5, eq. 5.1) and SAFusion (§3.3) reason about, before
any network model: tensors T_0 .. T_{N-1} in the order their gradients become ready (T_0 first,
the output layer's), grouped into consecutive *groups* (fusion buffers). The compute stream runs
backward of every tensor and, right after the last tensor of a group, that group's compression;
so compression delays later backward (it shares the GPU, as in the thesis' Fig. 5.1c). The
communication stream sends groups in order, each when its compression is done and the previous
group's communication has finished. The iteration ends when the last group's communication ends:

    f(X) = A + sum_b B(T_b) + sum_i h(x_i) + sum_i g(x_i) - P(X)           (thesis eq. 5.1)

with h(x) = alpha_h + beta_h x (compression) and g(x) = alpha_g + beta_g x (communication) of a
group's total size x. A strategy is a tuple of group *ends* (exclusive, increasing, the last = N):
(3, 5, 8) is the groups [0, 3), [3, 5), [5, 8).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Affine:
    """t(x) = alpha + beta x for x > 0, and 0 for nothing (an empty group costs nothing)."""

    alpha: float
    beta: float

    def __post_init__(self) -> None:
        if not (self.alpha >= 0 and self.beta >= 0):
            raise ValueError(f"costs must be non-negative, got alpha={self.alpha}, beta={self.beta}")

    def __call__(self, x: float) -> float:
        """Seconds for size x."""
        return self.alpha + self.beta * x if x > 0 else 0.0


@dataclass(frozen=True)
class Spans:
    """Per-group times of one strategy, seconds from the start of backward."""

    ends: tuple[int, ...]
    compressed: np.ndarray      # compression done (the group is ready to send)
    comm_start: np.ndarray
    comm_end: np.ndarray
    forward: float

    @property
    def iteration(self) -> float:
        """A + the end of the last communication."""
        return self.forward + (float(self.comm_end[-1]) if len(self.comm_end) else 0.0)

    @property
    def waiting(self) -> np.ndarray:
        """Idle time of the communication stream before each group (the first counts from 0)."""
        prev = np.concatenate([[0.0], self.comm_end[:-1]])
        return self.comm_start - prev


class Chain:
    """N tensors in gradient-ready order: backward seconds B_i, sizes x_i, compression h, communication g."""

    def __init__(self, backward, sizes, compress: Affine, communicate: Affine, forward: float = 0.0) -> None:
        self.backward = np.asarray(backward, dtype=np.float64)
        self.sizes = np.asarray(sizes, dtype=np.float64)
        if self.backward.ndim != 1 or self.backward.shape != self.sizes.shape or len(self.sizes) == 0:
            raise ValueError("backward and sizes must be equal-length, non-empty 1-d sequences")
        if (self.backward < 0).any() or (self.sizes <= 0).any() or forward < 0:
            raise ValueError("backward times and forward must be >= 0 and sizes > 0")
        self.compress = compress
        self.communicate = communicate
        self.forward = float(forward)
        self.n = len(self.sizes)
        # prefix sums: cum_backward[i] = B(T_0 .. T_{i-1}), cum_size[i] = x(T_0 .. T_{i-1})
        self.cum_backward = np.concatenate([[0.0], np.cumsum(self.backward)])
        self.cum_size = np.concatenate([[0.0], np.cumsum(self.sizes)])

    def B(self, i: int, j: int) -> float:
        """Backward seconds of T_i .. T_j inclusive (0 when j < i)."""
        return float(self.cum_backward[j + 1] - self.cum_backward[i]) if j >= i else 0.0

    def x(self, i: int, j: int) -> float:
        """Total size of T_i .. T_j inclusive (0 when j < i)."""
        return float(self.cum_size[j + 1] - self.cum_size[i]) if j >= i else 0.0

    def h(self, i: int, j: int) -> float:
        """Compression seconds of the group T_i .. T_j (0 when empty)."""
        return self.compress(self.x(i, j))

    def g(self, i: int, j: int) -> float:
        """Communication seconds of the group T_i .. T_j (0 when empty)."""
        return self.communicate(self.x(i, j))

    def check(self, ends) -> tuple[int, ...]:
        """`ends` as a validated tuple: strictly increasing, within 1..N, the last = N."""
        ends = tuple(int(e) for e in ends)
        if not ends or ends[-1] != self.n or any(b <= a for a, b in zip((0,) + ends, ends)):
            raise ValueError(f"not a fusion strategy of {self.n} tensors: {ends}")
        return ends

    def spans(self, ends) -> Spans:
        """The timeline of strategy `ends`."""
        ends = self.check(ends)
        k = len(ends)
        compressed, start, end = np.empty(k), np.empty(k), np.empty(k)
        comp_total, comm_end, lo = 0.0, 0.0, 0
        for a, hi in enumerate(ends):
            comp_total += self.h(lo, hi - 1)
            compressed[a] = self.cum_backward[hi] + comp_total
            start[a] = max(compressed[a], comm_end)
            comm_end = end[a] = start[a] + self.g(lo, hi - 1)
            lo = hi
        return Spans(ends, compressed, start, end, self.forward)

    def time(self, ends) -> float:
        """Iteration time f of strategy `ends` (eq. 5.1)."""
        return self.spans(ends).iteration

    def layerwise(self) -> tuple[int, ...]:
        """Every tensor its own group."""
        return tuple(range(1, self.n + 1))

    def single(self) -> tuple[int, ...]:
        """All tensors in one group."""
        return (self.n,)

    def even(self, groups: int) -> tuple[int, ...]:
        """`groups` groups of (nearly) equal tensor counts (the thesis' 'Evenly Split' strawman)."""
        groups = max(1, min(groups, self.n))
        return tuple(sorted({round(self.n * (a + 1) / groups) for a in range(groups)}))

    def by_size(self, cap: float) -> tuple[int, ...]:
        """Groups closed once their size reaches `cap` (the thesis' 'Bucket Fusion' strawman)."""
        return close_at(self.sizes, cap)


def close_at(sizes, cap: float) -> tuple[int, ...]:
    """Group ends of consecutive items, each group closed as soon as its total reaches `cap`.

    cap <= the smallest size puts every item alone; cap >= the total puts all in one group.
    """
    totals = np.cumsum(np.asarray(sizes, dtype=np.float64))
    ends, base = [], 0.0
    for i, total in enumerate(totals):
        if total - base >= cap:
            ends.append(i + 1)
            base = total
    if not ends or ends[-1] != len(totals):
        ends.append(len(totals))
    return tuple(ends)
