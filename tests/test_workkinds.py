"""Local-work kinds follow the step: by wire format, by partition, merges by pieces; profiles price
refined kinds; the step kernels time every kind."""

from __future__ import annotations

import json

import numpy as np
import pytest

from schemes_support import make_chunks
from zensim.errors import ConfigError
from zensim.net.profile import WORK_OPS, WorkCost, load_profile
from zensim.run import run_ranks
from zensim.schemes import build_scheme
from zensim.schemes.workkinds import format_work, merge_work
from zensim.sparse.formats import make_format

NUMEL = 4000


def totals(log, kind_prefix: str, stage: int | None = None, phase: str | None = None) -> int:
    """Elements of every work record whose kind starts with `kind_prefix` (at `stage`, `phase`)."""
    return sum(w.elements for w in log.work if w.kind.startswith(kind_prefix)
               and (stage is None or w.stage == stage) and (phase is None or w.phase == phase))


def test_refined_kinds_are_priced_by_their_most_refined_name():
    work = WorkCost({"encode": 1e-9, "encode.coo": 2e-9, "merge": 3e-9}, {"encode.coo": 1e-6})
    assert work.priced_as("encode.coo") == "encode.coo" and work.priced_as("encode.bitmap") == "encode"
    assert work.seconds("encode.coo", 1000) == pytest.approx(1e-6 + 2e-6)
    assert work.seconds("encode.bitmap", 1000) == pytest.approx(1e-6)  # no fixed cost at "encode"
    assert work.seconds("merge.coo", 0) == 0.0
    with pytest.raises(ValueError, match="unknown work kind 'frobnicate.coo'"):
        work.priced_as("frobnicate.coo")
    assert set(WorkCost.zero().per_element) == set(WORK_OPS)


@pytest.mark.parametrize("kind", ["frobnicate", "encode..coo", ""])
def test_a_profile_with_an_unknown_work_kind_is_refused(tmp_path, kind):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"schema": "zensim-profile/1", "work_seconds_per_element": {kind: 1e-9}}))
    with pytest.raises(ConfigError, match=f"{path}: unknown work kind"):
        load_profile(path)


def test_format_work_by_format_and_partition():
    coo, bitmap, dense = make_format("coo"), make_format("hash_bitmap"), make_format("dense")
    assert format_work("encode", coo, False, 10, 100) == [("encode.coo", 10)]
    assert format_work("encode", coo, True, 10, 100) == [("encode.coo", 10), ("search", 10)]  # a search per element
    assert format_work("decode", coo, True, 10, 100) == [("decode.coo", 10)]  # ids travel: no search
    assert format_work("encode", bitmap, True, 10, 100) == [("encode.bitmap", 10), ("search", 10), ("pack.bitmap", 100)]
    assert format_work("decode", bitmap, True, 10, 100) == [("decode.bitmap", 10), ("unpack.bitmap", 100)]
    assert format_work("decode", dense, False, 10, 100) == [("scan.dense", 100)]
    counts, positions = np.array([3, 0, 5]), np.array([40, 40, 41])
    vector = format_work("encode", bitmap, True, counts, positions)
    assert [k for k, _ in vector] == ["encode.bitmap", "search", "pack.bitmap"] and vector[2][1] is positions


def test_merge_work_by_pieces():
    assert merge_work(False, 100, 50, 1) == [] and merge_work(True, 100, 50, 1) == []
    assert merge_work(False, 100, 50, 2) == [("merge.coo", 100)]  # two sorted runs: 2 steps per element
    assert merge_work(False, 100, 50, 8) == [("merge.coo", 200)]  # 1 + log2 8
    assert merge_work(False, 100, 50, 5) == [("merge.coo", 200)]  # 1 + ceil(log2 5)
    assert merge_work(True, 100, 50, 3) == [("add.dense", 200)]  # two additions over every position


@pytest.mark.parametrize("n", [3, 4])
def test_the_driver_meters_what_each_step_does(n):
    chunks = make_chunks("random", n, NUMEL, 0.05, 3, True)
    nnz = sum(c.nnz for c in chunks)
    zen = run_ranks(build_scheme("zen", n, NUMEL), chunks).log
    # ZEN: every element hashed, every pushed element searched in its hash partition, the pull in bitmaps
    assert totals(zen, "hash") == nnz and totals(zen, "slice") == 0
    assert totals(zen, "search", 0) == totals(zen, "encode.coo", 0) == totals(zen, "decode.coo", 0)
    assert totals(zen, "pack.bitmap", 1) == (n - 1) * NUMEL  # each rank's partition to n - 1 peers
    assert totals(zen, "unpack.bitmap", 1) == (n - 1) * NUMEL
    ps = run_ranks(build_scheme("sparse-ps", n, NUMEL), chunks).log
    assert totals(ps, "slice") == nnz and totals(ps, "search") == totals(ps, "hash") == 0
    assert totals(ps, "merge", 1) == 0  # the pull receives whole aggregates: no merge
    dense = run_ranks(build_scheme("dense-allreduce", n, NUMEL), chunks).log
    assert {w.kind for w in dense.work} == {"slice", "scan.dense", "add.dense"}
    assert totals(dense, "add.dense") == (n - 1) * NUMEL  # each item summed n - 1 times over its positions


@pytest.mark.parametrize("device", [[], ["--device", "cpu"], ["--device", "cpu", "--payloads", "device"]],
                         ids=["numpy", "torch-cpu", "torch-cpu-device-payloads"])
def test_step_kernels_time_every_kind_and_fit(tmp_path, device):
    from zensim.cli import main

    out = tmp_path / "k.json"
    assert main(["work", "measure", "--kernels", "steps", "--max-log2", "12", "--reps", "1", "-o", str(out), *device]) == 0
    measured = json.loads(out.read_text())
    assert ("torch" in measured["device"]) == bool(device)
    assert measured["payloads"] == ("device" if "--payloads" in device else "host")
    kinds = set(measured["points"])
    assert {"hash", "slice", "search", "merge.coo", "add.dense", "scan.dense", "encode.coo", "decode.coo",
            "encode.bitmap", "unpack.bitmap"} <= kinds
    assert all(len(p) >= 3 and all(s > 0 for _, s in p) for p in measured["points"].values())
    prof = tmp_path / "p.json"
    assert main(["work", "fit", str(out), "-o", str(prof)]) == 0
    work = load_profile(prof).work
    assert kinds | {"merge", "encode", "decode"} <= set(work.per_element)
    assert work.priced_as("merge") == "merge" and work.per_element["merge"] == work.per_element["merge.coo"]


def test_device_payloads_need_a_device(tmp_path, capsys):
    from zensim.cli import main

    out = tmp_path / "k.json"
    assert main(["work", "measure", "--kernels", "steps", "--payloads", "device", "-o", str(out)]) != 0
    assert capsys.readouterr().err.strip() == "zensim: error: --payloads device: needs --kernels steps and a --device"
    assert not out.exists()
