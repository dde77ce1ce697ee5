"""Output files of `simulate` and `run`: every path checked before the work, all outputs or none, never
onto an input, plot formats from the extension (issue 12, item 5)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from zensim.atomic import write_all_atomic
from zensim.cli import main
from zensim.errors import ConfigError
from zensim.report.outputs import PLOT_FORMATS, OutputFiles, plot_format
from zensim.sim import run as run_mod
from zensim.trace.synth import SynthParams, synthesize

MAGIC = {"png": b"\x89PNG", "pdf": b"%PDF", "svg": b"<?xml"}


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    synthesize(path, 8, [("w", 4000)], SynthParams(0.02, 0.3, 1.0), iterations=1, seed=3)
    return path


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a simulation starts: an output problem must be found before it."""
    def boom(*args, **kwargs):
        raise AssertionError("simulated before the outputs were checked")
    monkeypatch.setattr(run_mod, "simulate", boom)


def simulate_argv(trace: Path, *extra: str) -> list[str]:
    return ["simulate", "--trace", str(trace), "--machines", "4", "--scheme", "zen", *extra]


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("zensim: error:"), err
    return err


@pytest.mark.parametrize("option, target, message", [
    ("--csv", "nodir/x.csv", "--csv: directory of nodir/x.csv does not exist"),
    ("--plot", "nodir/x.png", "--plot: directory of nodir/x.png"),
    ("--timeline", "nodir/t.json", "--timeline: directory of nodir/t.json"),
    ("--csv", "adir", "--csv: adir is a directory"),
    ("--plot", "adir", "--plot: adir is a directory"),
    ("--plot", "x.png.bak", "--plot: x.png.bak: extension .bak"),
    ("--plot", "plot", "--plot: plot: no extension"),
])
def test_simulate_checks_outputs_before_simulating(trace, tmp_path, monkeypatch, capsys, no_simulation,
                                                   option, target, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    assert main(simulate_argv(trace, option, target)) == 2
    assert message in one_line_error(capsys)


def test_simulate_refuses_to_write_onto_its_trace(trace, tmp_path, capsys, no_simulation):
    copy = tmp_path / "copy.zt"
    copy.write_bytes(trace.read_bytes())
    before = copy.read_bytes()
    assert main(simulate_argv(copy, "--csv", str(copy))) == 2
    assert "is an input of this run" in one_line_error(capsys)
    assert copy.read_bytes() == before
    os.link(copy, tmp_path / "hard.zt")  # the same file under another name
    assert main(simulate_argv(copy, "--timeline", str(tmp_path / "hard.zt"))) == 2
    assert "is an input of this run" in one_line_error(capsys)


def test_simulate_refuses_two_outputs_on_one_path(trace, tmp_path, capsys, no_simulation):
    assert main(simulate_argv(trace, "--csv", str(tmp_path / "x"), "--timeline", str(tmp_path / "x"))) == 2
    assert "is also the output of --csv" in one_line_error(capsys)


@pytest.mark.parametrize("fmt", ["png", "pdf", "svg"])
def test_simulate_plot_honours_the_extension(trace, tmp_path, capsys, fmt):
    out = tmp_path / f"p.{fmt}"
    assert main(simulate_argv(trace, "--plot", str(out))) == 0
    assert out.read_bytes().startswith(MAGIC[fmt])


def test_every_plot_format_is_one_matplotlib_writes():
    import matplotlib.pyplot as plt

    supported = plt.figure().canvas.get_supported_filetypes()
    assert set(PLOT_FORMATS) <= set(supported)
    assert plot_format("A.PDF") == "pdf"


def test_simulate_writes_all_outputs_or_none(trace, tmp_path, monkeypatch, capsys):
    """A failure while writing the last output leaves no output (and no temporary file) behind."""
    import zensim.report.plots as plots

    def broken(fig, fmt):
        raise ConfigError("plot failed")
    monkeypatch.setattr(plots, "figure_bytes", broken)
    (tmp_path / "old.csv").write_text("earlier results\n")
    argv = simulate_argv(trace, "--csv", str(tmp_path / "old.csv"), "--timeline", str(tmp_path / "t.json"),
                         "--plot", str(tmp_path / "p.png"))
    assert main(argv) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv"]
    assert (tmp_path / "old.csv").read_text() == "earlier results\n"


def test_write_all_atomic_discards_every_file_when_one_fails(tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(ConfigError, match="is a directory"):
        write_all_atomic([(tmp_path / "a.txt", "a"), (tmp_path / "b.txt", b"b"), (tmp_path / "dir", "c")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]
    write_all_atomic([(tmp_path / "a.txt", "a"), (tmp_path / "b.txt", b"b")])
    assert (tmp_path / "a.txt").read_text() == "a" and (tmp_path / "b.txt").read_text() == "b"


def test_output_files_create_folders_only_where_possible(tmp_path):
    (tmp_path / "file").write_text("x")
    outs = OutputFiles(create_folders=True)
    with pytest.raises(ConfigError, match="is a file"):
        outs.add(tmp_path / "file" / "sub" / "x.csv", "outputs.csv")
    path = outs.add(tmp_path / "new" / "deeper" / "x.csv", "outputs.csv")
    assert not (tmp_path / "new").exists()  # nothing is made before the work
    outs.write({path: "a,b\n"})
    assert path.read_text() == "a,b\n"


SCENARIO = """
trace: {trace}
cluster: {{machines: 4}}
schemes: [zen]
outputs: {outputs}
"""


@pytest.mark.parametrize("outputs, message", [
    ("{csv: adir}", r"scn.yaml: outputs.csv: \S*/w/adir is a directory"),
    ("{csv: afile/x.csv}", r"scn.yaml: outputs.csv: cannot create folder \S*/w/afile \(\S*/w/afile is a file\)"),
    ("{plot: p.bmp}", r"scn.yaml: outputs.plot: \S*/w/p.bmp: extension .bmp"),
    ("{csv: scn.yaml}", r"scn.yaml: outputs.csv: \S*/w/scn.yaml is an input of this run"),
    ("{json: ../t.zt}", r"outputs.json: \S*/t.zt is an input of this run"),
    ("{json: r.json, csv: r.json}", r"outputs.csv: \S*/r.json is also the output of \S*scn.yaml: outputs.json"),
])
def test_run_checks_outputs_before_simulating(trace, tmp_path, monkeypatch, capsys, no_simulation,
                                              outputs, message):
    work = tmp_path / "w"
    work.mkdir()
    (work / "adir").mkdir()
    (work / "afile").write_text("x")
    local = tmp_path / "t.zt"
    local.write_bytes(trace.read_bytes())
    scn = work / "scn.yaml"
    scn.write_text(SCENARIO.format(trace="../t.zt", outputs=outputs))
    monkeypatch.chdir(work)
    assert main(["run", str(scn), "--out", str(work)]) == 2
    assert re.search(message, one_line_error(capsys))


def test_partition_csv_onto_its_trace_is_refused(trace, tmp_path, capsys):
    copy = tmp_path / "copy.zt"
    copy.write_bytes(trace.read_bytes())
    assert main(["partition", str(copy), "--csv", str(copy)]) == 2
    assert "is an input of this run" in one_line_error(capsys)
    assert copy.read_bytes() == trace.read_bytes()
