"""A real `crawlscope serve` process and real WebSocket viewers of its class: each reads
every byte and keeps the screen it was drawn (pyte, as a browser's terminal would)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

import aiohttp
import pyte

from helpers import CLI

TIMEOUT = 90.0


def descendants(root: int) -> list[int]:
    """Every process under `root`, read from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""  # gone meanwhile


@dataclass
class Served:
    process: subprocess.Popen[str]
    lines: dict[str, str] = field(default_factory=dict)  # serving, lecturer, monitor
    err: list[str] = field(default_factory=list)

    @property
    def class_page(self) -> str:
        return self.lines["serving"]

    @property
    def lecturer_page(self) -> str:
        return self.lines["lecturer"]


def _read(stream: IO[str], served: Served, said: queue.Queue[str]) -> None:
    for line in stream:
        name, _, value = line.partition(": ")
        if name in ("serving", "lecturer", "monitor"):
            served.lines.setdefault(name, value.strip())
            said.put(name)
        else:
            served.err.append(line)


@contextlib.contextmanager
def serving(*options: str, wanted: tuple[str, ...] = ("serving", "lecturer")) -> Iterator[Served]:
    """`crawlscope serve --port 0 OPTIONS...` in a session of its own until the block
    ends (then SIGTERM, and SIGKILL to what is left of the session)."""
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", *options], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    served = Served(process)
    said: queue.Queue[str] = queue.Queue()
    for stream in (process.stdout, process.stderr):
        assert stream is not None
        threading.Thread(target=_read, args=(stream, served, said), daemon=True).start()
    try:
        deadline = time.monotonic() + TIMEOUT
        while not set(wanted) <= set(served.lines):
            with contextlib.suppress(queue.Empty):
                said.get(timeout=0.5)
            ended = process.poll() is not None
            assert not ended and time.monotonic() < deadline, f"serve said: {served.err}"
        yield served
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=TIMEOUT)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def client_session() -> aiohttp.ClientSession:
    """A client with no cap on its connections (aiohttp's default is 100)."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))


def origin(page: str) -> str:
    return "{0.scheme}://{0.netloc}".format(urlsplit(page))


def cells(screen: pyte.Screen) -> list[list[tuple[object, ...]]]:
    """Every cell of `screen` as (character, colours, attributes): what a viewer sees,
    not only its text."""
    return [[tuple(screen.buffer[y][x]) for x in range(screen.columns)]
            for y in range(screen.lines)]  # fmt: skip


@dataclass
class Watcher:
    """A viewer of a class: its socket, every byte it was sent, its screen."""

    ws: aiohttp.ClientWebSocketResponse
    cols: int = 120
    rows: int = 40
    received: int = 0
    count: int = -1  # the viewer count the page was last told
    keeps_screen: bool = True  # False: only counts bytes (a crowd of 200 in one process)
    screen: pyte.Screen = field(init=False)
    stream: pyte.ByteStream = field(init=False)

    def __post_init__(self) -> None:
        self.screen = pyte.Screen(self.cols, self.rows)
        self.stream = pyte.ByteStream(self.screen)

    def take(self, message: aiohttp.WSMessage) -> None:
        if message.type is aiohttp.WSMsgType.BINARY:
            self.received += len(message.data)
            if self.keeps_screen:
                self.stream.feed(message.data)
        elif message.type is aiohttp.WSMsgType.TEXT:
            count = json.loads(message.data).get("viewers")
            if isinstance(count, int):
                self.count = count

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def cells(self) -> list[list[tuple[object, ...]]]:
        return cells(self.screen)

    def shows(self, words: str) -> bool:
        return words in self.text()

    async def keys(self, keys: str) -> None:
        await self.ws.send_str(json.dumps(["stdin", keys]))


@contextlib.asynccontextmanager
async def watching(
    session: aiohttp.ClientSession,
    page: str,
    *,
    size: tuple[int, int] = (120, 40),
    keeps_screen: bool = True,
) -> AsyncIterator[Watcher]:
    """A viewer on `page` (the class's or the lecturer's) as its page's script connects:
    from the page's own origin, reading every message until the block ends."""
    ws = await session.ws_connect(f"{page}ws", headers={"Origin": origin(page)})
    watcher = Watcher(ws, *size, keeps_screen=keeps_screen)

    async def read() -> None:
        async for message in ws:
            watcher.take(message)

    reading = asyncio.create_task(read())
    try:
        yield watcher
    finally:
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading
        await ws.close()


async def never_reading(page: str) -> socket.socket:
    """A WebSocket on `page` whose reader never reads a byte (a tab whose machine froze),
    with a small receive buffer, so what is sent to it piles up in the server."""
    parts = urlsplit(page)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (parts.hostname, parts.port))
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET {parts.path}ws HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"Origin: {origin(page)}\r\n\r\n"
    )
    await loop.sock_sendall(sock, request.encode())
    answer = await loop.sock_recv(sock, 12)
    assert answer == b"HTTP/1.1 101", answer
    return sock
