"""A newcomer never waits silently for numba (issue 26, item 2): a command about to compile a loop says
so on stderr before compiling (an empty NUMBA_CACHE_DIR), says nothing once the loop is cached, and
`zensim warmup` (what `make install` runs) compiles every loop a simulation uses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "traces" / "lstm-lm-16w.zt"


def zensim(*args: str, cache: Path | None = None, jit: bool = True) -> subprocess.Popen:
    """`zensim args` in a new process, with numba's cache in `cache` (None: its default place); with `jit`
    false, NUMBA_DISABLE_JIT=1 (the loops run as Python)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")}
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    if not jit:
        env["NUMBA_DISABLE_JIT"] = "1"
    return subprocess.Popen([sys.executable, "-m", "zensim.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


def simulate(model: str, cache: Path | None = None, jit: bool = True) -> subprocess.Popen:
    """`zensim simulate` of zen and the dense baseline on a shipped trace, 16 machines."""
    return zensim("simulate", "--trace", str(TRACE), "--scheme", "zen,dense-allreduce", "--machines", "16",
                  "--nic", "25Gbps", "--model", model, cache=cache, jit=jit)


@pytest.mark.parametrize("model", ["fifo", "maxmin"])
def test_a_cold_cache_is_announced_before_compiling(tmp_path, model):
    """With an empty cache the first stderr line names the loop about to compile, once per machine and
    about how long, while it has not been compiled yet (nothing of it in the cache); the process is
    stopped there (the compile itself takes a minute of CPU)."""
    proc = simulate(model, tmp_path)
    try:
        line = next((line for line in proc.stderr if "compiling" in line), "")
        compiled = sorted(p.name for p in tmp_path.rglob("*.nbc"))
        running = proc.poll() is None
    finally:
        proc.kill()
        proc.communicate()
    assert line.startswith(f"zensim: compiling the {model} network loop (zensim.net.fast{model}) with numba, "
                           "once per machine: about "), line
    assert " s of CPU " in line and str(tmp_path) in line and "zensim warmup" in line
    assert running and compiled == []


def test_announced_once_then_silent(tmp_path):
    """A loop compiled into the cache is not announced again: the threshold kernel (the cheapest to
    compile), twice in one empty cache dir."""
    code = "import numpy as np; from zensim.sparsify.kernels import at_least; print(at_least(np.ones(3), 0.5))"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                           env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}) for _ in range(2)]
    assert [run.stdout for run in runs] == ["[0 1 2]\n"] * 2
    assert runs[0].stderr.startswith("zensim: compiling the threshold kernel (zensim.sparsify.kernels.at_least)")
    assert runs[1].stderr == ""


def test_warmup_compiles_what_a_simulation_uses():
    """`zensim warmup` says what it compiles and how long it took; after it (in numba's default cache,
    once per machine) simulations on both models compile nothing and say nothing of it."""
    warm = zensim("warmup")
    out, err = warm.communicate(timeout=600)
    assert warm.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("warmup: compiling zensim's numba loops into numba's cache")
    for name in ("fifo network loop", "fifo steps", "maxmin network loop", "maxmin solver and steps",
                 "threshold kernel"):
        assert any(line.startswith(f"warmup: {name} (") and line.endswith(" s") for line in lines), name
    assert lines[-1].startswith("warmup: done in ")
    for model in ("fifo", "maxmin"):
        out, err = simulate(model).communicate(timeout=120)
        assert "zen" in out and "compiling" not in err, err


def test_disabled_jit_runs_the_loops_as_python(tmp_path):
    """NUMBA_DISABLE_JIT=1, for debugging the compiled loops (their state is named, docs/simulator.md):
    the same code runs as Python, announces nothing, compiles nothing and prints the compiled run's
    output to the last digit (the fifo loop, zen and the dense baseline)."""
    python = simulate("fifo", tmp_path, jit=False)
    out, err = python.communicate(timeout=600)
    assert python.returncode == 0 and "compiling" not in err, err
    assert list(tmp_path.rglob("*.nbc")) == []
    compiled = simulate("fifo")
    want, err = compiled.communicate(timeout=600)
    assert compiled.returncode == 0, err
    assert out == want and "zen" in out
