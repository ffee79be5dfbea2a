"""The code pane (issue 41): the stage's module beside its state, a cursor on the line where
each task or callback stands, under the pilot with a real demo site. What each cursor
should stand on is read from the module and the stage's own snapshot, not written here."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from test_lecture_record import record_steps, two_workers
from test_tui_lecture import DEMO, mounted, step
from textual.geometry import Region
from tui_support import until

from crawlscope.engine.lecture.recording import LectureRecorder
from crawlscope.engine.lecture.replay import load_lecture
from crawlscope.engine.lecture.snapshot import StageSnapshot, task_shown
from crawlscope.engine.lecture.source import callback_cursors, shipped, task_cursors
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.lecture.stage_panels import StagePanels
from crawlscope.tui.lecture.stage_replay import LectureReplayApp
from crawlscope.tui.lecture.widgets.step_narration import StepNarration
from crawlscope.tui.widgets.help_screen import HelpScreen
from crawlscope.tui.widgets.source_pane import GUTTER, NUMBER, SourcePane

WIDE = (160, 48)


def pane_rows(screen: StagePanels) -> list[str]:
    pane = screen.query_one(SourcePane)
    strips = pane.render_lines(Region(0, 0, pane.region.width, pane.region.height))
    # Inside the border: the rows as the pane writes them.
    return [strip.text[1:-1] for strip in strips[1:-1]]


def marked(rows: list[str]) -> dict[int, str]:
    """Each line number drawn with a marker, and the gutter's text on it."""
    out = {}
    for row in rows:
        number = row[GUTTER : GUTTER + NUMBER].strip()
        if row.startswith("▶") and number.isdigit():
            out[int(number)] = row[:GUTTER]
    return out


def names_in(gutter: str) -> int:
    """How many tasks a gutter stands for: its names, and the count after a +."""
    words = gutter.replace("▶", "").split()
    more = sum(int(w[1:]) for w in words if re.fullmatch(r"\+\d+", w))
    return more + sum(1 for w in words if not re.fullmatch(r"\+\d+", w))


def check_stage_2(screen: StagePanels, snap: StageSnapshot) -> dict[int, str]:
    source = shipped("stage_generators.py")
    assert source is not None
    rows = pane_rows(screen)
    cursors = task_cursors(snap.tasks)
    assert cursors
    # Where each task's own code waits: its innermost generator but the Future's.
    own = {}
    for task in snap.tasks:
        mine = [k for k in task.links if k.function != "Future.__iter__"]
        if mine:
            own[task.name] = mine[-1].line
    assert {c.task: c.line for c in cursors} == own
    drawn = marked(rows)
    # A marker on each task's line, and only there; the line's text is the module's.
    assert set(drawn) == {c.line for c in cursors}
    for row in rows:
        number = row[GUTTER : GUTTER + NUMBER].strip()
        if number.isdigit():
            code = row[GUTTER + NUMBER :].rstrip().rstrip("…")
            assert (source.line(int(number)) or "").startswith(code), row
    # One marker per task: every task is named (or counted) once, on its own line.
    assert sum(names_in(g) for g in drawn.values()) == len({c.task for c in cursors})
    for cursor in cursors:
        first = drawn[cursor.line].split()[1]
        assert first in {c.task for c in cursors if c.line == cursor.line}
    return drawn


async def test_stage_2_puts_a_cursor_on_each_tasks_line_and_n_and_back_move_them() -> None:
    app = LectureApp(["generators"], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=WIDE) as pilot:
        stage = await mounted(pilot)
        await step(pilot, 20)
        assert stage.shown is not None
        before = check_stage_2(stage, stage.shown)
        rows_last = pane_rows(stage)
        moved = False
        for _ in range(6):  # on until a step moves a cursor
            rows_last = pane_rows(stage)
            await step(pilot)
            assert stage.shown is not None
            after = check_stage_2(stage, stage.shown)
            if after != before:
                moved = True
                break
        assert moved
        await pilot.press("left")
        await until(pilot, lambda: stage.looking is not None, "a step back")
        await pilot.pause()
        # Back by one step: the cursors where that step left them, drawn as they were.
        assert stage.shown is not None
        assert check_stage_2(stage, stage.shown) == marked(rows_last)
        # The chain: a cursor on every frame of each task's yield-from chain.
        await pilot.press("y")
        chain = task_cursors(stage.shown.tasks, chain=True)
        assert set(marked(pane_rows(stage))) == {c.line for c in chain}
        assert len(chain) > len(task_cursors(stage.shown.tasks))


