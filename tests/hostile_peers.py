"""The other side of a process boundary, hostile: a monitor that speaks the protocol
(engine/remote/protocol.py) with escape sequences in every string, and a real terminal
(a pty) to run `crawlscope attach` in and read every byte it writes."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import re
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from crawlscope.engine.observe.snapshot import Accounting, Phase, Snapshot
from crawlscope.engine.observe.workers import WorkerState, WorkerView
from crawlscope.engine.records import FetchRecord
from crawlscope.engine.redirects import Chain, ChainEnd
from crawlscope.engine.remote.protocol import (
    PATH,
    VERSION,
    chain_to_plain,
    record_to_plain,
    snapshot_to_plain,
)
from crawlscope.tui.waiting import wait_until
from helpers import CLI

TIMEOUT = 60.0


def hostile(field: str) -> str:
    """Text for `field` that would set the terminal's title, make a hyperlink, colour it,
    clear it and reverse what follows, were it written raw. The field's name comes first,
    so that what a narrow column keeps still says whose text it was."""
    return (
        f"{field}\x1b]0;PWNED-{field}\x07\x1b]8;;http://evil.example/\x1b\\L\x1b]8;;\x1b\\"
        f"\x1b[5;31;47m\x1b[2J\x9b1m\x07\x08\u202eevil"
    )


# What must never reach the terminal raw: a title (OSC 0 and 2), a hyperlink (OSC 8), the
# hostile colours, a C1 CSI and the bidi override. (Textual's own output has no OSC.)
RAW = (b"\x1b]0;", b"\x1b]2;", b"\x1b]8;", b"\x1b[5;31;47m", b"\xc2\x9b", "\u202e".encode())


def escaped(field: str) -> bytes:
    """How the start of `hostile(field)` looks once escaped: what the screen must show."""
    return f"{field}\\x1b]0;PWNED".encode()


def snapshot_plain(text: Callable[[str], str] = hostile) -> dict[str, Any]:
    workers = tuple(
        WorkerView(i, WorkerState.BODY, text("url"), 1.0, 3, False, False, True,
                   text("suspended_at"))
        for i in range(3)
    )  # fmt: skip
    snap = Snapshot(
        t=1.0, elapsed=5.0, phase=Phase.RUNNING, workers=workers, live_workers=3,
        accounting=Accounting(10, 2, 1, 1, 3, 3, 0), unfinished=6, redirect_version=1,
        paused_all=False, slowmo=0.0, crawl_delay=text("crawl_delay"), verdict=text("verdict"),
    )  # fmt: skip
    return snapshot_to_plain(snap)


def record_plain(text: Callable[[str], str] = hostile) -> dict[str, Any]:
    now = time.time()
    return record_to_plain(
        FetchRecord(
            url=text("rec_url"), status=None, next_url=text("next_url"),
            exception=text("exception"), size=10, content_type=text("content_type"),
            encoding=text("encoding"), num_urls=0, num_new_urls=0, tries=1, depth=0,
            referrer=text("referrer"), worker=0, t_start=now, t_end=now,
        )
    )  # fmt: skip


def chain_plain(text: Callable[[str], str] = hostile) -> list[Any]:
    return chain_to_plain(Chain((text("chain_a"), text("chain_b")), ChainEnd.LOOP, None, True))


def config_plain() -> dict[str, Any]:
    return {"roots": ["http://127.0.0.1:9/"], "user_agent": hostile("user_agent")}


def hello() -> dict[str, Any]:
    return {"kind": "hello", "version": VERSION, "config": config_plain(), "steer": False,
            "you": "127.0.0.1"}  # fmt: skip


def frame(text: Callable[[str], str] = hostile) -> dict[str, Any]:
    return {
        "kind": "frame",
        "snapshot": snapshot_plain(text),
        "recent": [record_plain(text)],
        "recent_reset": True,
        "viewers": [text("viewer")],
        "chains": [chain_plain(text)],
        "chain_count": 1,
    }


class HostileMonitor:
    """A monitor on 127.0.0.1: the hello, then `good()` every 0.1 s, and whatever is put
    in `bad` as soon as it is put."""

    def __init__(
        self,
        good: Callable[[], dict[str, Any]] = frame,
        greeting: Callable[[], dict[str, Any]] = hello,
    ) -> None:
        self.good = good
        self.greeting = greeting
        self.bad: asyncio.Queue[str] = asyncio.Queue()
        self.sent_bad = 0
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps(self.greeting()))
        while not ws.closed:
            try:
                text = await asyncio.wait_for(self.bad.get(), 0.1)
                self.sent_bad += 1
            except TimeoutError:
                text = json.dumps(self.good())
            try:
                await ws.send_str(text)
            except ConnectionError:  # the viewer went
                break
        return ws

    async def __aenter__(self) -> HostileMonitor:
        app = web.Application()
        app.router.add_get(PATH, self._socket)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"ws://127.0.0.1:{port}{PATH}"
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


class Terminal:
    """A command on a pty of `size` (columns, rows): every byte it writes, kept in `out`."""

    def __init__(self, args: list[str], size: tuple[int, int] = (200, 50)) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(size[0]),
               "LINES": str(size[1])}  # fmt: skip
        env.pop("TEXTUAL_DRIVER", None)
        self.proc = subprocess.Popen(
            [*CLI, *args], stdin=slave, stdout=slave, stderr=slave, env=env,
            start_new_session=True, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self.master = master
        self.out = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.out += chunk

    def bytes(self) -> bytes:
        with self._lock:
            return bytes(self.out)

    def has(self, *wanted: bytes) -> bool:
        got = self.bytes()
        return all(w in got for w in wanted)

    async def shows(self, *wanted: bytes, what: str = "") -> None:
        await wait_until(
            lambda: self.has(*wanted) or self.proc.poll() is not None,
            what or f"{wanted!r} on the terminal",
            timeout=TIMEOUT,
            describe=lambda: f"missing: {[w for w in wanted if w not in self.bytes()]}",
        )
        assert self.proc.poll() is None, self.tail()
        assert self.has(*wanted), self.tail()

    def tail(self) -> str:
        return self.bytes()[-3000:].decode(errors="replace")

    def press(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self) -> int | None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=TIMEOUT)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
        return self.proc.returncode


@contextlib.asynccontextmanager
async def terminal(*args: str, size: tuple[int, int] = (200, 50)) -> AsyncIterator[Terminal]:
    term = Terminal(list(args), size)
    try:
        yield term
    finally:
        await asyncio.to_thread(term.close)


@contextlib.asynccontextmanager
async def watched_lecture(record: str) -> AsyncIterator[tuple[Terminal, Terminal]]:
    """`lecture --monitor 0 --record RECORD` in a terminal and `attach` to the URL it
    prints in another, as a lecturer and a student run them: both, once the viewer shows
    the lecture's first stage."""
    args = ("lecture", "--monitor", "0", "--record", record, "--max-tasks", "2")
    async with terminal(*args, size=(120, 40)) as lecturer:
        await lecturer.shows(b"STEP MODE", what="the lecture's first stage")
        found = re.search(rb"monitor: (ws://\S+/lecture)", lecturer.bytes())
        assert found, lecturer.tail()
        async with terminal("attach", found.group(1).decode(), size=(120, 40)) as viewer:
            await viewer.shows(b"WATCHING", b"stage 1", b"read-only", what="the lecture")
            yield lecturer, viewer
