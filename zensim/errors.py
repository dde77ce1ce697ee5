"""User-facing errors: one line naming the file or argument and the problem."""


class ZensimError(Exception):
    """Base of every error a user can cause; the CLI prints it on one line and exits 2."""


class TraceError(ZensimError):
    """A trace file is missing, malformed, truncated, corrupt or inconsistent."""


class ConfigError(ZensimError):
    """A command-line argument, unit string or scenario is invalid."""
