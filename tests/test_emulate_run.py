"""Emulation end to end on 4 namespaces: correct results, bytes equal to the in-memory driver, clean teardown,
and a killed rank reported with the others ended."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

from test_emulate_cluster import WAIT, needs_netns

from emulate import netns
from emulate.launch import RankFailed, launch_local
from emulate.netns import LocalCluster, project_host_links, project_namespaces
from emulate.session import emulate_trace, run_args
from emulate.simulate import scheme_logs
from zensim.errors import ConfigError
from zensim.run.torchdist import HEADER_BYTES, RECEIPT_BYTES
from zensim.trace import LayerSpec, TensorSpec, Trace, TraceWriter


def _trace(path, numel: int, nnz: int, workers: int = 4) -> str:
    """A small skewed trace with float32 values."""
    spec = TensorSpec("emb", numel=numel, layers=(LayerSpec("emb", 0, numel),))
    rng = np.random.default_rng(3)
    with TraceWriter(str(path), [spec], workers=workers, iterations=1, value_dtype="float32", batch_size=1,
                     workload="test", provenance={}) as w:
        for k in range(workers):
            idx = np.unique((rng.zipf(1.2, nnz) + k) % numel).astype(np.int64)
            w.write(0, k, 0, idx, rng.standard_normal(len(idx)).astype(np.float32))
    return str(path)


def _no_project_objects() -> bool:
    """Nothing of this process's clusters is left (another emulation's may exist), nothing in the host's
    namespace."""
    host_qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout
    return (project_namespaces(os.getpid()) == [] and netns.project_run_dirs(os.getpid()) == []
            and project_host_links() == [] and netns.PREFIX not in host_qdiscs)


@needs_netns
def test_four_ranks_two_schemes_correct_and_bytes_match_the_driver(tmp_path):
    path = _trace(tmp_path / "t.zt", 20_000, 600)
    schemes = ["zen", "ring-incr-central"]
    records, outs, cluster = emulate_trace(path, 4, 20e6, schemes, repeats=1, peers="dense,sparse", wait_lock=WAIT)
    assert _no_project_objects()
    assert cluster["ranks"] == 4 and cluster["rate_bps"] == 20_000_000
    by = {(r["kind"], r["name"]): r for r in records}
    assert set(by) == {("scheme", "zen"), ("scheme", "ring-incr-central"), ("peer", "dense"), ("peer", "sparse")}
    assert all(r["correct"] for r in records), [r["errors"] for r in records]
    logs = scheme_logs(Trace.open(path), 0, 4, schemes, {})
    for name in schemes:
        assert by[("scheme", name)]["sent"] == logs[name].bytes_sent().tolist()
        assert by[("scheme", name)]["received"] == logs[name].bytes_received().tolist()
        # one 8-byte size header per message sent and a receipt per message received, apart from the payload
        arrays = logs[name].arrays()
        per_rank = (np.bincount(arrays["src"], minlength=4) * HEADER_BYTES
                    + np.bincount(arrays["dst"], minlength=4) * RECEIPT_BYTES)
        assert by[("scheme", name)]["control_sent"] == per_rank.tolist()
    for out in outs:  # the wire carried at least the payload (TCP/IP headers come on top)
        for run in out["runs"]:
            if run["kind"] == "scheme":
                assert run["wire_tx"] >= run["sent"] + run["control_sent"]
    # one host, one clock: every rank of a run is timed from the same instant, which none began before
    for k in range(len(outs[0]["runs"])):
        assert len({out["runs"][k]["t_start"] for out in outs}) == 1
        assert all(out["runs"][k]["start_lag_s"] >= 0 for out in outs)


@needs_netns
def test_a_killed_rank_is_reported_and_the_others_ended(tmp_path):
    path = _trace(tmp_path / "t.zt", 400_000, 2000)  # dense all_reduce of 1.6 MB at 2 Mbit/s: seconds
    victim = {}

    def kill_rank_two(procs, workdir):
        def killer():
            deadline = time.monotonic() + 60
            while not (workdir / "progress").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)  # inside the dense all_reduce
            victim["pid"] = procs[2].pid
            procs[2].send_signal(signal.SIGKILL)

        threading.Thread(target=killer, daemon=True).start()
        victim["procs"] = procs

    with pytest.raises(RankFailed, match=r"rank 2 was killed by signal 9 \(SIGKILL\); other ranks ended$"):
        with LocalCluster(4, 2_000_000, wait_lock=WAIT) as cluster:
            launch_local(cluster, run_args(path, [], 1, "dense", 0, {}, 120), timeout=120, on_start=kill_rank_two)
    assert "pid" in victim
    assert all(p.poll() is not None for p in victim["procs"])  # every rank ended
    assert _no_project_objects()


def test_bad_trace_is_a_one_line_error_before_any_namespace(tmp_path):
    path = _trace(tmp_path / "t.zt", 1000, 50, workers=2)
    with pytest.raises(ConfigError, match="2 workers, cannot emulate 4 ranks"):
        emulate_trace(path, 4, 1e6, ["zen"])
    with pytest.raises(ConfigError, match="unknown"):
        emulate_trace(path, 2, 1e6, ["no-such-scheme"])
