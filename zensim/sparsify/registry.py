"""Sparsifiers by name: one line per sparsifier (add a file with a `Sparsifier` subclass, then a line)."""

from __future__ import annotations

import inspect
from typing import Any

from zensim.errors import ConfigError
from zensim.sparsify.base import Sparsifier
from zensim.sparsify.blocktopk import BlockTopK
from zensim.sparsify.cltk import CLTK
from zensim.sparsify.dgc import DGC
from zensim.sparsify.exdyna import ExDyna, ExDynaStatic
from zensim.sparsify.oktopk import OkTopkLocal
from zensim.sparsify.threshold import HardThreshold
from zensim.sparsify.topk import TopK

SPARSIFIERS: dict[str, type[Sparsifier]] = {
    cls.name: cls for cls in (TopK, DGC, HardThreshold, CLTK, ExDyna, ExDynaStatic, BlockTopK, OkTopkLocal)
}
_COMMON = ("density", "rank", "workers", "seed")


def option_names(name: str) -> list[str]:
    """The options sparsifier `name` accepts beyond density, rank, workers and seed."""
    params = inspect.signature(SPARSIFIERS[name].__init__).parameters
    return [p for p in params if p not in ("self", *_COMMON)]


def make_sparsifier(name: str, density: float, rank: int = 0, workers: int = 1, seed: int = 0,
                    **options: Any) -> Sparsifier:
    """Worker `rank`'s sparsifier `name` (ConfigError naming the problem if unknown or misused)."""
    if name not in SPARSIFIERS:
        raise ConfigError(f"sparsifier {name!r}: unknown (choose from {', '.join(SPARSIFIERS)})")
    unknown = sorted(set(options) - set(option_names(name)))
    if unknown:
        accepted = ", ".join(option_names(name)) or "none"
        raise ConfigError(f"sparsifier {name}: unknown option(s) {', '.join(unknown)} (accepted: {accepted})")
    return SPARSIFIERS[name](density, rank, workers, seed, **options)


def local_names() -> list[str]:
    """Sparsifiers whose workers send their own proposals (usable without coordination, e.g. in DDP)."""
    return [name for name, cls in SPARSIFIERS.items() if cls.combine == "own"]
