"""bench.table_pace --terminal: the TUI in a pty, its screen read by a terminal emulator,
and the changes of the workers table's rows and of the status line counted as they show.
No timing is asserted: only that what a user would see moving is seen moving."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.table_pace import table_rows

REPO = Path(__file__).resolve().parents[2]


def test_the_terminal_way_sees_the_table_and_the_status_line_change(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "bench.table_pace", "--quick", "--terminal"]
    cmd += ["--results-dir", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    figures = json.loads((tmp_path / "table_pace.json").read_text())["figures"]
    [run] = figures["runs"]
    assert not run["over"], "the crawl ended in the window: its last frames are not counted"
    # Seen moving at all: how often it moves in the measured window depends on how much
    # of the machine the test gets (a loaded one saw none in the quick mode's 2 s).
    assert run["seen_status"] > 0
    assert run["seen_tables"] > 0
    # Never more changes seen than the app drew frames that could make them.
    kinds = run["kinds_per_s"]
    drawn = kinds.get("table", 0) + kinds.get("rows", 0)
    assert run["seen_tables_per_s"] <= drawn + 1.0  # a change in flight at either end


def test_the_tables_rows_are_read_between_its_header_and_its_border() -> None:
    screen = [
        " running  500 workers",
        "╭─ workers ─────────╮",
        "│  #  state   for   suspended at  url │",
        "│  1  fetch   0.1s  get      /a │",
        "│  2  parse   0.2s  feed     /b │",
        "╰───────────────────╯",
        "╭─ queue ─╮",
    ]
    assert table_rows(screen) == tuple(screen[3:5])
    assert table_rows(screen[:2]) == ()
