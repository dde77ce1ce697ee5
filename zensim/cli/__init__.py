"""The `zensim` command: one argparse parser, one module of this package per command group.

This package is the top of the import graph: it imports the layers, no layer imports it."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading

from zensim.cli import (capture, converge, emulate, exdynaloop, fusion, iteration, layers, partition, report, scenario, schemes,
                        simulate, trace, vocabulary, warmup, work)
from zensim.errors import Terminated, ZensimError
from zensim.report.provenance import command_line, version_line
from zensim.torchcache import run_folder

# Each module has `register(subparsers)` adding its subcommands with `set_defaults(func=...)`.
COMMAND_MODULES = (trace, simulate, scenario, report, capture, emulate, schemes, partition, layers, iteration, work, fusion,
                   converge, exdynaloop, warmup)


class Parser(argparse.ArgumentParser):
    """argparse, except that a value starting with '-' and a digit (`--nic -25Gbps`, `--nic-latency -5us`)
    is taken as the option's value, so that the option's own check rejects it in one line, instead of
    argparse's usage and "expected one argument". Subcommand parsers inherit the class."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", vocabulary.HelpFormatter)  # the deprecated spellings hidden
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")


class VersionAction(argparse.Action):
    """--version: 'zensim 0.1.0 (commit ...)', the commit asked of git only when the option is given."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(version_line())
        parser.exit()


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM/SIGHUP in any command: unwind like Ctrl-C, so every `with` block cleans up (no .tmp left)."""
    raise Terminated(signum)


def build_parser() -> argparse.ArgumentParser:
    """Build the full `zensim` parser from every area's command module."""
    parser = Parser(prog="zensim", description=__doc__)
    parser.add_argument("--version", action=VersionAction, help="print zensim's version and git commit, and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    vocabulary.apply(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse, dispatch, turn user errors into one line on stderr and exit code 2."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.command_line = command_line(argv)  # what the outputs record as the command that made them
    in_main = threading.current_thread() is threading.main_thread()  # signals can only be set there
    previous = {sig: signal.signal(sig, _terminate) for sig in (signal.SIGTERM, signal.SIGHUP)} if in_main else {}
    try:
        with run_folder():
            status = args.func(args)
    except ZensimError as exc:
        print(f"zensim: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"zensim: error: {args.command}: out of memory (the requested sizes do not fit this machine)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _note("zensim: interrupted")
        return 130
    except Terminated as exc:  # SIGTERM / SIGHUP: cleanup has run; no traceback, 128 + signal number
        _note(f"zensim: {exc}")
        return 128 + exc.signum
    except BrokenPipeError:
        # the reader of our output went away (`zensim ... | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return int(status or 0)


def _note(line: str) -> None:
    """One line on stderr, which may be gone (a closed terminal after SIGHUP)."""
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
