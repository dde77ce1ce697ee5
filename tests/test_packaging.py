"""Packaging (issue 26, item 1): installing zensim keeps an environment's own torch in the tested range;
Dask and scikit-learn are extras that only sweeps on Dask and the digits workload need, and a missing
one is a one-line error naming the extra; simulate imports neither."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from zensim.cli import main

ROOT = Path(__file__).resolve().parents[1]
OTHER_TORCH = "2.13.1+cu128"  # a CUDA build in the range, not the CPU build the Makefile installs


def _venv_with_torch(folder: Path, version: str) -> Path:
    """A fresh venv whose own site-packages holds torch `version` (its metadata: all pip reads to decide
    whether an installed distribution satisfies a requirement) in front of this environment's packages
    (a .pth line), so the resolver sees every other dependency installed and needs no index."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    info = site / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("")
    (site / "zz-this-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *args],
                          capture_output=True, text=True, cwd=ROOT)


def test_pip_install_keeps_another_torch_in_the_range(tmp_path):
    python = _venv_with_torch(tmp_path / "venv", OTHER_TORCH)
    listed = {d["name"].lower(): d["version"] for d in json.loads(_pip(python, "list", "--format", "json").stdout)}
    assert listed["torch"] == OTHER_TORCH  # the venv's own torch shadows this environment's
    # --no-index: nothing may be fetched; with torch==2.13.0 this fails (or, with an index, replaces torch)
    proc = _pip(python, "install", "--dry-run", "--no-index", "--no-build-isolation", "--report", "-",
                "--quiet", ".")
    assert proc.returncode == 0, proc.stderr
    would = [f"{i['metadata']['name']}-{i['metadata']['version']}" for i in json.loads(proc.stdout)["install"]]
    print(f"torch {OTHER_TORCH} installed; pip install --dry-run . would install: {would}")  # for the CI log
    assert [w.split("-")[0].lower() for w in would] == ["zensim"]


@pytest.fixture
def missing(monkeypatch: pytest.MonkeyPatch):
    """Make modules look not installed, as importlib reports it."""
    real = importlib.util.find_spec
    gone: set[str] = set()

    def find_spec(name: str, *args):
        return None if name.split(".")[0] in gone else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    return gone


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("zensim: error:"), err
    return err


def test_dask_workers_without_the_dask_extra_is_one_line(missing, tmp_path, capsys):
    missing.add("distributed")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"trace: {ROOT / 'traces' / 'lstm-lm-16w.zt'}\nschemes: [zen]\n"
                        "sweep:\n  machines: [2, 4]\noutputs:\n  csv: out.csv\n")
    assert main(["sweep", str(scenario), "--workers", "2", "--out", str(tmp_path)]) == 2
    assert "--processes 2: needs distributed, which is not installed (pip install 'zensim[dask]')" in _one_line(capsys)
    assert main(["sweep", str(scenario), "--scheduler", "tcp://127.0.0.1:1", "--out", str(tmp_path)]) == 2
    assert "pip install 'zensim[dask]'" in _one_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]  # refused before any work


def test_a_sweep_without_the_dask_extra_runs_its_points_here(missing, tmp_path, capsys):
    missing.add("distributed")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"trace: {ROOT / 'traces' / 'lstm-lm-16w.zt'}\nschemes: [zen]\n"
                        "sweep:\n  machines: [2, 4]\noutputs:\n  csv: out.csv\n")
    assert main(["sweep", str(scenario), "--out", str(tmp_path), "--cache", "none"]) == 0
    assert "2 simulated (this process)" in capsys.readouterr().err
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 1 + 2


def test_digits_without_the_digits_extra_is_one_line(missing, tmp_path, capsys):
    missing.add("sklearn")
    assert main(["capture", "--workload", "digits-cnn", "--workers", "2", "--iterations", "1",
                 "-o", str(tmp_path / "d.zt")]) == 2
    assert ("the digits-cnn workload: needs sklearn, which is not installed (pip install 'zensim[digits]')"
            in _one_line(capsys))
    assert not (tmp_path / "d.zt").exists()


def test_simulate_imports_neither_extra():
    code = ("import sys\nfrom zensim.cli import main\n"
            "rc = main(['simulate', '--trace', 'traces/lstm-lm-16w.zt', '--scheme', 'zen', '--machines', '4', "
            "'--model', 'fifo', '--json'])\n"
            "print(rc, sorted(m for m in ('distributed', 'dask', 'sklearn') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "0 []"
