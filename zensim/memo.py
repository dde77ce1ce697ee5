"""A bounded memo: values computed once per key by whoever owns it (a run, a sweep), never a module's.

    times = Memo(size=1024)
    seconds = times.get(key, lambda: replay(log, costs, "fifo").makespan)

At most `size` values are kept; beyond that the least recently used one is dropped (and computed
again if asked for).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    """Values by key, at most `size` of them, the least recently used dropped first."""

    def __init__(self, size: int = 256) -> None:
        if size < 1:
            raise ValueError(f"Memo size {size}: must be at least 1")
        self.size = size
        self._values: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value of `key`: the kept one, or `make()` kept now."""
        if key in self._values:
            self._values.move_to_end(key)
            return self._values[key]
        value = self._values[key] = make()
        if len(self._values) > self.size:
            self._values.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._values)
