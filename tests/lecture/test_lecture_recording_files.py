"""`crawlscope lecture --record FILE --headless` in a real process, its recording played
back, and recordings that are not good ones: each is one line and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.geometry import Region
from tui_support import until

from crawlscope.engine.lecture.replay import MAX_LINE, load_lecture
from crawlscope.tui.lecture.stage_replay import LectureReplayApp
from helpers import run_cli


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lecture recorded by `crawlscope lecture --record F --headless` (no terminal)."""
    path = tmp_path_factory.mktemp("lecture") / "lecture.jsonl"
    result = run_cli("lecture", "--record", str(path), "--headless", "--max-tasks", "2")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"play it with `crawlscope replay {path}`" in result.stderr
    return path


def test_a_headless_lecture_records_both_stages_to_their_end(recorded: Path) -> None:
    recording = load_lecture(recorded)
    engines = [snap.engine.value for snap in recording.steps]
    first_of_2 = engines.index("generators")
    assert set(engines[:first_of_2]) == {"callbacks"} and set(engines[first_of_2:]) == {
        "generators"
    }
    for last in (recording.steps[first_of_2 - 1], recording.steps[-1]):
        assert last.over and last.error is None and last.phase.value == "finished"
        assert last.accounting.balanced and last.accounting.done > 20
        assert last.fetched and last.recent
    stage_2 = recording.steps[first_of_2 + 20]
    assert any(link.function == "Future.__iter__" for t in stage_2.tasks for link in t.links)
    assert [s.steps for s in recording.steps[:first_of_2]] == list(range(first_of_2))


def test_a_headless_recording_stops_at_steps(tmp_path: Path) -> None:
    path = tmp_path / "short.jsonl"
    result = run_cli("lecture", "--record", str(path), "--headless", "--steps", "7")
    assert result.returncode == 0, result.stderr
    recording = load_lecture(path)
    assert [s.steps for s in recording.steps] == [*range(8)] * 2


async def test_a_recording_made_by_another_process_replays(recorded: Path) -> None:
    recording = load_lecture(recorded)
    app = LectureReplayApp(recording, paused=True)
    async with app.run_test(size=(120, 41)) as pilot:
        screen = app.replay
        await pilot.press("end")
        await until(pilot, lambda: screen.index == len(recording.steps) - 1, "the end")

        def status() -> str:
            widget = app.screen.query_one("#stage-status")
            lines = widget.render_lines(Region(0, 0, widget.size.width, 1))
            return "\n".join(strip.text for strip in lines)

        last = recording.steps[-1]
        await until(pilot, lambda: f"step {last.steps} of {len(recording.steps)}" in status(),
                    "the last step in the status line")  # fmt: skip
        assert "FINISHED" in status() and "stage 2" in status()
        await pilot.press("pageup")
        back = len(recording.steps) - 1 - round(len(recording.steps) / 10)
        await until(pilot, lambda: screen.index == back, "10% back")


def test_replay_with_no_terminal_reads_the_lecture_first(recorded: Path) -> None:
    # The file is read and checked (a lecture's, not a crawl's) before the terminal is asked.
    result = run_cli("replay", str(recorded))
    assert result.returncode == 2
    assert result.stderr == "crawlscope: the replay needs a terminal\n"


def test_lecture_replay_says_where_to_go() -> None:
    result = run_cli("lecture", "--replay", "x.jsonl")
    assert result.returncode == 2
    assert (
        result.stderr == "crawlscope: a recorded lecture plays with `crawlscope replay x.jsonl`\n"
    )


def good_lines(recorded: Path) -> list[str]:
    return recorded.read_text().split("\n")[:6]


def bad_snapshot(recorded: Path, change: dict[str, object]) -> str:
    lines = good_lines(recorded)
    step = json.loads(lines[2])
    step["snapshot"].update(change)
    return "\n".join([*lines[:2], json.dumps(step), *lines[3:]])


