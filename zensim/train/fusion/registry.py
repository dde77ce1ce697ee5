"""The fusion strategies by name: every name the CLI, scenarios, sweeps and benchmarks accept is
resolved here (`lookup`). Adding a strategy is a file with its `FusionStrategy`
(zensim.train.fusion.base; docs/extending.md) and its line below.
"""

from __future__ import annotations

from zensim.errors import ConfigError
from zensim.train.fusion import cupcake, safusion
from zensim.train.fusion.base import FusionStrategy
from zensim.train.fusion.basic import BEHIND, LAYERWISE, NONE

STRATEGIES: dict[str, FusionStrategy] = {s.name: s for s in (
    NONE,
    LAYERWISE,
    BEHIND,
    safusion.SAFUSION,
    cupcake.CUPCAKE,
)}


def lookup(name: str, flag: str = "--strategy") -> FusionStrategy:
    """The strategy `name`; a one-line ConfigError naming `flag` and the choices otherwise."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(f"{flag} {name}: unknown fusion strategy (choose from {', '.join(STRATEGIES)})") from None
