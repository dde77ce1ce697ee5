"""One vocabulary across commands (zensim/cli/vocabulary.py, docs/cli.md): every command that has a
concept takes it under the canonical flag, shown in --help; every older spelling still parses to the
same namespace (and the same typed request), hidden from --help, silently."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from zensim.cli import build_parser, main
from emulate.request import CalibrateRequest, EmulateRequest, ValidateRequest
from zensim.cli.vocabulary import CONCEPTS, RENAMED, subparser
from zensim.request import options_of
from zensim.sim.request import IterationRequest, ReplayRequest
from zensim.trace.capture.request import CaptureRequest

ROOT = Path(__file__).resolve().parents[1]
PARSER = build_parser()

# a command line each command parses (its required options, canonical spellings)
BASE = {
    "trace synth": ["trace", "synth", "--numel", "10", "--density", "0.1", "-o", "x.zt"],
    "trace scale": ["trace", "scale", "t.zt", "-o", "y.zt", "--ranks", "8"],
    "simulate": ["simulate", "--trace", "t.zt"],
    "iteration": ["iteration"],
    "run": ["run", "s.yaml"],
    "sweep": ["sweep", "s.yaml"],
    "capture": ["capture", "--workload", "deepfm", "--iterations", "1", "-o", "x.zt"],
    "emulate": ["emulate", "--ranks", "2", "--trace", "t.zt"],
    "calibrate": ["calibrate", "--ranks", "2", "--out", "p.json"],
    "validate": ["validate", "--trace", "t.zt"],
    "fusion missing": ["fusion", "missing", "--trace", "t.zt"],
    "fusion strategies": ["fusion", "strategies"],
    "converge": ["converge"],
    "exdyna-loop": ["exdyna-loop", "--csv", "run.csv"],
}
VALUE = {"--ranks": "4", "--fit-ranks": "2", "--replay": "0:3", "--iteration": "1", "--processes": "0",
         "--nic": "25Gbps", "--scheme": "zen", "--workload": "gpt2", "--batch-size": "8"}
REQUEST = {"simulate": ReplayRequest, "iteration": IterationRequest, "capture": CaptureRequest,
           "emulate": EmulateRequest, "calibrate": CalibrateRequest, "validate": ValidateRequest}  # what it builds


def parse(argv: list[str]) -> argparse.Namespace:
    """The whole parser's namespace for `argv`."""
    return PARSER.parse_args(argv)


@pytest.mark.parametrize("command,old,canonical", RENAMED, ids=[f"{c}:{o}" for c, o, _ in RENAMED])
def test_old_spelling_parses_to_the_same_request(command, old, canonical, capsys) -> None:
    base = BASE[command]
    value = "0,1" if (command, canonical) == ("validate", "--iteration") else VALUE[canonical]
    new = parse([*base, canonical, value])
    assert capsys.readouterr().err == ""
    was = parse([*base, old, value])
    assert capsys.readouterr().err == ""
    assert vars(was) == vars(new)
    if command in REQUEST:
        assert REQUEST[command].from_args(was) == REQUEST[command].from_args(new)


@pytest.mark.parametrize("concept,flag,commands", CONCEPTS, ids=[f for _, f, _ in CONCEPTS])
def test_every_command_with_a_concept_takes_its_canonical_flag(concept, flag, commands) -> None:
    for command in commands:
        action = subparser(PARSER, command)._option_string_actions.get(flag)
        assert action is not None, (command, flag)
        assert action.option_strings[0] == flag and action.help != argparse.SUPPRESS, (command, flag)


@pytest.mark.parametrize("command", sorted({c for c, _, _ in RENAMED if c in REQUEST}))
def test_a_request_field_takes_the_canonical_flag(command) -> None:
    """A renamed flag that is a request field is the field's own flag (its errors name it); the old
    spelling is only the vocabulary's hidden alias, not a second flag or alias of the request."""
    flags = {s for opt in options_of(REQUEST[command]).values() for s in (opt.flag, *opt.aliases)}
    for c, old, canonical in RENAMED:
        if c == command:
            assert canonical in flags and old not in flags, (command, old)


