"""The output files of one command: every path checked before the work starts, all written together
after it (all of them or none), none of them onto an input or onto another output.

    outs = OutputFiles(inputs=[trace_path], create_folders=False)
    csv_path = outs.add("results.csv", "--csv")         # ConfigError now if it cannot be written
    ... the long work ...
    outs.write({csv_path: to_csv(rows)})                 # temporary files, then renames
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from zensim.atomic import check_output, write_all_atomic
from zensim.errors import ConfigError

# matplotlib writes these from the extension of the path (tests check each); others are refused
PLOT_FORMATS = ("png", "pdf", "svg", "eps", "jpg", "jpeg", "tif", "tiff", "webp")


def plot_format(path: str | os.PathLike[str], what: str = "--plot") -> str:
    """The image format named by the path's extension, or a ConfigError (no extension, unknown one)."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        got = f"extension .{suffix}" if suffix else "no extension"
        raise ConfigError(f"{what}: {path}: {got}; name the image format ({', '.join('.' + f for f in PLOT_FORMATS)})")
    return suffix


def table_format(path: str | os.PathLike[str], what: str) -> str:
    """'csv' or 'json', from the extension of `path`; a one-line ConfigError for another."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in ("csv", "json"):
        raise ConfigError(f"{what}: {path}: name the format with the extension (.csv or .json)")
    return suffix


def table_files(paths: Mapping[str, Path], table: Callable[[], str]) -> dict[Path, str | bytes]:
    """The `csv` and `parquet` files among `paths` ({option: path}) of one table, `table()` its CSV text
    (made only when one of them is asked for)."""
    from zensim.report.export import to_parquet

    wanted = [key for key in ("csv", "parquet") if key in paths]
    text = table() if wanted else ""
    return {paths[key]: text if key == "csv" else to_parquet(text) for key in wanted}


class OutputFiles:
    """Paths a command will write, checked when added; `write` writes them all or none.

    Checks: not a directory; the folder exists and is writable (with `create_folders`, the nearest
    existing ancestor is a writable directory, and the folders are made at `write`); not one of
    `inputs` (the trace, a profile, the scenario: `--csv trace.zt` would overwrite the trace); not an
    output added before; for plots, an image extension matplotlib writes."""

    def __init__(self, inputs: Iterable[str | os.PathLike[str] | None] = (), create_folders: bool = False) -> None:
        self.inputs = [Path(p) for p in inputs if p is not None]
        self.create_folders = create_folders
        self.paths: dict[Path, str] = {}  # path -> what (for messages)

    def add(self, path: str | os.PathLike[str], what: str, plot: bool = False) -> Path:
        """Check `path` (named `what` in errors, e.g. '--csv') and record it; returns it as a Path."""
        target = check_output(path, what, self.create_folders)
        if plot:
            plot_format(target, what)
        for known in self.inputs:
            if _same_file(target, known):
                raise ConfigError(f"{what}: {path} is an input of this run ({known}); choose another output name")
        for known, other in self.paths.items():
            if _same_file(target, known):
                raise ConfigError(f"{what}: {path} is also the output of {other}")
        self.paths[target] = what
        return target

    def write(self, contents: Mapping[Path, str | bytes]) -> None:
        """Write every file (each must have been added) through temporary files, then rename them all."""
        unknown = [p for p in contents if p not in self.paths]
        assert not unknown, f"outputs not checked before the work: {unknown}"
        if self.create_folders:
            for path in contents:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise ConfigError(f"{self.paths[path]}: cannot create folder {path.parent} ({exc.strerror})") from None
        write_all_atomic(list(contents.items()))


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (the same resolved path, or the same inode when both exist)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False
