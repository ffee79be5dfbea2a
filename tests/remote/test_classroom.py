"""`crawlscope serve` for a class, over real sockets: one screen process whatever the
number of viewers, the lecturer's keys (only theirs) reach it, a late joiner gets the
screen as it stands, and the limits hold (a slow viewer dropped, a foreign page refused,
one viewer past the cap told why)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest
from classroom_support import (
    TIMEOUT,
    Watcher,
    client_session,
    cmdline,
    descendants,
    never_reading,
    origin,
    serving,
    watching,
)

from crawlscope.engine.lecture.replay import load_lecture
from crawlscope.engine.remote.client import RemoteCrawl
from crawlscope.tui.waiting import wait_until
from helpers import run_cli


async def test_a_late_joiner_sees_step_ten_of_the_lecture_at_once() -> None:
    with serving("--lecture") as served:
        async with (
            client_session() as client,
            watching(client, served.lecturer_page) as lecturer,
        ):
            await wait_until(lambda: lecturer.shows("step 0 "), "the lecture", timeout=TIMEOUT)
            for step in range(1, 11):
                await lecturer.keys("n")
                await wait_until(
                    lambda s=step: lecturer.shows(f"step {s} "), f"step {step}", timeout=TIMEOUT
                )
            # Stepping is frozen between keys: nothing on the screen changes any more, so
            # only the screen as it stands can show step 10 to one who comes now.
            async with watching(client, served.class_page) as late:
                await wait_until(lambda: late.shows("step 10 "), "step 10", timeout=TIMEOUT)
                assert late.text() == lecturer.text()
                assert late.cells() == lecturer.cells()  # the colours too


async def test_serve_plays_a_lecture_recording_as_replay_does(tmp_path: Path) -> None:
    recording = tmp_path / "lecture.jsonl"
    made = run_cli("lecture", "--record", str(recording), "--headless", "--steps", "5")
    assert made.returncode == 0, made.stderr
    steps = len(load_lecture(str(recording)).steps)
    with serving("--replay", str(recording)) as served:
        async with client_session() as client, watching(client, served.class_page) as student:
            await wait_until(
                lambda: f"of {steps}" in student.text(), "the lecture's replay", timeout=TIMEOUT,
                describe=student.text,
            )  # fmt: skip


@pytest.mark.parametrize(
    "flood", ["\x1b" * 33_999, "\x1b[" * 17_000, "\x1b[A" * 11_000], ids=["esc", "csi", "up"]
)
async def test_after_34_kb_of_escape_sequences_the_lecturers_next_key_acts(flood: str) -> None:
    # Written as JSON, the ESC of each is 6 bytes: 200 KB on the lecturer's socket.
    with serving("--lecture") as served:
        async with client_session() as client, watching(client, served.lecturer_page) as lecturer:
            await wait_until(lambda: lecturer.shows("step 0 "), "the lecture", timeout=TIMEOUT)
            await lecturer.keys(flood)
            await lecturer.keys("n")
            await wait_until(lambda: lecturer.shows("step 1 "), "the n after it", timeout=30)


async def test_the_screen_and_the_page_count_the_same_browsers() -> None:
    # The screen (attach, a viewer of the crawl's monitor) is not counted as a viewer:
    # the browsers it is shown in are, as on the class's page.
    with serving("--max-tasks", "1") as served:
        async with (
            client_session() as client,
            watching(client, served.lecturer_page) as lecturer,
            watching(client, served.class_page) as student,
        ):
            await wait_until(
                lambda: student.count == 2 and student.shows("2 viewers: 127.0.0.1 x2"),
                "both bars at 2", timeout=TIMEOUT, describe=lambda: f"page: {student.count}, "
                f"screen: {[row for row in student.screen.display if 'viewer' in row]}",
            )  # fmt: skip
            assert lecturer.count == 2


async def test_the_lecture_served_has_the_workers_asked_for() -> None:
    # Five: every stage's slots, where the lecture's own default is three.
    with serving("--lecture", "--max-tasks", "5") as served:
        async with client_session() as client, watching(client, served.class_page) as student:
            # A screen reaches a browser in pieces (what was drawn in 20 ms, each a frame):
            # wait for its rows down to the footer, which Textual writes last.
            await wait_until(
                lambda: all(student.shows(s) for s in ("step 0 ", "slot 4 ", "Quit")),
                "the lecture's first screen, whole", timeout=TIMEOUT,
                describe=lambda: "\n".join(student.screen.display),
            )  # fmt: skip
            assert not student.shows("slot 5 ")


async def test_the_class_sees_the_crawl_start_when_the_lecturer_presses_p() -> None:
    # A crawl served to a class starts paused (--running starts it at once); only the
    # lecturer's keys act on it.
    with serving("--max-tasks", "2", wanted=("serving", "lecturer", "monitor")) as served:
        monitor = RemoteCrawl(served.lines["monitor"].split("?")[0])
        eye = asyncio.create_task(monitor.run())
        try:
            async with (
                client_session() as client,
                watching(client, served.lecturer_page) as lecturer,
                watching(client, served.class_page) as student,
            ):
                await wait_until(monitor.ready.is_set, "the monitor's first frame", timeout=TIMEOUT)
                await wait_until(
                    lambda: student.shows("PAUSED") or student.shows("RUNNING"), "the crawl",
                    timeout=TIMEOUT,
                )  # fmt: skip
                assert student.shows("PAUSED"), "the crawl started before the class watched"
                assert monitor.snapshot().paused_all and monitor.snapshot().accounting.done == 0
                # The student's p (resume) and its round trip: the server has read it,
                # and written it to the screen if it were going to.
                await student.keys("p")
                await student.ws.ping()
                await wait_until(lambda: student.count == 2, "both counted", timeout=TIMEOUT)
                await lecturer.keys("a")  # one more worker: after the p, in the app's order
                await wait_until(
                    lambda: len(monitor.snapshot().workers) == 3, "the lecturer's a",
                    timeout=TIMEOUT,
                )  # fmt: skip
                assert monitor.snapshot().paused_all, "a student resumed the crawl"
                await lecturer.keys("p")
                await wait_until(lambda: not monitor.snapshot().paused_all, "p", timeout=TIMEOUT)
                for each in (lecturer, student):
                    await wait_until(lambda w=each: w.shows("RUNNING"), "RUNNING", timeout=TIMEOUT)
        finally:
            eye.cancel()


async def test_two_hundred_viewers_start_no_process_and_one_that_never_reads_is_dropped() -> None:
    with serving("--max-tasks", "3", "--latency", "0.05", "--running") as served:
        async with client_session() as client, watching(client, served.class_page) as first:
            await wait_until(lambda: first.shows("RUNNING"), "the crawl", timeout=TIMEOUT)
            before = sorted(descendants(served.process.pid))
            async with contextlib.AsyncExitStack() as stack:
                viewers: list[Watcher] = [first]
                for _ in range(199):
                    page = served.class_page
                    crowd = watching(client, page, keeps_screen=False)
                    viewers.append(await stack.enter_async_context(crowd))
                stuck = await never_reading(served.class_page)
                try:
                    await wait_until(
                        lambda: all(v.count == 201 for v in viewers), "201 counted",
                        timeout=TIMEOUT,
                    )  # fmt: skip
                    assert sorted(descendants(served.process.pid)) == before
                    # The one that never reads is dropped; the others are still told.
                    await wait_until(
                        lambda: all(v.count == 200 for v in viewers), "the drop",
                        timeout=TIMEOUT,
                    )  # fmt: skip
                    got = [v.received for v in viewers]
                    await wait_until(
                        lambda: all(v.received > g for v, g in zip(viewers, got, strict=True)),
                        "the others go on", timeout=TIMEOUT,
                    )  # fmt: skip
                finally:
                    stuck.close()
            # Every tab closed: nothing is left behind but the first viewer.
            await wait_until(lambda: first.count == 1, "199 gone", timeout=TIMEOUT)
            assert sorted(descendants(served.process.pid)) == before


async def test_a_foreign_origin_and_null_are_refused_and_the_501st_viewer_is_told_why() -> None:
    with serving("--lecture") as served:
        page = served.class_page
        async with client_session() as client:
            for foreign in ("http://evil.example", "null", "http://127.0.0.1:1"):
                async with client.get(
                    f"{page}ws", headers=upgrade(foreign)
                ) as refused:  # fmt: skip
                    assert refused.status == 403, foreign
                    assert "may not watch this class" in await refused.text()
            async with contextlib.AsyncExitStack() as stack:
                viewers = [
                    await stack.enter_async_context(watching(client, page, keeps_screen=False))
                    for _ in range(500)
                ]
                await wait_until(lambda: viewers[0].count == 500, "500", timeout=TIMEOUT)
                async with client.get(f"{page}ws", headers=upgrade(origin(page))) as full:
                    assert full.status == 503
                    line = await full.text()
                assert line == "this class is full (500 viewers, --max-viewers); try again later\n"
            # One left: there is room again.
            async with watching(client, page) as again:
                await wait_until(lambda: again.shows("STEP MODE"), "the lecture", timeout=TIMEOUT)


def upgrade(page_origin: str) -> dict[str, str]:
    key = base64.b64encode(os.urandom(16)).decode()
    return {
        "Origin": page_origin, "Upgrade": "websocket", "Connection": "Upgrade",
        "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13",
    }  # fmt: skip


async def test_the_lecturers_path_is_on_no_class_page_nor_command_line() -> None:
    with serving("--size", "100x30", "--running") as served:
        key = urlsplit(served.lecturer_page).path.split("/")[2]
        async with client_session() as client:
            async with client.get(served.class_page) as page:
                assert key not in await page.text()
            wrong = served.lecturer_page.replace(key, key[:-1] + ("A" if key[-1] != "A" else "B"))
            async with client.get(wrong) as refused:
                assert refused.status == 404
            async with watching(client, served.lecturer_page, size=(100, 30)) as lecturer:
                await wait_until(lambda: lecturer.shows("RUNNING"), "the crawl", timeout=TIMEOUT)
                # The screen is the size the lecturer chose: its boxes end at column 100.
                rows = lecturer.screen.display
                assert any(row.endswith("╮") and len(row) == 100 for row in rows), rows
        pids = [*descendants(served.process.pid), served.process.pid]
        assert all(key.encode() not in cmdline(pid) for pid in pids)
        assert not any(key in line for line in served.err)


async def test_the_class_gets_one_uncompressed_frame_for_all_and_the_screen_its_fps() -> None:
    with serving("--fps", "7") as served:
        async with client_session() as client:
            # A browser offers permessage-deflate; taking it would mean a compressor for
            # each viewer and a frame built for each, where one serves the whole class.
            offered = await client.ws_connect(
                f"{served.class_page}ws", headers={"Origin": origin(served.class_page)},
                compress=15,
            )  # fmt: skip
            try:
                assert offered.compress == 0
                message = await offered.receive(timeout=TIMEOUT)
                assert message.type is aiohttp.WSMsgType.BINARY and message.data
            finally:
                await offered.close()
        screens = [cmdline(pid) for pid in descendants(served.process.pid)]
        assert any(b" attach " in line and b" --fps 7" in line for line in screens), screens
