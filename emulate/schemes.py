"""The emulator's view of the scheme layer: build a program by name, list the names, log a run.

Names are those of zensim.schemes: the distinct design points (`p2p-parallel-balanced`, ...) and,
when the scheme layer provides them, the named presets. Options are passed through as keyword
arguments (push/pull format, value dtype, seed, ...).
"""

from __future__ import annotations

from collections.abc import Sequence

from zensim.errors import ConfigError
from zensim.schemes.driver import run_scheme
from zensim.schemes.log import MessageLog
from zensim.schemes.space import BY_NAME, build_point
from zensim.sparse.chunk import SparseChunk


def _presets():
    """The scheme layer's preset registry, if it has one (module zensim.schemes.presets)."""
    try:
        from zensim.schemes import presets
    except ImportError:
        return None
    return presets


def scheme_names() -> list[str]:
    """Every name `build_program` accepts: presets first, then the distinct design points."""
    presets = _presets()
    names = list(presets.names()) if presets is not None else []
    return names + [n for n in BY_NAME if n not in names]


def build_program(name: str, n: int, numel: int, options: dict | None = None):
    """The stage program `name` for n ranks and `numel` elements (ConfigError naming the choices)."""
    presets = _presets()
    if presets is not None and name in presets.names():
        return presets.build(name, n, numel, **(options or {}))
    if name in BY_NAME:
        return build_point(BY_NAME[name], n, numel, **(options or {}))
    raise ConfigError(f"--scheme: unknown scheme {name!r} (known: {', '.join(scheme_names())})")


def simulate_log(prog, chunks: Sequence[SparseChunk]) -> MessageLog:
    """The message log of the in-memory driver on `chunks` (results checked against the dense sum)."""
    return run_scheme(prog, chunks, check=True).log