BAD: dict[str, tuple[object, str]] = {
    "truncated": (lambda r: "\n".join(good_lines(r)[:3])[:-40], ":3: not a JSON line"),
    "wrong version": (
        lambda r: '{"kind": "start", "recording": "lecture", "version": 9, "wall": 1.0}\n',
        ":1: a lecture recording of version 9; this crawlscope reads version 1",
    ),
    "steps not a number": (
        lambda r: bad_snapshot(r, {"steps": "12"}),
        ":3: snapshot.steps is not a whole number",
    ),
    "unknown engine": (
        lambda r: bad_snapshot(r, {"engine": "threads"}),
        ":3: snapshot.engine is not a known Engine",
    ),
    "a count below 0": (
        lambda r: bad_snapshot(r, {"steps": -1}),
        ":3: snapshot has a count below 0",
    ),
    "nested tasks wrong": (
        lambda r: bad_snapshot(r, {"tasks": [{"name": 3}]}),
        ":3: snapshot.tasks[0].name is not a string",
    ),
    "NaN time": (
        lambda r: "\n".join(
            [good_lines(r)[0], good_lines(r)[1].replace('"t": ', '"t": NaN, "x": ', 1)]
        ),
        ":2: not a JSON line (NaN is not a JSON number",
    ),
    "time going back": (
        lambda r: "\n".join([*good_lines(r)[:3], good_lines(r)[1]]),
        ":4: 't' goes back in time",
    ),
    "huge line": (
        lambda r: "\n".join(
            [good_lines(r)[0], '{"kind": "x", "t": 1, "pad": "' + "a" * MAX_LINE + '"}']
        ),
        f":2: a line of {MAX_LINE + 32} characters (at most {MAX_LINE})",
    ),
    "deep nesting": (
        lambda r: "\n".join([good_lines(r)[0], "[" * 100_000 + "]" * 100_000]),
        ":2: JSON nested too deeply",
    ),
    "too many rows": (
        lambda r: bad_snapshot(
            r, {"fetched": [{"url": "/", "status": 200, "error": None}] * 10_001}
        ),
        ":3: snapshot.fetched has more than 10000 entries",
    ),
    "a traceback not a text": (
        lambda r: "\n".join(
            [
                *good_lines(r)[:2],
                '{"kind": "traceback", "t": 9e9, "engine": "generators", "text": 7}',
            ]
        ),
        ":3: a traceback that is not a text of at most 32000",
    ),
    "a traceback of no stage": (
        lambda r: "\n".join(
            [*good_lines(r)[:2], '{"kind": "traceback", "t": 9e9, "engine": "x", "text": ""}']
        ),
        ":3: a traceback of no stage 1 or 2",
    ),
    "sources not hashes": (
        lambda r: "\n".join(
            [
                good_lines(r)[0].replace('"sources": {', '"sources": {"a.py": 1, ', 1),
                *good_lines(r)[1:],
            ]
        ),
        ":1: 'sources' holds an entry that is not a name and a sha256",
    ),
    "no steps": (lambda r: good_lines(r)[0] + "\n", ": a lecture recording with no step in it"),
    "not UTF-8": (
        lambda r: good_lines(r)[0] + "\n\xff",
        " is not a lecture recording (not UTF-8 text)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_recording_is_one_line_and_status_2(
    recorded: Path, tmp_path: Path, case: str
) -> None:
    make, expected = BAD[case]
    path = tmp_path / "bad.jsonl"
    text = make(recorded)  # type: ignore[operator]
    path.write_bytes(text.encode("latin-1") if case == "not UTF-8" else text.encode())
    result = run_cli("replay", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"crawlscope: {path}{expected}"), result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_recording_that_cannot_be_written_is_said_at_once() -> None:
    result = run_cli("lecture", "--record", "/dev/full", "--headless")
    assert result.returncode == 2
    assert result.stderr == (
        "crawlscope: cannot write the recording /dev/full: No space left on device\n"
    )
