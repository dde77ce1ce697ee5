"""Typed requests of the emulator and the capture (emulate.request, zensim.trace.capture.request): every
field of every request is a flag of its command with the same default, the command builds the request of
the defaults from nothing but the required flags, and a bad value is one line naming the flag (argparse's
type and choice errors were a usage message)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from emulate.request import CalibrateRequest, EmulateRequest, ValidateRequest
from zensim.cli import build_parser, main
from zensim.request import options_of
from zensim.trace.capture.request import CaptureRequest

# command -> its request, the flags it requires (given) and those fields' values in the request
COMMANDS = {
    "emulate": (EmulateRequest, ["--ranks", "2", "--trace", "t.zt"], {"ranks": 2, "trace": "t.zt"}),
    "calibrate": (CalibrateRequest, ["--ranks", "2", "--out", "{tmp}/p.json"], {"ranks": 2, "out": "{tmp}/p.json"}),
    "validate": (ValidateRequest, ["--from-json", "v.json"], {"from_json": "v.json"}),
    "capture": (CaptureRequest, ["--workload", "deepfm", "--ranks", "2", "--iterations", "1", "-o", "{tmp}/t.zt"],
                {"workload": "deepfm", "ranks": 2, "iterations": 1, "output": "{tmp}/t.zt"}),
}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_field_is_a_flag_with_the_fields_default(command: str, tmp_path: Path) -> None:
    cls, required, given = COMMANDS[command]
    argv = [command, *(a.format(tmp=tmp_path) for a in required)]
    given = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in given.items()}
    parser = build_parser()._subparsers._group_actions[0].choices[command]
    names = {s for a in parser._actions for s in a.option_strings or [a.dest]}
    args = build_parser().parse_args(argv)
    for field in dataclasses.fields(cls):
        opt = options_of(cls)[field.name]
        assert opt.flag in names, (command, field.name)
        if field.name not in given and opt.flag.startswith("-"):  # (a positional REMAINDER parses as [])
            assert getattr(args, field.name) == field.default, (command, field.name)
    assert cls.from_args(args) == cls(**given)  # nothing else given: the request of the defaults


@pytest.mark.parametrize("argv, problem", [
    (["capture", "--workload", "deepfm", "--ranks", "2", "--iterations", "1", "-o", "{tmp}/t.zt", "--seed", "x"],
     "--seed x: expected an integer"),
    (["capture", "--workload", "deepfm", "--ranks", "2", "--iterations", "1", "-o", "{tmp}/t.zt", "--sparsifier",
      "nope"], "--sparsifier nope: unknown sparsifier (choose from natural, topk, dgc, threshold, blocktopk, oktopk)"),
    (["emulate", "--ranks", "2", "--trace", "t.zt", "--timeout", "soon"], "--timeout soon: expected a number"),
    (["emulate", "--ranks", "two", "--trace", "t.zt"], "--ranks two: expected an integer"),
    (["validate", "--trace", "t.zt", "--schemes", "nope", "--docs", ""], "--scheme: unknown scheme(s) nope"),
    (["calibrate", "--ranks", "2", "--out", "{tmp}/p.json", "--wait", "-1"],
     "--wait -1: expected a number in [0, inf)"),
])
def test_a_bad_value_is_one_line_naming_its_flag(argv: list[str], problem: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"zensim: error: {problem}"), err
    assert sorted(tmp_path.iterdir()) == []  # nothing written
