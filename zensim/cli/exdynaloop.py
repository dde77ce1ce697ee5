"""`zensim exdyna-loop`: ExDyna inside LSTM language-model training, dynamic vs static layout
(zensim.sim.selection_command holds the options and the command; benchmarks/exdyna_loop.py runs the
same without the CLI)."""

from __future__ import annotations

import argparse

from zensim.sim.selection_command import DESCRIPTION, HELP, add_arguments


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `exdyna-loop` subcommand."""
    add_arguments(sub.add_parser("exdyna-loop", help=HELP, description=DESCRIPTION))
