"""Command-line defects found trying zensim as a new user (issue 12, item 5): negative unit values,
leaf-spine options without a leaf-spine, `capture --hook` outside torchrun, SIGTERM during capture,
and `validate` writing into the repository's docs/ by default."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from zensim.cli import main
from zensim.trace.synth import SynthParams, synthesize

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "t.zt"
    synthesize(path, 4, [("w", 2000)], SynthParams(0.02), iterations=1, seed=1)
    return path


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "\n" not in err and err.startswith("zensim: error:") and "usage:" not in err, err
    return err


@pytest.mark.parametrize("option, value, message", [
    ("--nic", "-25Gbps", "--nic: cannot parse '-25Gbps' as a bandwidth"),
    ("--nvlink", "-300GB/s", "--nvlink: cannot parse '-300GB/s' as a bandwidth"),
    ("--nic-latency", "-5us", "--nic-latency: cannot parse '-5us' as a latency"),
    ("--nvlink-latency", "-.5us", "--nvlink-latency: cannot parse '-.5us' as a latency"),
    # issue 26: figures no link has (typos) were simulated
    ("--nic", "1e30Gbps", "--nic: '1e30Gbps' is above 1000Tbps"),
    ("--nvlink", "2e15B/s", "--nvlink: '2e15B/s' is above 1000Tbps"),
    ("--nic-latency", "1e9s", "--nic-latency: '1e9s' is above 10 s"),
])
def test_negative_or_impossible_unit_values_are_one_line_errors(trace, capsys, option, value, message):
    assert main(["simulate", "--trace", str(trace), "--machines", "2", option, value]) == 2
    assert message in one_line_error(capsys)


@pytest.mark.parametrize("extra, message", [
    (["--oversub", "4"], "--oversub: only for a leaf-spine fabric (fabric is 'switch'"),
    (["--machines-per-leaf", "2"], "--machines-per-leaf: only for a leaf-spine fabric"),
])
def test_leafspine_options_without_a_leafspine_are_refused(trace, capsys, extra, message):
    assert main(["simulate", "--trace", str(trace), "--machines", "4", "--scheme", "zen", *extra]) == 2
    assert message in one_line_error(capsys)
    assert main(["simulate", "--trace", str(trace), "--machines", "4", "--scheme", "zen", "--fabric", "leafspine",
                 *extra, "--json"]) == 0
    assert "leafspine" in capsys.readouterr().out


def test_capture_hook_outside_torchrun_says_to_use_torchrun(tmp_path, monkeypatch, capsys):
    script = tmp_path / "train.py"
    script.write_text("import torch.distributed as dist\ndist.init_process_group('gloo')\n")
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    assert main(["capture", "--hook", str(script), "--iterations", "1", "-o", str(tmp_path / "s{rank}.zt")]) == 2
    err = one_line_error(capsys)
    assert "RANK is not set: start it under torchrun" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def wait_for(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


ENDLESS_DDP = """
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
ddp = DistributedDataParallel(nn.Embedding(50, 3))
while True:
    ddp(torch.arange(4)).sum().backward()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("mode", ["workload", "hook"])
def test_sigterm_during_capture_leaves_no_temporary_file(tmp_path, mode):
    """SIGTERM (what torchrun and batch schedulers send) while the trace is being written: exit 143, and
    neither the trace nor its temporary file is left."""
    env = dict(os.environ)
    if mode == "workload":
        args = ["--workload", "deepfm", "--workers", "2", "-o", str(tmp_path / "deepfm.zt")]
    else:
        (tmp_path / "script").mkdir()
        (tmp_path / "script" / "train.py").write_text(ENDLESS_DDP)
        args = ["--hook", str(tmp_path / "script" / "train.py"), "-o", str(tmp_path / "s{rank}.zt")]
        env.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                   GLOO_SOCKET_IFNAME="lo")
    proc = subprocess.Popen([sys.executable, "-m", "zensim.cli", "capture", *args, "--iterations", "1000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        wait_for(lambda: any(p.name.endswith(".tmp") for p in tmp_path.iterdir()) or proc.poll() is not None)
        time.sleep(0.5)  # into the training loop
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert err.strip().endswith("zensim: terminated by SIGTERM")
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if mode == "workload" else ["script"])


def test_validate_never_writes_into_the_repository_docs_by_default(tmp_path, monkeypatch, capsys):
    """The page of `validate --from-json` goes into --workdir, not ./docs, unless --docs says so."""
    src = ROOT / "docs" / "validation-data" / "validation.json"
    if not src.exists():
        pytest.skip("no earlier validation.json in docs/validation-data")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "validation.md").write_text("the project's page\n")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "--from-json", str(src), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"]
    assert (tmp_path / "docs" / "validation.md").read_text() == "the project's page\n"
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["validation.md"]
    assert sorted(p.name for p in (tmp_path / "validation-out").iterdir()) == ["validation.md", "validation.png"]


# Issue 26, item 6: inputs accepted silently or refused late, each refused before any work in one line.
DENSE = str(ROOT / "traces" / "digits-cnn-16w.zt")  # a trace with values: what --iterations replays
REPLAY = ["simulate", "--trace", DENSE, "--scheme", "spardl", "--machines", "4", "--replay", "0:2"]


