"""Signals while an emulated cluster is up: the first one ends the run, none interrupts the teardown.

SIGINT (Ctrl-C) raises KeyboardInterrupt, SIGTERM and SIGHUP (a closed terminal, a dropped ssh
session) raise `zensim.errors.Terminated`; the CLI turns them into exit statuses 130, 143 and 129.
From the first signal on, and during the teardown in any case, further signals are only noted (one
line: the cluster is being removed): a second Ctrl-C cannot leave namespaces behind. A signal noted
during a teardown that no exception caused is raised once the teardown is done, so it still ends
the program.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

from zensim.errors import Terminated

CAUGHT = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
NOTE = "zensim: removing the emulated cluster, please wait"


def interruption(signum: int) -> BaseException:
    """The exception a signal turns into: KeyboardInterrupt for SIGINT, Terminated for the others."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


class SignalGuard:
    """Handlers for SIGINT, SIGTERM and SIGHUP while a cluster is up (main thread only; elsewhere a no-op)."""

    def __init__(self) -> None:
        self.shielded = False
        self.pending: int | None = None
        self._old: dict[int, object] = {}

    def install(self) -> None:
        """Take over the three signals (the previous handlers come back in `restore`)."""
        if threading.current_thread() is threading.main_thread():
            self._old = {sig: signal.signal(sig, self._on_signal) for sig in CAUGHT}

    def shield(self) -> None:
        """From now on signals are noted, not raised (the teardown starts)."""
        self.shielded = True

    def restore(self, unwinding: bool) -> None:
        """Give the signals back; raise a signal noted while shielded, unless an exception is already
        `unwinding` (it ends the program anyway)."""
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}
        pending, self.pending, self.shielded = self.pending, None, False
        if pending is not None and not unwinding:
            raise interruption(pending)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.shielded:
            if self.pending is None:
                self.pending = signum
                try:
                    print(NOTE, file=sys.stderr, flush=True)
                except OSError:  # stderr may be a terminal that is gone (SIGHUP)
                    pass
            return
        self.shielded = True  # every later signal waits for the teardown this one starts
        raise interruption(signum)
