"""A lecture's monitor that is hostile (a real WebSocket server on 127.0.0.1): its text is
shown escaped, its bad frames are dropped and said, and the attach screen keeps the last
good stage; one that is a crawl's, or of another version, is told apart in words."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web
from hostile_peers import escaped, hostile
from textual.geometry import Region
from tui_support import screen_text, until

from crawlscope.engine.lecture.snapshot import (
    ChainLink,
    Engine,
    Fetched,
    LoopInsides,
    QueueInsides,
    Slot,
    StageSnapshot,
    TaskInsides,
    Timer,
    Told,
    Watched,
)
from crawlscope.engine.observe.snapshot import Accounting, Phase
from crawlscope.engine.remote.client import Link
from crawlscope.tui.lecture.stage_watched import LectureWatchApp

HELLO = {"kind": "hello", "version": 1, "lecture": 1, "steer": False, "you": "127.0.0.1"}


def stage_with_hostile_text(steps: int) -> StageSnapshot:
    return StageSnapshot(
        engine=Engine.GENERATORS,
        steps=steps,
        phase=Phase.RUNNING,
        over=False,
        error=None,
        accounting=Accounting(3, 1, 0, 0, 1, 1, 0),
        loop=LoopInsides(
            (Watched(7, "read", hostile("callback")),),
            (Timer(1.5, hostile("timer")),),
            (hostile("ready"),),
            (Slot(0, "body", hostile("slot")),),
            1,
            1.5,
        ),
        tasks=(
            TaskInsides(
                hostile("task"),
                "body",
                hostile("url"),
                4,
                (ChainLink(hostile("function"), "x.py", 3, 12),),
                hostile("future"),
                True,
            ),
        ),
        queue=QueueInsides((hostile("item"),), 1, 2, (hostile("getter"),), hostile("join")),
        recent=(Told(hostile("raw"), hostile("who"), hostile("sentence")),),
        fetched=(Fetched(hostile("fetched"), 200, None),),
    )


@asynccontextmanager
async def lecture_monitor(messages: list[str], more: asyncio.Event) -> AsyncIterator[str]:
    """A server at /lecture that sends `messages[0]`, and the rest once `more` is set."""

    async def handle(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(messages[0])
        await more.wait()
        with contextlib.suppress(ConnectionError):  # the viewer may be gone already
            for message in messages[1:]:
                await ws.send_str(message)
            async for _ in ws:
                pass
        return ws

    app = web.Application()
    app.router.add_get("/lecture", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"ws://127.0.0.1:{port}/lecture"
    finally:
        more.set()  # a handler still waiting ends, so the server closes at once
        await runner.cleanup()


def frame(snapshot: Any) -> str:
    return json.dumps({"kind": "stage", "snapshot": snapshot, "viewers": ["a"]})


async def test_a_hostile_lecture_is_shown_escaped_and_its_bad_frames_dropped() -> None:
    good = stage_with_hostile_text(5)
    plain = good.to_plain()
    too_deep = json.loads(json.dumps(plain))
    too_deep["tasks"][0]["links"] = [too_deep["tasks"][0]["links"][0]] * 65
    messages = [
        json.dumps(HELLO),
        frame(plain),
        frame({**plain, "steps": "6"}),
        "not JSON at all",
        frame(too_deep),
        frame({**plain, "engine": "threads"}),
        json.dumps({"kind": "stage", "snapshot": plain, "viewers": "everyone"}),
    ]
    more = asyncio.Event()  # the hello first; the good frame and the bad ones once set
    async with lecture_monitor(messages, more) as url:
        app = LectureWatchApp(url)
        async with app.run_test(size=(160, 50)) as pilot:
            more.set()
            remote = app.remote
            await until(pilot, lambda: remote.bad_frames == 5, "the five bad frames dropped")
            screen = app.watched
            await until(pilot, lambda: screen.shown is not None, "the good frame drawn")
            assert remote.stage is not None and remote.stage.steps == 5  # the last good one
            assert remote.link is Link.CONNECTED
            text = screen_text(app)
            assert "\x1b" not in text and "\u202e" not in text
            for field in ("task", "function", "future", "item", "getter", "join",
                          "sentence", "raw"):  # fmt: skip
                assert escaped(field).decode() in text, field
            bar = app.screen.query_one("#watch-bar")
            said = "".join(s.text for s in bar.render_lines(Region(0, 0, 160, 1)))
            assert "bad frame from monitor: viewers is not a list" in said


async def test_a_crawls_monitor_or_another_version_is_told_in_words() -> None:
    crawl_hello = {"kind": "hello", "version": 1, "config": {}, "steer": False, "you": "x"}
    for hello, words in (
        (crawl_hello, "a crawl's monitor, not a lecture's"),
        ({**HELLO, "lecture": 2}, "a lecture of version 2, not 1"),
    ):
        async with lecture_monitor([json.dumps(hello)], asyncio.Event()) as url:
            app = LectureWatchApp(url)
            async with app.run_test(size=(120, 41)) as pilot:
                remote = app.remote
                await until(pilot, lambda w=words, r=remote: w in r.why, "the refusal in words")
                assert remote.link is Link.DROPPED and remote.stage is None
