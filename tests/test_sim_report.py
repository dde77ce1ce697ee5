"""Report outputs: CSV/JSON text, atomic writes, Chrome trace structure, PNG plots."""

import csv
import io
import json
import os

import pytest

from zensim.errors import ConfigError
from zensim.net.costs import Costs
from zensim.net.profile import WorkCost
from zensim.net.replay import replay
from zensim.net.topology import ClusterSpec
from zensim.report.chrome import Track, chrome_trace
from zensim.report.export import to_csv, to_json, write_atomic
from zensim.run.log import Message, MessageLog

ROWS = [{"scheme": "a", "time_s": 1.5, "vs_dense": 0.5, "bytes_sent": [1, 2], "cluster": "c", "model": "fifo"},
        {"scheme": "b", "time_s": 3.0, "vs_dense": None, "bytes_sent": [3, 4], "cluster": "c", "model": "fifo"}]


def test_csv_and_json():
    parsed = list(csv.DictReader(io.StringIO(to_csv(ROWS))))
    assert parsed[0]["bytes_sent"] == "1;2" and parsed[1]["vs_dense"] == ""
    assert json.loads(to_json(ROWS)) == ROWS


def test_atomic_write(tmp_path):
    target = tmp_path / "out.txt"
    write_atomic(target, "one")
    write_atomic(target, b"two")
    assert target.read_text() == "two" and os.listdir(tmp_path) == ["out.txt"]
    with pytest.raises(ConfigError, match="cannot write"):
        write_atomic(tmp_path / "missing" / "x.txt", "z")


def test_chrome_trace_tracks():
    log = MessageLog(3, 2, [Message(0, 0, 1, 1000, "coo"), Message(1, 1, 2, 2000, "coo")])
    timing = replay(log, Costs(ClusterSpec(3, 1, 1e9), WorkCost.zero()))
    doc = json.loads(json.dumps(chrome_trace([Track("x", timing, log), Track("y", timing, log)])))
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "stage"]
    assert len(spans) == 2 * 3 * 2
    assert {(e["pid"], e["tid"]) for e in spans} == {(p, r) for p in (0, 2) for r in range(3)}  # odd pids: counters
    stage1_rank2 = next(e for e in spans if e["pid"] == 0 and e["tid"] == 2 and e["name"] == "stage 1")
    assert stage1_rank2["args"]["received_bytes"] == 2000
    assert stage1_rank2["ts"] + stage1_rank2["dur"] == pytest.approx(timing.stage_end[2, 1] * 1e6)


def test_write_atomic_to_a_directory_is_one_line_and_leaves_nothing(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(ConfigError, match="out: is a directory"):
        write_atomic(tmp_path / "out", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