async def test_stage_1_marks_the_callback_about_to_run_and_where_each_was_handed_over() -> None:
    app = LectureApp(["callbacks"], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=WIDE) as pilot:
        stage = await mounted(pilot)
        source = shipped("stage_callbacks.py")
        assert source is not None

        def a_socket_registered() -> bool:
            snap = stage.shown
            return snap is not None and bool(snap.loop.registered) and bool(snap.loop.ready)

        for _ in range(30):
            if a_socket_registered():
                break
            await step(pilot)
        snap = stage.shown
        assert snap is not None and a_socket_registered()
        registered = [(w.fd, w.callback) for w in snap.loop.registered]
        cursors = callback_cursors(source, registered, snap.loop.ready)
        # The one about to run, on its def; each registered callback on its def and on
        # the line that handed it to the loop (`watch(sock, ..., self.connected)`).
        assert any(c.task == "next" for c in cursors)
        handed = [c for c in cursors if c.depth == 1]
        assert handed and all(".watch(" in (source.line(c.line) or "") for c in handed)
        for c in cursors:
            line = source.line(c.line) or ""
            if c.depth == 0:
                assert line.strip().startswith("def " + c.function.rsplit(".", 1)[-1] + "(")
        assert set(marked(pane_rows(stage))) == {c.line for c in cursors}
        # A fetch's Fetcher holds what a coroutine would keep in its frame: its fields,
        # under the code, for the fetch selected.
        fetch = next(c.task for c in cursors if c.task.startswith("fd "))
        for _ in range(10):
            if stage.selected == fetch:
                break
            await pilot.press("down")
        await pilot.pause()
        watched = next(w for w in snap.loop.registered if f"fd {w.fd}" == fetch)
        rows = [row.strip() for row in pane_rows(stage)]
        assert f"fields of {fetch}'s Fetcher, which hold its state" in rows
        assert watched.fields and dict(watched.fields).get("url")
        for name, value in watched.fields:
            assert any(row.startswith(f"{name} = {value}"[:40]) for row in rows), name


async def test_at_80_columns_the_pane_folds_away_and_c_shows_it() -> None:
    app = LectureApp(["generators"], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=(80, 24)) as pilot:
        stage = await mounted(pilot)
        await step(pilot, 3)
        pane = stage.query_one(SourcePane)
        assert not pane.display
        status = stage.query_one("#stage-status")
        assert "c: code" in str(status.render())
        await pilot.press("c")
        await until(pilot, lambda: pane.display and pane.size.width > 0, "the pane shown")
        assert "c: code" not in str(status.render())


async def test_a_replay_of_other_or_hostile_code_says_so_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "lecture.jsonl"
    recorder = LectureRecorder(path)
    app = LectureApp(["generators"], make_config=two_workers, demo=DEMO, walk=True,
                     reproducible=True, opened=[recorder.follow])  # fmt: skip
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: app.stage is not None, "stage 2")
        await record_steps(pilot, app, [])
        await pilot.press("q")
    recorder.close()
    lines = path.read_text().splitlines()
    start = json.loads(lines[0])
    assert set(start["sources"]) == {"stage_callbacks.py", "stage_generators.py"}
    start["sources"]["stage_generators.py"] = "0" * 64  # recorded with other code
    steps = [json.loads(line) for line in lines[1:]]
    for event in steps:  # and positions that name code not shipped, or past its end
        for task in event.get("snapshot", {}).get("tasks", []):
            for link in task["links"]:
                link["file"], link["line"] = "../../../etc/passwd", 999_999
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("\n".join(json.dumps(e) for e in [start, *steps]) + "\n")
    recording = load_lecture(hostile)
    replay = LectureReplayApp(recording, paused=True, reproducible=True)
    async with replay.run_test(size=(160, 41)) as pilot:
        screen = replay.replay
        await pilot.press("end")
        await until(pilot, lambda: screen.index == len(recording.steps) - 1, "the last step")
        await pilot.pause()
        rows = " ".join(row.strip() for row in pane_rows(screen))
        assert "recorded with another stage_generators.py than this version ships" in rows
        assert "not in the code this version ships" in rows
        assert "../../../etc/passwd:999999" in rows and "root:" not in rows
        assert not marked(pane_rows(screen))  # no cursor drawn on a line it does not name


