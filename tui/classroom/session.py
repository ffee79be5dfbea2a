"""One class: a screen process, its relay and its pages, served on a socket until told to
stop. The screen is started again when it ends (the lecturer pressed q, say), so the class
is never left with a dead screen; one that ends at once stops the class with a line
saying why, rather than starting again forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from crawlscope.engine.observe.text import printable

from .limits import DEFAULT_LIMITS, ClassLimits
from .model import ScreenModel
from .pages import Pages
from .pty_screen import ScreenProcess
from .relay import Relay
from .terminal import LecturerTerminal

QUICK_END = 3.0  # seconds: a screen that ends sooner failed to start


@dataclass(frozen=True)
class ClassSettings:
    cols: int = 120
    rows: int = 40
    limits: ClassLimits = DEFAULT_LIMITS
    allow_origins: frozenset[str] = frozenset()
    title: str = "crawlscope"
    here: bool = False  # this terminal shows the screen and steers it (terminal.py)
    fps: float | None = None  # a crawl's screen's refreshes a second (attach --fps)


async def run_class(
    sock: socket.socket,
    argv: list[str],
    settings: ClassSettings,
    stop: asyncio.Event,
    where: str,
    shown: Callable[[Relay], None] | None = None,
) -> int:
    """Serve the screen `argv` draws to a class on `sock` until `stop`; say where (the
    class's URL and the lecturer's, on stdout). 1 if the screen could not start. With
    `settings.here`, this terminal shows the screen and steers it too, and the class
    ends when the screen does (the lecturer pressed q)."""
    model = ScreenModel(settings.cols, settings.rows)
    relay = Relay(model, settings.limits)
    if shown is not None:
        shown(relay)  # who watches the screen, for the crawl's own count of viewers
    current: list[ScreenProcess] = []

    def keys(data: bytes) -> None:
        if current:
            current[0].send(data)

    pages = Pages(relay, settings.cols, settings.rows, keys, settings.allow_origins, settings.title)
    runner = web.AppRunner(pages.app(), handle_signals=False, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    relay.start()
    print(f"serving: {where}/", flush=True)
    print(f"lecturer: {where}{pages.lecturer_path}", flush=True)
    stopping = asyncio.create_task(stop.wait())
    here: LecturerTerminal | None = None
    output = relay.output
    if settings.here:
        here = LecturerTerminal(keys, relay.whole_screen)

        def output(data: bytes) -> None:
            relay.output(data)
            here.output(data)

    try:
        if here is not None:
            await here.open()
        while True:
            screen = ScreenProcess(argv, settings.cols, settings.rows, output)
            current[:] = [screen]
            started = time.monotonic()
            await screen.start()
            ended = asyncio.create_task(screen.wait())
            await asyncio.wait([ended, stopping], return_when=asyncio.FIRST_COMPLETED)
            if stopping.done():
                ended.cancel()
                await screen.stop()
                return 0
            # q where the lecturer sits ends the class, however soon. Elsewhere a screen
            # that ends at once failed to start, and starting it again would loop.
            if here is not None and ended.result() == 0:
                return 0
            if here is not None or time.monotonic() - started < QUICK_END:
                why = printable(screen.last_words())
                if here is not None:
                    await here.close()
                print(f"crawlscope: the class's screen ended: {why}", file=sys.stderr)
                return 1
            relay.reset()
    finally:
        stopping.cancel()
        if here is not None:
            await here.close()
        with contextlib.suppress(Exception):
            await current[0].stop()
        await relay.close()
        await runner.cleanup()
