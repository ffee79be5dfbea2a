"""The code beside the state (issue 41): which source a lecture shows, read only from the
modules it ships, and which lines of it the pane draws."""

from __future__ import annotations

from pathlib import Path

from crawlscope.engine.lecture.snapshot import ChainLink, TaskInsides
from crawlscope.engine.lecture.source import FUTURE_ITER, digests, shipped, task_cursors
from crawlscope.tui.widgets.source_pane import shown_lines

LECTURE = Path(__file__).parents[2] / "engine" / "lecture"


def test_the_shipped_module_is_read_by_its_name_and_nothing_else_is() -> None:
    source = shipped("stage_generators.py")
    assert source is not None
    assert source.lines == tuple((LECTURE / "stage_generators.py").read_text().splitlines())
    assert source.line(0) is None and source.line(len(source.lines) + 1) is None
    assert digests()["stage_generators.py"] == source.digest
    for name in ("../../README.md", "/etc/passwd", "stage_generators", "..", "",
                 "lecture/stage_generators.py", "stage_generators.py\x00"):  # fmt: skip
        assert shipped(name) is None, name


def test_a_tasks_cursor_is_where_its_own_code_waits() -> None:
    links = (
        ChainLink("GeneratorCrawler.work", "stage_generators.py", 600, 10),
        ChainLink("GeneratorCrawler.fetch", "stage_generators.py", 629, 20),
        ChainLink(FUTURE_ITER, "stage_generators.py", 100, 4),
    )
    task = TaskInsides("worker 0", "headers", None, 3, links, "Future", False)
    (own,) = task_cursors((task,))
    assert (own.task, own.line, own.function, own.depth) == ("worker 0", 629, links[1].function, 0)
    chain = task_cursors((task,), chain=True)
    assert [(c.line, c.depth) for c in chain] == [(629, 0), (600, 1)]


def test_the_pane_draws_every_marked_line_with_what_context_fits() -> None:
    assert shown_lines([10, 30], focus=10, last=100, height=20) == [
        7, 8, 9, 10, 11, 12, 13, None, 27, 28, 29, 30, 31, 32, 33
    ]  # fmt: skip
    # Less room: less context, never a marked line left out while any fits.
    assert shown_lines([10, 30], focus=10, last=100, height=7) == [
        9, 10, 11, None, 29, 30, 31
    ]  # fmt: skip
    assert shown_lines([10, 30], focus=10, last=100, height=3) == [10, None, 30]
    # No room for all: those nearest the selected task's.
    assert shown_lines([10, 30, 50, 70], focus=70, last=100, height=3) == [50, None, 70]
    assert shown_lines([], focus=50, last=100, height=4) == [48, 49, 50, 51]
    assert shown_lines([1, 2], focus=1, last=2, height=10) == [1, 2]
