"""User-facing errors: one line naming the file or argument and the problem."""


class ZensimError(Exception):
    """Base of every error a user can cause; the CLI prints it on one line and exits 2."""


class TraceError(ZensimError):
    """A trace file is missing, malformed, truncated, corrupt or inconsistent."""


class ConfigError(ZensimError):
    """A command-line argument, unit string or scenario is invalid."""


class Terminated(BaseException):
    """SIGTERM or SIGHUP (a closed terminal, a dropped ssh session) ended a run; it unwinds like Ctrl-C
    (a BaseException, so cleanup code runs and no `except Exception` swallows it). The CLI exits with
    128 + the signal number, as a shell reports a process ended by that signal."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = int(signum)
        super().__init__(f"terminated by {signal.Signals(self.signum).name}")


class ValueRangeError(ZensimError):
    """Gradient values do not fit the wire's value dtype, or a sum of them overflows it."""
