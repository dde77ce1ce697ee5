"""Numba's on-disk cache of zensim's compiled loops: saying so on stderr before a call compiles one.

The loops (zensim.net.fastfifo, fastmaxmin, the maxmin model's solver in waterfill, the sparsifiers'
threshold kernel) are `numba.njit(cache=True)`: the first call on a machine compiles them (about a
minute of CPU for all of them) and writes them to numba's cache (`__pycache__` beside the sources, or
NUMBA_CACHE_DIR); later processes load them in well under a second. `announce(dispatcher, what,
seconds)`, called just before a loop's first call in a process, prints one line when that call will
compile: when neither this process nor the cache has the function for its current source (numba's
index file for it, valid only while the source file's stamp is unchanged). `zensim warmup`
(zensim.cli.warmup) compiles them all ahead; `make install` runs it.
"""

from __future__ import annotations

import sys
import threading

_checked: set = set()  # the dispatchers already checked in this process
_lock = threading.Lock()


def cached(dispatcher) -> bool:  # type: ignore[no-untyped-def]
    """Whether calling `dispatcher` (a numba.njit(cache=True) function) runs without compiling: it has
    been compiled in this process, or numba's cache holds it for its current source file. The index is
    read through numba's internals (tests/test_jit.py fails if they change); should they be missing,
    True: a wrong silence is better than a crash. A plain function (NUMBA_DISABLE_JIT=1: njit gives the
    Python function back) never compiles."""
    if not hasattr(dispatcher, "overloads") or dispatcher.overloads:
        return True
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except AttributeError:
        return True


def direct(dispatcher, *args):  # type: ignore[no-untyped-def]
    """`dispatcher` (a numba.njit function) compiled, or loaded from the cache, for the types of `args`, as
    a function that skips numba's dispatch on each call (its typing of every argument: for named tuples
    of tens of arrays, tens of microseconds a call; the maxmin model's steps called from Python, 31 ->
    6 us). Its callers pass arguments of those types only. The plain function itself where there is no
    dispatcher (NUMBA_DISABLE_JIT=1)."""
    if not hasattr(dispatcher, "compile"):
        return dispatcher
    import numba

    return dispatcher.compile(tuple(numba.typeof(a) for a in args))


def cache_dir(dispatcher) -> str:  # type: ignore[no-untyped-def]
    """The folder numba's cache keeps `dispatcher`'s compiled code in."""
    return dispatcher._cache._cache_path


def announce(dispatcher, what: str, seconds: int) -> None:  # type: ignore[no-untyped-def]
    """Before `dispatcher`'s first call in this process: if that call will compile it, one line on
    stderr naming `what` is compiled, that it happens once per machine, and the `seconds` of CPU it
    takes about. Checked once per process and dispatcher (the check reads the cache's index file)."""
    if dispatcher in _checked:  # every later call: no lock taken
        return
    with _lock:
        if dispatcher in _checked:
            return
        _checked.add(dispatcher)
        if cached(dispatcher):
            return
        line = (f"zensim: compiling {what} with numba, once per machine: about {seconds} s of CPU "
                f"(cached in {cache_dir(dispatcher)}; `zensim warmup` does it ahead)")
        try:  # above any progress bar; tqdm is not installed where only the device's packages are (a GPU machine)
            from tqdm import tqdm
        except ImportError:
            print(line, file=sys.stderr)
        else:
            tqdm.write(line, file=sys.stderr)