@pytest.mark.parametrize("extra, message", [
    (["--density", "0.5"], "--density: only with --replay A:B"),
    (["--density", "0"], "--density: only with --replay A:B"),
    (["--sparsifier", "topk"], "--sparsifier: only with --replay A:B"),
    (["--per-iteration"], "--per-iteration: only with --replay A:B"),
])
def test_replay_options_without_iterations_are_refused(trace, capsys, extra, message):
    assert main(["simulate", "--trace", str(trace), "--machines", "2", "--scheme", "zen", *extra]) == 2
    assert message in one_line_error(capsys)


@pytest.mark.parametrize("extra, message", [
    (["--iteration", "3"], "--iteration 3: not with --replay 0:2"),
    (["--iteration", "0"], "--iteration 0: not with --replay 0:2"),
    (["--model", "analytic"], "--model: analytic has no timeline for a replay over iterations"),
    (["--options", '{"nosuch": 1}'], "--options: 'nosuch' is accepted by none of spardl"),
    (["--scheme", "zen+nosuch"], "--scheme zen+nosuch: unknown sparsifier 'nosuch'"),
])
def test_replay_inputs_it_would_ignore_or_misname_are_refused(capsys, extra, message):
    assert main([*REPLAY, *extra]) == 2
    assert message in one_line_error(capsys)


def test_partition_needs_a_hash_function(capsys):
    assert main(["partition", str(ROOT / "traces" / "lstm-lm-16w.zt"), "--k", "0"]) == 2
    assert "--k 0: must be at least 1" in one_line_error(capsys)


@pytest.mark.parametrize("option", ["--csv", "--plot", "--timeline"])
def test_dash_is_not_a_file_name(trace, tmp_path, monkeypatch, capsys, option):
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "--trace", str(trace), "--machines", "2", "--scheme", "zen", option, "-"]) == 2
    assert f"{option}: '-' (standard output) is not an output here" in one_line_error(capsys)
    assert list(tmp_path.iterdir()) == []


def _trace_commands(tmp_path: Path, trace: Path) -> dict[str, list[str]]:
    """Every command that writes a trace to -o, each a cheap run (its -o appended by the caller)."""
    from zensim.trace.format import TensorSpec, TraceWriter

    shards = []
    for rank in range(2):
        shards.append(str(tmp_path / f"shard-{rank}.zt"))
        with TraceWriter(shards[-1], [TensorSpec("w", 10)], workers=1, iterations=1,
                         provenance={"shard": {"rank": rank, "world_size": 2}}) as w:
            w.write(0, 0, 0, np.arange(rank, 10, 3))
    return {
        "synth": ["trace", "synth", "--workers", "2", "--numel", "100", "--density", "0.1"],
        "scale": ["trace", "scale", str(trace), "--workers", "3", "--iterations", "1"],
        "merge": ["trace", "merge", *shards],
        "capture": ["capture", "--workload", "deepfm", "--workers", "2", "--iterations", "1"],
    }


@pytest.mark.parametrize("command", ["synth", "scale", "merge", "capture"])
def test_trace_commands_replace_no_file_unless_forced(command, trace, tmp_path, capsys):
    argv = _trace_commands(tmp_path, trace)[command]
    out = tmp_path / "t.zt"
    out.write_bytes(b"a capture")
    before = sorted(tmp_path.iterdir())
    assert main([*argv, "-o", str(out)]) == 2
    assert f"-o {out}: exists" in one_line_error(capsys)
    assert out.read_bytes() == b"a capture" and sorted(tmp_path.iterdir()) == before  # nothing half-written
    assert main([*argv, "-o", str(out), "--force"]) == 0
    assert out.read_bytes()[:8] != b"a captur"


def test_capture_hook_replaces_no_shard_of_its_rank(tmp_path, capsys, monkeypatch):
    script = tmp_path / "train.py"
    script.write_text("raise SystemExit('the script ran')\n")
    (tmp_path / "s3.zt").write_bytes(b"rank 3's shard")
    monkeypatch.setenv("RANK", "3")
    assert main(["capture", "--hook", str(script), "--iterations", "1", "-o", str(tmp_path / "s{rank}.zt")]) == 2
    assert f"-o {tmp_path / 's3.zt'}: exists" in one_line_error(capsys)
    assert (tmp_path / "s3.zt").read_bytes() == b"rank 3's shard"


def test_converge_refuses_an_unknown_model_before_training(capsys, monkeypatch):
    import zensim.replay.training as training

    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("trained before refusing --model"))
    assert main(["converge", "--model", "nosuch", "--iterations", "2"]) == 2
    assert "--model nosuch: unknown (choose from fifo, maxmin)" in one_line_error(capsys)


def test_a_binary_file_as_profile_is_one_line(trace, capsys):
    assert main(["simulate", "--trace", str(trace), "--machines", "2", "--profile", str(trace)]) == 2
    assert f"{trace}: not a JSON profile (not UTF-8 text)" in one_line_error(capsys)


def test_a_cache_under_a_file_is_one_line_before_any_point(trace, tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"trace: {trace}\nschemes: [zen]\nsweep:\n  machines: [2, 4]\noutputs:\n  csv: out.csv\n")
    (tmp_path / "afile").write_text("")
    assert main(["sweep", str(scenario), "--workers", "0", "--cache", str(tmp_path / "afile" / "c"),
                 "--out", str(tmp_path)]) == 2
    assert "--cache: cannot create folder" in one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "s.yaml"]


def test_no_progress_bar_goes_into_a_redirected_stderr(capsys):
    assert main([*REPLAY, "--json"]) == 0
    err = capsys.readouterr().err
    assert "replay" not in err and "\r" not in err, err
