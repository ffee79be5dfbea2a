"""Smoke test of bench/linkdense.py: its quick mode runs, prints its tables and writes its
JSON. No figure is asserted but that the new code found the page's one link and took the
same links as the old one from normal pages: the machine running the tests is shared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_link_dense_bench_runs_in_quick_mode(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "bench.linkdense", "--quick", "--results-dir", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "peak RSS MB" in proc.stdout
    document = json.loads((tmp_path / "linkdense.json").read_text())
    assert document["benchmark"] == "linkdense" and document["settings"]["quick"] is True
    figures = document["figures"]
    after = [row for row in figures["dense"] if row["impl"] == "after"]
    assert {row["case"] for row in after} == {
        "parse one page",
        "crawl 1 at once",
        "crawl 2 at once",
    }
    assert all(row["error"] is None and row["peak_mb"] > 0 for row in after)
    assert all(row["same_links"] for row in figures["normal_pages"])
    assert figures["demo_crawl_pages_per_s"]["after"][0] > 0
