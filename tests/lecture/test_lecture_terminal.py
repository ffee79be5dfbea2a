"""`crawlscope lecture --record FILE` in a real terminal (a pty, read as a screen): stage 2
shows its code beside its tasks with a cursor on each task's line, and when the lecture
ends the command says where the recording went and how to play it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from terminal_support import Terminal

from crawlscope.engine.lecture.replay import load_lecture
from crawlscope.engine.lecture.source import shipped, task_cursors
from helpers import CLI

pytestmark = pytest.mark.slow


def test_the_code_beside_stage_2_and_where_the_recording_went(tmp_path: Path) -> None:
    record = tmp_path / "class.jsonl"
    with Terminal([*CLI, "lecture", "--record", str(record)], 160, 45) as term:
        term.wait_for(lambda: "stage_callbacks.py" in term.text(), "stage 1's code pane")
        term.send(b"\x1b[C")  # →: stage 2
        term.wait_for(lambda: "stage_generators.py" in term.text(), "stage 2's code pane")
        for _ in range(12):
            term.send(b"n")
            term.pump(0.2)
        term.wait_for(lambda: "step 12 " in term.text(), "step 12")
        term.settle()
        screen = term.text()
        term.send(b"q")
        deadline = time.monotonic() + 30
        while term.proc.poll() is None and time.monotonic() < deadline:
            term.pump(0.1)
        term.pump(0.2)
        after = term.text()
    # The screen at step 12: each task's line of the module, a marker beside it.
    recording = load_lecture(record)
    snap = next(s for s in recording.steps if s.engine.value == "generators" and s.steps == 12)
    source = shipped("stage_generators.py")
    assert source is not None
    cursors = task_cursors(snap.tasks)
    assert cursors
    # The pane's columns, from its border: the panel beside it marks tasks with ▶ too.
    top = next(row for row in screen.splitlines() if "─ stage_generators.py" in row)
    left = top.index("─ stage_generators.py") - 1
    pane = [row[left : top.index("╮", left)] for row in screen.splitlines()]
    for cursor in cursors:
        text = (source.line(cursor.line) or "").strip()[:30]
        rows = [row for row in pane if f"{cursor.line:>4} " in row]
        assert any(text in row and "▶" in row for row in rows), (cursor, text, rows)
    flat = after.replace("\n", "")  # the message wraps at 160 columns
    assert f"the lecture is recorded in {record}" in flat
    assert f"play it with `crawlscope replay {record}`" in flat
