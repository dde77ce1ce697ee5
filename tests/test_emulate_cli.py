"""Bad arguments of emulate / calibrate / validate are one line naming the argument, exit 2, before any run."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from emulate import netns
from zensim.cli import main
from zensim.errors import ConfigError
from zensim.trace import TensorSpec, TraceWriter


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "t.zt"
    with TraceWriter(path, [TensorSpec("g", 1000)], workers=2, iterations=1) as w:
        for r in range(2):
            w.write(0, r, 0, [r, 10 + r])
    return str(path)


CASES = [
    (["emulate", "--ranks", "0"], "--ranks"),
    (["emulate", "--ranks", "3"], "2 workers, cannot emulate 3"),
    (["emulate", "--ranks", "2", "--repeats", "0"], "^zensim: error: --repeats 0: must be at least 1$"),
    (["emulate", "--ranks", "2", "--peers", "foo"], "--peers"),
    (["emulate", "--ranks", "2", "--timeout", "0"], r"--timeout 0: expected a number in \(0, inf\)$"),
    (["emulate", "--ranks", "2", "--nic", "fast"], "--nic"),
    (["emulate", "--ranks", "2", "--options", "[1]"], "--options"),
    (["emulate", "--ranks", "2", "--raw", "{tmp}"], "--raw: .* is a directory"),
    (["calibrate", "--ranks", "2", "--out", "{tmp}"], "--out: .* is a directory"),
    (["validate", "--ranks", "2", "--repeats", "0"], "--repeats"),
    (["validate", "--ranks", "2", "--workdir", "{trace}"], "--workdir: .* not a directory"),
    (["validate", "--ranks", "2", "--step-repeats", "0"], "--step-repeats 0: must be at least 1$"),
    (["validate", "--ranks", "2", "--nic", "25mbit,fast"], "--nic"),
    (["validate", "--ranks", "2", "--iteration", "0,x"], "--iteration: expected comma-separated integers"),
    (["validate", "--ranks", "2", "--iteration", "0,1"], "--iteration: 1 out of range"),
]


@pytest.mark.parametrize("argv,message", CASES)
def test_bad_argument_is_one_line_and_exit_2(argv, message, trace, tmp_path, capsys):
    argv = [a.format(tmp=tmp_path, trace=trace) for a in argv]
    if argv[0] != "calibrate":
        argv += ["--trace", trace]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("zensim: error:")
    assert re.search(message, err), err
    assert netns.project_namespaces(os.getpid()) == []  # this run's: another emulation may run beside


def test_from_json_that_is_not_a_validation(tmp_path, capsys):
    bad = tmp_path / "v.json"
    for text, message in (("not json", "is not JSON"), ('{"rows": []}', "is not a validation result")):
        bad.write_text(text)
        assert main(["validate", "--from-json", str(bad), "--docs", ""]) == 2
        assert message in capsys.readouterr().err


def test_from_json_renders_the_docs_without_leftovers(tmp_path, capsys):
    src = Path(__file__).resolve().parents[1] / "docs" / "validation-data" / "validation.json"
    if not src.exists():
        pytest.skip("no earlier validation.json in docs/validation-data")
    assert main(["validate", "--from-json", str(src), "--docs", str(tmp_path), "--name", "v"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.md", "v.png"]
    assert (tmp_path / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(src.read_text())["trace"] in (tmp_path / "v.md").read_text()


def test_peers_spellings_of_cli_and_rank_program():
    from emulate.options import parse_peers

    assert parse_peers("both") == ["dense", "sparse"] and parse_peers("none") == []
    assert parse_peers("sparse,dense,sparse") == ["sparse", "dense"]
    for bad in ("", "both,dense", "foo", "dense,none"):
        with pytest.raises(ConfigError, match="--peers"):
            parse_peers(bad)


def test_validate_checks_every_size_and_iteration_before_running(trace, tmp_path, capsys):
    base = ["validate", "--trace", trace, "--workdir", str(tmp_path / "w"), "--docs", ""]
    for extra, message in ((["--ranks", "2,3"], "2 workers, cannot emulate 3"),
                           (["--ranks", "2", "--iteration", "1"], "--iteration: 1 out of range"),
                           (["--ranks", "2", "--calibration-iteration", "4"], "--calibration-iteration: 4 out of range")):
        assert main(base + extra) == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / "w").exists() and netns.project_namespaces(os.getpid()) == []


def test_rank_program_without_rank_or_with_one_out_of_range(monkeypatch, capsys):
    from emulate import rank

    monkeypatch.delenv("RANK", raising=False)
    assert rank.main(["--task", "netcal", "--world", "2"]) == 2
    assert "--rank: not given" in capsys.readouterr().err
    assert rank.main(["--task", "netcal", "--rank", "2", "--world", "2"]) == 2
    assert "--rank: 2 out of range" in capsys.readouterr().err


def test_without_iproute2_every_check_is_one_line(trace, tmp_path, monkeypatch, capsys):
    """A host without iproute2 (a GPU container): bad arguments are named as anywhere else, good ones end
    in one line saying what is missing, and nothing raises FileNotFoundError."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no ip, no tc
    for argv in (["emulate", "--ranks", "2", "--trace", trace, "--scheme", "zen", "--bandwidth", "10mbit"],
                 ["validate", "--ranks", "2", "--trace", trace, "--schemes", "zen", "--bandwidth", "10mbit",
                  "--workdir", str(tmp_path / "w"), "--docs", ""],
                 ["calibrate", "--ranks", "2", "--bandwidth", "10mbit", "--out", str(tmp_path / "p.json")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err == "zensim: error: emulation needs iproute2: ip, tc not found on PATH", err
    for argv, message in CASES[:3]:
        assert main([*argv, "--trace", trace]) == 2
        assert re.search(message, capsys.readouterr().err)
        assert netns.project_namespaces(os.getpid()) == [] and netns.project_host_links() == []
    with pytest.raises(netns.NamespaceError, match="^emulation needs iproute2: tc not found on PATH$"):
        netns._run(["tc", "qdisc", "show"])
