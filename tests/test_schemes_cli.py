"""`zensim schemes`: the listing covers the design space exactly."""

from __future__ import annotations

import json

from zensim.cli import main
from zensim.schemes import RAW


def test_schemes_json_lists_15_distinct_covering_the_24_raw(capsys):
    assert main(["schemes", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    distinct = [r for r in rows if r["kind"] == "distinct"]
    assert len(distinct) == 15
    raw = [c for r in distinct for c in r["collapses"]]
    assert sorted(raw) == sorted(p.raw_name for p in RAW)  # each raw combination exactly once
    presets = {r["name"]: r for r in rows if r["kind"] == "preset"}
    assert {"dense-allreduce", "dense-doubling", "agsparse-ring", "agsparse-hier", "agsparse-p2p", "sparcml", "sparse-ps",
            "sparse-ps-bcast", "omnireduce", "zen-coo", "zen", "hier-central", "zen-auto",
            "topka", "topkdsa", "gtopk", "spardl", "exdyna", "oktopk"} == set(presets)
    assert presets["zen"]["format"] == "coo/hash_bitmap" and presets["omnireduce"]["format"] == "blocks"


def test_schemes_table_and_kind_filter(capsys):
    assert main(["schemes", "--kind", "preset"]) == 0
    out = capsys.readouterr().out
    assert "omnireduce" in out and "ring-incr-central " not in out


def test_schemes_options_lists_what_the_parts_declare(capsys):
    """`zensim schemes --options NAME`: Parallelism adds pull, partitioner, seed; Centralization none."""
    assert main(["schemes", "--options", "zen", "--json"]) == 0
    zen = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert {"push", "pull", "value_dtype", "block_size", "partitioner", "seed", "pull_pattern"} == set(zen)
    assert "hash_bitmap" in zen["pull"]["choices"]
    assert main(["schemes", "--options", "sparcml", "--json"]) == 0
    assert {r["name"] for r in json.loads(capsys.readouterr().out)} == {"push", "value_dtype", "block_size"}
    assert main(["schemes", "--options", "nope"]) == 2
    assert "unknown" in capsys.readouterr().err
