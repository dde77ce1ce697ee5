"""The value-dependent schemes (Ok-Topk included) through the emulator's rank program: 4 processes
over loopback gloo (no root), same stage programs over the torch.distributed transport, every
message's bytes equal to the simulation's (in-memory driver) and every rank's result bit for bit."""

from __future__ import annotations

import pytest

from emulate.driver import digest
from test_run_torchdist import RANKS, run_gloo_ranks, write_trace
from zensim.run import run_ranks
from zensim.schemes import build_scheme
from zensim.trace import Trace
from zensim.trace.values import worker_chunk

SCHEMES = ["spardl", "exdyna", "gtopk", "topka", "topkdsa", "oktopk"]


@pytest.mark.parametrize("schemes,extra", [(SCHEMES, {}), (["spardl"], {"teams": 4, "sag": "bsag"})],
                         ids=["all", "spardl-bsag"])
def test_emulated_bytes_equal_simulated(tmp_path, schemes, extra):
    """B-SAG with 4 teams of one rank: top-h, a Bruck step of one team and one of a bundle of two."""
    options = {"value_dtype": "float32", **extra}
    trace = write_trace(tmp_path / "t.zt")
    outs = run_gloo_ranks(tmp_path, trace, schemes, options)
    with Trace.open(trace) as t:
        chunks = [worker_chunk(t, 0, w, True) for w in range(RANKS)]
        numel = t.numel
    for name in schemes:
        memory = run_ranks(build_scheme(name, RANKS, numel, **options), chunks, check=False)
        want = {}
        for m in memory.log.messages:
            want.setdefault(m.stage, {})[(m.src, m.dst)] = m.nbytes
        assert want, name
        for rank, out in enumerate(outs):
            [run] = [r for r in out["runs"] if r["name"] == name]
            assert run.get("error") is None, (name, rank, run.get("error"))
            assert run["digest"] == digest(memory.results[rank]), (name, rank)
            for s, stage in enumerate(run["stages"]):
                got = {(rank, int(d)): b for d, b in stage["sent_to"].items()}
                assert got == {k: v for k, v in want.get(s, {}).items() if k[0] == rank}, (name, rank, s)
