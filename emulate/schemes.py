"""The emulator's view of the scheme layer: build a program by name, list the names, `all`.

Names are those of zensim.schemes.presets (presets, distinct design points, raw combinations).
`all` means every scheme that runs a different program: the presets (the first of presets that
run the same program), then the distinct design points no option-free preset already runs. `zen-auto` is left out of `all`: it runs `zen` or
`hier-central`, which are in it, and needs every rank's data to choose.
"""

from __future__ import annotations

from collections.abc import Sequence

from zensim.schemes.presets import PRESETS, build_scheme, scheme_names
from zensim.schemes.space import DISTINCT
from zensim.sparse.chunk import SparseChunk

__all__ = ["all_schemes", "build_program", "scheme_names"]


def all_schemes() -> list[str]:
    """Every distinct program once: presets first, then design points not run by an option-free preset."""
    seen, names = set(), []
    for name, preset in PRESETS.items():
        key = (preset.point.canonical(), tuple(sorted(preset.options.items())))
        if key not in seen:
            seen.add(key)
            names.append(name)
    return names + [p.name for p in DISTINCT if (p, ()) not in seen]


def build_program(name: str, n: int, numel: int, options: dict | None = None, profile: Sequence[SparseChunk] | None = None):
    """The stage program `name` for n ranks and `numel` elements (ConfigError naming the choices).

    `profile`: every rank's chunks, needed only by zen-auto to make its choice (other names ignore it).
    """
    return build_scheme(name, n, numel, profile=profile, **(options or {}))
