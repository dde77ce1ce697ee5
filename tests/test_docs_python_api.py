"""docs/python-api.md's notebook session runs as written (so the page never drifts from the API)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_python_api_page_runs(tmp_path, monkeypatch, capsys):
    cells = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "python-api.md").read_text(), flags=re.S)
    assert len(cells) >= 7
    (tmp_path / "traces").symlink_to(ROOT / "traces")  # the page's paths are relative to a checkout
    monkeypatch.chdir(tmp_path)  # what the session writes (./out) goes here, nothing into /tmp or the checkout
    namespace: dict = {}
    for cell in cells:
        exec(compile(cell, "docs/python-api.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "hier-central" in out and "sparcml" in out          # the same-program mark in the table
    assert "model: A=maxmin | B=fifo" in out
    assert (tmp_path / "out" / "scaling" / "scaling.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.json", "b.csv", "nic-sweep.png", "scaling",
                                                                     "scaling.yaml"]
