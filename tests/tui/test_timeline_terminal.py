"""The timeline in a real terminal (issue 40): `crawlscope replay` of a recorded crawl and
the live TUI, each in a pseudo-terminal read back with its colours. A lane's cells change
colour exactly where its worker's state changed in the recording; zoom and scroll move the
axis; "now" is followed until the view is scrolled back."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from terminal_support import Terminal

from crawlscope.tui.widgets.timeline_screen import HEAD, LABEL
from helpers import CLI

pytestmark = pytest.mark.slow

DEMO_SITE = ("--pages", "300", "--latency", "0.02")
COLUMNS, ROWS = 160, 45
PAGE_DOWN = b"\x1b[6~"


def title_figures(line: str) -> tuple[float, float]:
    """(span, cursor time) from the timeline's title line."""
    match = re.search(r"([\d.]+) s across\s+cursor (-?[\d.]+) s", line)
    assert match, line
    return float(match.group(1)), float(match.group(2))


def axis_labels(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"\|(-?[\d.]+)s", line)]


def test_a_lane_changes_colour_where_its_worker_changed_state(site: str, tmp_path: Path) -> None:
    record = tmp_path / "crawl.jsonl"
    subprocess.run(
        [*CLI, "crawl", site, "--max-tasks", "4", "-q", "--record", str(record)],
        check=True, timeout=120,
    )  # fmt: skip
    events = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    changes: dict[int, list[tuple[float, str]]] = {}
    for e in events:
        if e["kind"] == "state":
            changes.setdefault(e["worker"], []).append((e["t"], e["state"]))
    with Terminal([*CLI, "replay", str(record), "--paused"], COLUMNS, ROWS) as term:
        term.wait_for(lambda: "PAUSE" in term.text(), "the replay")
        term.send(PAGE_DOWN * 5)  # half way through the crawl
        term.wait_for(lambda: "RUNNING" in term.text(), "the middle of the recording")
        term.pump(0.5)
        term.send(b"t")
        term.wait_for(lambda: "following now" in term.text(), "the timeline")
        term.wait_for(lambda: term.line(HEAD).startswith("w0"), "the first lane")
        # 1 s across: a state lasts some 20 ms here.
        term.send(b"+++")
        term.wait_for(lambda: " 1 s across" in term.line(0), "1 s across")
        n = COLUMNS - LABEL

        def whole_frame() -> bool:
            # The replay is paused: once whole, the frame stays; its axis begins where
            # its title says the view does.
            term.settle()
            span, cursor = title_figures(term.line(0))
            start = cursor + span / n / 2 - span
            return abs(axis_labels(term.line(1))[0] - start) <= 0.05 + span / n

        colours: dict[str, set[str]] = {}
        checked = 0
        # Which states a second shows depends on the crawl (a loaded machine makes it one
        # long wait for headers): earlier seconds are looked at until two states are seen.
        for _ in range(12):
            term.wait_for(whole_frame, "a whole frame")
            span, cursor = title_figures(term.line(0))
            step = span / n
            end = cursor + step / 2  # the cursor sits in the middle of the last column
            start = end - span
            for worker in range(4):
                y = HEAD + worker
                assert term.line(y).startswith(f"w{worker}")
                times = changes[worker]
                for c in range(n):
                    a, b = start + c * step, start + (c + 1) * step
                    # A column a state change falls in (or within the title's rounding of
                    # its edges) holds two states; only whole columns are compared.
                    if any(a - 0.001 <= t <= b + 0.001 for t, _ in times):
                        continue
                    before = [s for t, s in times if t < a]
                    if not before:
                        continue
                    colours.setdefault(before[-1], set()).add(term.colour(LABEL + c, y))
                    checked += 1
            if len(colours) >= 2 and checked >= 200:
                break
            term.send(b"[")  # a quarter of a second earlier
            term.wait_for(lambda s=start: axis_labels(term.line(1))[0] < s - 0.1, "the scroll")
        term.send(b"f")  # back to the replay's moment
        term.wait_for(lambda: "following now" in term.line(0), "following again")
        term.wait_for(whole_frame, "a whole frame")
        span, cursor = title_figures(term.line(0))
        end = cursor + span / n / 2
        assert checked >= 200, checked
        # Each state is drawn in one colour, and no two states in the same one (which
        # states the moment shows depends on the crawl: at least two of them).
        assert len(colours) >= 2, colours
        assert all(len(seen) == 1 for seen in colours.values()), (colours, term.text())
        drawn = [next(iter(seen)) for seen in colours.values()]
        assert len(set(drawn)) == len(drawn), colours
        # Zoom out: twice the span, the same right end ("now": the replay's moment).
        before_axis = axis_labels(term.line(1))
        term.send(b"-")
        term.wait_for(lambda: " 2 s across" in term.line(0), "the zoom")
        after_axis = axis_labels(term.line(1))
        assert after_axis[0] < before_axis[0], (before_axis, after_axis)
        # The same right end, give or take the wider grid's column and a half.
        assert title_figures(term.line(0))[1] == pytest.approx(end, abs=3 / n + 0.001)
        # Scroll back a quarter: no longer following, the axis half a second earlier.
        term.send(b"[")
        term.wait_for(lambda: "f: follow now" in term.line(0), "the scroll")
        moved = axis_labels(term.line(1))
        # A quarter of 2 s, give or take a column (the view ends on a column's edge) and
        # the labels' rounding to 0.1 s.
        assert moved[0] == pytest.approx(after_axis[0] - 0.5, abs=0.1 + 2 / n), (after_axis, moved)


def test_the_live_timeline_follows_now_until_scrolled_back(site: str) -> None:
    argv = [*CLI, "tui", site, "--max-tasks", "3"]
    with Terminal(argv, COLUMNS, ROWS) as term:
        term.wait_for(lambda: "RUNNING" in term.text(), "the running crawl")
        term.send(b"t")
        term.wait_for(lambda: "following now" in term.text(), "the timeline")
        # The phase leads the title, as on every screen of a crawl.
        assert term.line(0).split()[0] in ("RUNNING", "FINISHED"), term.line(0)
        _, first = title_figures(term.line(0))
        term.wait_for(lambda: title_figures(term.line(0))[1] >= first + 1.0, "now moving on")
        term.send(b"[")
        term.wait_for(lambda: "f: follow now" in term.line(0), "the scroll")
        _, held = title_figures(term.line(0))
        term.pump(1.0)
        assert title_figures(term.line(0))[1] == held
        term.send(b"f")
        term.wait_for(lambda: title_figures(term.line(0))[1] > held + 0.5, "following again")
