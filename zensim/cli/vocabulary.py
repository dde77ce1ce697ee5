"""One vocabulary across commands: the canonical flag of every concept, and the older spellings kept as
hidden, deprecated aliases (docs/cli.md has the table and the reasons).

`RENAMED` lists, per command, an older spelling and the canonical flag it now is. `apply(parser)` runs
once on the whole `zensim` parser after every command registered: for each row the command's action is
found by either spelling, shown in --help by the canonical one only, and the old one stays accepted
(the same action, so the same dest, check and `required`), silently: a command line, script or test
written with it runs and prints as before (docs/cli.md lists the deprecated spellings).
"""

from __future__ import annotations

import argparse

# (command, old spelling, canonical flag): every row parses to the same value with either spelling
RENAMED: tuple[tuple[str, str, str], ...] = (
    ("trace synth", "--workers", "--ranks"),
    ("trace scale", "--workers", "--ranks"),
    ("trace scale", "--fit-workers", "--fit-ranks"),
    ("simulate", "--iterations", "--replay"),
    ("iteration", "--first-iteration", "--iteration"),
    ("run", "--workers", "--processes"),
    ("sweep", "--workers", "--processes"),
    ("capture", "--workers", "--ranks"),
    ("capture", "--virtual-ranks", "--ranks"),
    ("emulate", "--bandwidth", "--nic"),
    ("calibrate", "--bandwidth", "--nic"),
    ("calibrate", "--schemes", "--scheme"),
    ("validate", "--bandwidth", "--nic"),
    ("validate", "--schemes", "--scheme"),
    ("validate", "--iterations", "--iteration"),
    ("fusion missing", "--workers", "--ranks"),
    ("fusion strategies", "--model", "--workload"),
    ("fusion strategies", "--batch", "--batch-size"),
    ("converge", "--workers", "--ranks"),
    ("exdyna-loop", "--workers", "--ranks"),
    ("exdyna-loop", "--batch", "--batch-size"),
)

# (concept, canonical flag, the commands that have it): each command takes the concept under this flag
CONCEPTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("ranks of a data-parallel job (workers, processes, one GPU each)", "--ranks",
     ("trace synth", "trace scale", "capture", "emulate", "calibrate", "validate", "fusion missing", "converge",
      "exdyna-loop")),
    ("machines of a simulated cluster", "--machines", ("simulate", "iteration", "fusion strategies")),
    ("GPUs per machine", "--gpus-per-machine", ("simulate", "iteration", "fusion strategies")),
    ("bandwidth of one NIC (link rate)", "--nic",
     ("simulate", "iteration", "emulate", "calibrate", "validate", "fusion strategies", "converge", "exdyna-loop")),
    ("per-message latency across machines", "--nic-latency", ("simulate", "iteration", "converge", "exdyna-loop")),
    ("schemes (a name, a comma list, all)", "--scheme", ("simulate", "iteration", "emulate", "calibrate", "validate",
                                                         "converge")),
    ("network (bandwidth sharing) model", "--model", ("simulate", "iteration", "converge", "exdyna-loop")),
    ("neural network (a built-in workload)", "--workload", ("capture", "converge", "fusion strategies")),
    ("trace iteration(s) to run on", "--iteration", ("simulate", "iteration", "emulate", "calibrate", "validate")),
    ("how many iterations (a count)", "--iterations",
     ("trace synth", "trace scale", "capture", "iteration", "converge", "exdyna-loop", "partition", "layers record",
      "fusion missing")),
    ("replay of trace iterations A..B-1, state carried", "--replay", ("simulate",)),
    ("batch per rank", "--batch-size", ("trace synth", "capture", "layers record", "layers estimate", "layers import",
                                        "fusion strategies", "exdyna-loop")),
    ("processes running a scenario's points", "--processes", ("run", "sweep")),
    ("an option the network model declares", "--model-option", ("simulate", "iteration")),
    ("an option the fabric declares", "--fabric-option", ("simulate", "iteration")),
)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, without an action's deprecated spellings (`action.deprecated`)."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        old = getattr(action, "deprecated", ())
        if not old:
            return super()._format_action_invocation(action)
        shown = argparse.Action([s for s in action.option_strings if s not in old], action.dest, nargs=action.nargs,
                                metavar=action.metavar)
        return super()._format_action_invocation(shown)

    def _format_usage(self, usage, actions, groups, prefix):  # type: ignore[no-untyped-def]
        """The usage line with each action's canonical spelling only."""
        saved = [(a, a.option_strings) for a in actions if getattr(a, "deprecated", ())]
        for action, strings in saved:
            action.option_strings = [s for s in strings if s not in action.deprecated]
        try:
            return super()._format_usage(usage, actions, groups, prefix)
        finally:
            for action, strings in saved:
                action.option_strings = strings


def subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of `command` ('trace synth': a subcommand's subcommand)."""
    for word in command.split():
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def rename(parser: argparse.ArgumentParser, old: str, canonical: str) -> None:
    """Make `canonical` the shown spelling of the action now under `old` or `canonical`, and `old` a
    hidden alias of that same action."""
    action = parser._option_string_actions.get(canonical) or parser._option_string_actions[old]
    for spelling in (canonical, old):
        if spelling not in action.option_strings:
            action.option_strings.append(spelling)
        parser._option_string_actions[spelling] = action
    action.option_strings.sort(key=lambda s: s != canonical)  # the canonical one first
    if action.metavar is None and action.nargs != 0:  # the value named after the canonical flag, not the dest
        action.metavar = canonical.lstrip("-").replace("-", "_").upper()
    action.deprecated = getattr(action, "deprecated", ()) + (old,)  # type: ignore[attr-defined]


def apply(parser: argparse.ArgumentParser) -> None:
    """Give every command of RENAMED its canonical flags, the old spellings kept as hidden aliases."""
    for command, old, canonical in RENAMED:
        rename(subparser(parser, command), old, canonical)
