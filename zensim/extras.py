"""Optional dependencies (pyproject's extras): whether one is installed, and the one-line error that
names the extra to install when a command needs it."""

from __future__ import annotations

import importlib.util

from zensim.errors import ConfigError


def installed(module: str) -> bool:
    """Whether the top-level `module` can be imported (without importing it)."""
    return importlib.util.find_spec(module) is not None


def require(module: str, extra: str, what: str) -> None:
    """Raise a one-line ConfigError naming `what` needs `module` and the extra that installs it, unless
    the module is installed."""
    if not installed(module):
        raise ConfigError(f"{what}: needs {module}, which is not installed (pip install 'zensim[{extra}]')")


def require_parquet(what: str) -> None:
    """`require` pandas and pyarrow, the `parquet` extra's modules, for `what` (an option or key)."""
    for module in ("pandas", "pyarrow"):
        require(module, "parquet", what)