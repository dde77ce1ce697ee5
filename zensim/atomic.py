"""Output files written under a temporary name in the target directory, renamed into place when complete."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from zensim.errors import ConfigError, ZensimError


class AtomicFile:
    """A binary output file that appears at `path` only on `commit()`; `discard()` leaves nothing behind.

    Problems with the path (a directory, a missing or unwritable directory) are `error` (a ZensimError
    subclass) naming the path. The file gets the usual permissions (mkstemp makes 0600).
    """

    def __init__(self, path: str | os.PathLike[str], error: type[ZensimError] = ConfigError) -> None:
        self.path = os.fspath(path)
        self.error = error
        if os.path.isdir(self.path):
            raise error(f"{path}: is a directory, expected a file name")
        directory, name = os.path.split(os.path.abspath(self.path))
        try:
            fd, self.tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
        except OSError as exc:
            raise error(f"{path}: cannot write ({exc.strerror})") from None
        umask = os.umask(0o022)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        self.file: BinaryIO | None = os.fdopen(fd, "wb")

    def commit(self) -> None:
        """Flush to disk and rename the temporary file to `path`."""
        assert self.file is not None, "commit after commit or discard"
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            self.file = None
            os.replace(self.tmp, self.path)
        except OSError as exc:
            self.discard()
            raise self.error(f"{self.path}: cannot write ({exc.strerror})") from None

    def discard(self) -> None:
        """Close and delete the temporary file; `path` is left as it was."""
        if self.file is not None:
            self.file.close()
            self.file = None
        Path(self.tmp).unlink(missing_ok=True)

    def __enter__(self) -> BinaryIO:
        assert self.file is not None
        return self.file

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def check_name(path: str | os.PathLike[str], what: str) -> None:
    """ConfigError unless `path` names a file: not empty, not '-' (which would make a file named '-')."""
    if str(path) == "":
        raise ConfigError(f"{what}: empty file name")
    if str(path) == "-":
        raise ConfigError(f"{what}: '-' (standard output) is not an output here; name a file (--json prints "
                          "to standard output)")


def check_output(path: str | os.PathLike[str], what: str, create_folders: bool = False) -> Path:
    """An output file name checked before any long work: a name (check_name), not a directory, its
    directory exists (or, with `create_folders`, can be made) and this process may write into it."""
    check_name(path, what)
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{what}: {path} is a directory, expected a file name")
    if not create_folders and not target.absolute().parent.is_dir():
        raise ConfigError(f"{what}: directory of {path} does not exist")
    check_creatable(target.parent, what)
    return target


def check_creatable(folder: str | os.PathLike[str], what: str) -> None:
    """ConfigError naming `what` unless `folder` is, or can be made as, a folder this process may write
    into: its nearest existing ancestor is a writable directory."""
    existing = Path(folder).absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{what}: cannot create folder {folder} ({existing} is a file)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{what}: cannot write into {existing} (permission denied)")


def check_new_output(path: str | os.PathLike[str], what: str, force: bool) -> Path:
    """check_output, and a ConfigError if the file exists unless `force`: the commands that make traces
    (`trace synth/scale/merge`, `capture`) replace no file (a shipped trace, a capture) unless --force."""
    target = check_output(path, what)
    if target.exists() and not force:
        raise ConfigError(f"{what} {path}: exists; a trace replaces no file (a shipped trace, a capture) "
                          "unless --force")
    return target


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory and a rename."""
    with AtomicFile(path) as f:
        f.write(data.encode() if isinstance(data, str) else data)


def write_all_atomic(files: Sequence[tuple[str | os.PathLike[str], str | bytes]]) -> None:
    """Write several files so that all of them appear or none: every temporary file is written and
    synced before the first rename; a failure before that removes them all and leaves every path as it was."""
    pending: list[AtomicFile] = []
    try:
        for path, data in files:
            out = AtomicFile(path)
            pending.append(out)
            assert out.file is not None
            try:
                out.file.write(data.encode() if isinstance(data, str) else data)
                out.file.flush()
                os.fsync(out.file.fileno())
            except OSError as exc:
                raise ConfigError(f"{path}: cannot write ({exc.strerror})") from None
    except BaseException:
        for out in pending:
            out.discard()
        raise
    for out in pending:
        out.commit()