async def test_question_mark_shows_the_stage_keys() -> None:
    app = LectureApp(["generators"], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=WIDE) as pilot:
        stage = await mounted(pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        text = app.screen.text
        for key in ("`n`", "`c`", "`y`", "`o`", "`l`", "`t`"):
            assert key in text, key
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is stage, "back to the stage")


async def test_the_selected_tasks_locals_are_under_the_code_as_the_snapshot_holds_them() -> None:
    app = LectureApp(["generators"], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=WIDE) as pilot:
        stage = await mounted(pilot)

        def with_url() -> str | None:
            snap = stage.shown
            for task in snap.tasks if snap else ():
                if task.frame.startswith("GeneratorCrawler.") and dict(task.locals).get("url"):
                    return task.name
            return None

        for _ in range(40):
            if with_url():
                break
            await step(pilot)
        name = with_url()
        assert name is not None
        for _ in range(10):  # ↓ until that task is the one selected
            if stage.selected == name:
                break
            await pilot.press("down")
        assert stage.selected == name and stage.shown is not None
        await pilot.pause()
        task = next(t for t in stage.shown.tasks if t.name == name)
        rows = [row.strip() for row in pane_rows(stage)]
        assert f"locals of {name} in {task.frame}()" in rows
        for local, value in task.locals:
            assert any(row.startswith(f"{local} = {value}"[:40]) for row in rows), local
        assert "self =" not in " ".join(rows)


def test_a_hostile_local_is_shown_escaped() -> None:
    hostile = (("url", "'\x1b[2J\x07/evil'"),)
    text = SourcePane._locals("locals of worker-0 in fetch()", hostile).plain
    assert "\x1b" not in text and "\x07" not in text and "\\x1b[2J" in text


def narration_line(screen: StagePanels) -> tuple[int, str, str] | None:
    """The narration's "→ line N of MODULE (FUNCTION): CODE": (N, FUNCTION, CODE)."""
    text = str(screen.query_one(StepNarration).render())
    found = re.search(r"^→ line (\d+) of \S+ \((\S+)\): (.*)$", text, re.MULTILINE)
    return (int(found.group(1)), found.group(2), found.group(3)) if found else None


@pytest.mark.parametrize("kind", ["generators", "callbacks"])
async def test_the_story_of_a_step_names_the_line_it_is_about(kind: str) -> None:
    # Stage 2: the line the task the step ran stopped at (its cursor); stage 1: the def
    # of the callback the step ran. The line's text is the module's own.
    app = LectureApp([kind], make_config=two_workers, demo=DEMO)
    source = shipped("stage_generators.py" if kind == "generators" else "stage_callbacks.py")
    assert source is not None
    named = 0
    async with app.run_test(size=WIDE) as pilot:
        stage = await mounted(pilot)
        for _ in range(16):
            await step(pilot)
            snap = stage.shown
            assert snap is not None and snap.recent
            told = replace(snap.recent[-1], task=task_shown(snap.recent[-1].task or ""))
            said = narration_line(stage)
            own = {c.task: c for c in task_cursors(snap.tasks)}
            if told.task in own:
                assert said is not None and said[0] == own[told.task].line, (told, said)
            if said is None:
                continue
            named += 1
            number, function, code = said
            assert code == (source.line(number) or "").strip()
            if told.task not in own:  # the callback's own def
                assert function in told.raw and code.startswith("def ")
    assert named >= 8