@pytest.mark.parametrize("argv,problem", [
    (["validate", "--trace", "t.zt", "--schemes", "nope", "--docs", ""], "--scheme: unknown scheme(s) nope"),
    (["validate", "--trace", "t.zt", "--iterations", "0,-1", "--docs", ""],
     "--iteration: expected non-negative trace iterations, got '0,-1'"),
    (["calibrate", "--ranks", "2", "--out", "{tmp}/p.json", "--bandwidth", "fast"], "--nic"),
    (["emulate", "--ranks", "2", "--trace", "t.zt", "--bandwidth", "fast"], "--nic"),
    (["capture", "--script", "s.py", "--iterations", "1", "-o", "{tmp}/x.zt"],
     "--ranks: required with --script (the virtual ranks N)"),
    (["capture", "--workload", "deepfm", "--iterations", "1", "-o", "{tmp}/x.zt"], "--ranks: required with --workload"),
    (["capture", "--hook", "s.py", "--virtual-ranks", "2", "--iterations", "1", "-o", "{tmp}/x.zt"],
     "--ranks: not used with --hook (the script decides)"),
])
def test_an_error_names_the_canonical_flag(argv, problem, tmp_path, capsys) -> None:
    """Given under an old spelling or not given, a value's one-line error names the canonical flag."""
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"zensim: error: {problem}"), err
    assert sorted(tmp_path.iterdir()) == []


def test_help_shows_only_canonical_spellings() -> None:
    for command in sorted({c for c, _, _ in RENAMED}):
        text = subparser(PARSER, command).format_help()
        for c, old, _ in RENAMED:
            if c == command:
                assert f"{old} " not in text and f"{old}\n" not in text and f"{old}/" not in text, (command, old)


def test_a_deprecated_spelling_runs_the_command(tmp_path, capsys) -> None:
    """The old spelling end to end: `trace synth --workers` writes the trace the canonical one writes."""
    args = ["trace", "synth", "--numel", "1000", "--density", "0.1", "--seed", "3"]
    assert main([*args, "--workers", "4", "-o", str(tmp_path / "old.zt")]) == 0
    assert main([*args, "--ranks", "4", "-o", str(tmp_path / "new.zt")]) == 0
    assert capsys.readouterr().err == ""
    assert (tmp_path / "old.zt").read_bytes() == (tmp_path / "new.zt").read_bytes()


def test_the_docs_table_lists_every_concept_and_old_spelling() -> None:
    page = (ROOT / "docs" / "cli.md").read_text()
    for _, flag, commands in CONCEPTS:
        assert f"`{flag}`" in page, flag
    for command, old, canonical in RENAMED:
        assert f"| {command} | `{old}` | `{canonical}` |" in page, (command, old)


def test_a_scenarios_replay_section_under_either_name(tmp_path) -> None:
    """`replay:` (the flag's word) and its older name `iterations:` load the same points; both is an error."""
    from zensim.errors import ConfigError
    from zensim.sim.scenario import load_scenario

    trace = ROOT / "traces" / "digits-cnn-16w.zt"
    points = {}
    for key in ("replay", "iterations"):
        path = tmp_path / f"{key}.yaml"
        path.write_text(f"trace: {trace}\nschemes: [topka]\ncluster: {{machines: 2}}\n{key}: {{range: '0:2', density: 0.1}}\n")
        points[key] = [p.replay for p in load_scenario(path).points]
    assert points["replay"] == points["iterations"] and points["replay"][0].range == "0:2"
    path.write_text(f"trace: {trace}\nschemes: [topka]\nreplay: '0:2'\niterations: '0:2'\n")
    with pytest.raises(ConfigError, match=rf"^{path}: iterations: the older name of replay: \(give one of them\)$"):
        load_scenario(path)
