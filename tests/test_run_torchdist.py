"""The emulator's rank path without root or namespaces: the rank program on 4 processes joined by
gloo over loopback runs the same loop over the torch.distributed transport and gets exactly the
in-memory driver's messages and results."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
from emulate.driver import digest
from zensim.run import run_ranks
from zensim.schemes import build_scheme
from zensim.trace import LayerSpec, TensorSpec, Trace, TraceWriter
from zensim.trace.values import worker_chunk

RANKS = 4
SCHEMES = ["zen", "sparcml", "omnireduce", "ring-incr-central", "hier-oneshot-parallel-imbalanced"]


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_trace(path, numel: int = 30_000, nnz: int = 900) -> str:
    """A skewed 4-worker trace, indices only (the ranks make the same synthetic values)."""
    spec = TensorSpec("emb", numel=numel, layers=(LayerSpec("emb", 0, numel),))
    rng = np.random.default_rng(11)
    with TraceWriter(str(path), [spec], workers=RANKS, iterations=1) as w:
        for k in range(RANKS):
            w.write(0, k, 0, np.unique((rng.zipf(1.3, nnz) * (k + 1)) % numel).astype(np.int64))
    return str(path)


def run_gloo_ranks(tmp_path, trace: str, schemes: list[str], options: dict) -> list[dict]:
    """Start the rank program on RANKS processes over loopback gloo; their JSON outputs."""
    port = free_port()
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo"}
    procs = [subprocess.Popen([sys.executable, "-m", "emulate.rank", "--rank", str(r), "--world", str(RANKS),
                               "--master-addr", "127.0.0.1", "--master-port", str(port), "--backend", "gloo",
                               "--device", "cpu", "--trace", trace, "--schemes", ",".join(schemes),
                               "--options", json.dumps(options), "--peers", "none", "--warmup", "0",
                               "--timeout", "120", "--out", str(tmp_path / "rank{rank}.json")],
                              env=env, stderr=subprocess.PIPE, text=True) for r in range(RANKS)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(errors)
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(RANKS)]


def test_gloo_ranks_send_the_in_memory_bytes_and_end_with_its_results(tmp_path):
    """float16 on the wire: values rounded on the way, still every rank's bits as in memory."""
    options = {"value_dtype": "float16"}
    trace = write_trace(tmp_path / "t.zt")
    assert_as_in_memory(run_gloo_ranks(tmp_path, trace, SCHEMES, options), trace, SCHEMES, options)


def assert_as_in_memory(outs: list[dict], trace: str, schemes: list[str], options: dict) -> None:
    """Every rank's JSON (rank program, task run) has the in-memory driver's message sizes per stage and
    destination, and its result's bits (digest), for every scheme."""
    with Trace.open(trace) as t:
        chunks = [worker_chunk(t, 0, w) for w in range(len(outs))]
        numel = t.numel
    for name in schemes:
        memory = run_ranks(build_scheme(name, len(outs), numel, **options), chunks)
        want = {}
        for m in memory.log.messages:
            want.setdefault(m.stage, {})[(m.src, m.dst)] = m.nbytes
        for rank, out in enumerate(outs):
            [run] = [r for r in out["runs"] if r["name"] == name]
            assert run["error"] is None, (name, rank, run["error"])
            assert run["digest"] == digest(memory.results[rank]), (name, rank)
            for s, stage in enumerate(run["stages"]):
                got = {(rank, int(d)): b for d, b in stage["sent_to"].items()}
                assert got == {k: v for k, v in want.get(s, {}).items() if k[0] == rank}, (name, rank, s)
