"""What the screen draws, read once and sent to every viewer (asciinema's relay: one
producer, many read-only players). What the screen drew in a moment becomes one WebSocket
frame, built once and written as it is to every viewer's socket. A viewer costs its socket
and what waits in its buffer: one that has too much waiting for it, or has been behind for
too long, is dropped at once, and the screen never waits for anyone.
"""

from __future__ import annotations

import asyncio
import json
import struct
import time
from dataclasses import dataclass

from aiohttp import web

from crawlscope.engine.remote.monitor import kernel_queue

from .cuts import whole_part
from .limits import BATCH_SECONDS, COUNT_EVERY, LOOK_EVERY, SLACK_BYTES, ClassLimits
from .model import ScreenModel


def frame(opcode: int, payload: bytes) -> bytes:
    """One whole, unmasked WebSocket message (RFC 6455, 5.2), as a server sends it: built
    once and written as it is to every viewer's socket, where aiohttp would frame (and,
    with permessage-deflate, compress) it again for each."""
    size = len(payload)
    first = 0x80 | opcode  # FIN: one frame holds the whole message
    if size < 126:
        head = bytes((first, size))
    elif size < 1 << 16:
        head = struct.pack("!BBH", first, 126, size)
    else:
        head = struct.pack("!BBQ", first, 127, size)
    return head + payload


BINARY, TEXT = 0x2, 0x1


@dataclass(eq=False)
class Viewer:
    ws: web.WebSocketResponse
    transport: asyncio.Transport | None
    lecturer: bool
    address: str = "?"  # where the browser watches from
    behind_since: float | None = None
    count_sent: int = -1

    def waiting(self) -> int:
        """Bytes waiting for this viewer in this process (the transport's buffer: what
        the kernel would not take yet)."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return 0
        return transport.get_write_buffer_size()

    def behind(self) -> int:
        """Bytes waiting for this viewer, the kernel's send queue included."""
        transport = self.transport
        kernel = 0 if transport is None or transport.is_closing() else kernel_queue(transport)
        return self.waiting() + kernel

    def write(self, message: bytes) -> bool:
        """`message` (a whole frame) onto the socket; False if it is closing. Frames
        aiohttp itself writes (pong, close) go between two of these, never inside one:
        both are whole writes on this one thread."""
        transport = self.transport
        if transport is None or transport.is_closing() or self.ws.closed:
            return False
        transport.write(message)
        return True


class Relay:
    """The screen's model and its viewers: output() feeds both."""

    def __init__(self, model: ScreenModel, limits: ClassLimits) -> None:
        self.model = model
        self.limits = limits
        self.viewers: set[Viewer] = set()
        self.dropped = 0
        self._counting: asyncio.Task[None] | None = None
        self._looking: asyncio.Task[None] | None = None
        self._batch = bytearray()  # output read since the last flush
        self._flushing: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._counting = asyncio.create_task(self._count_forever())
        self._looking = asyncio.create_task(self._look_forever())

    async def close(self) -> None:
        for task in (self._counting, self._looking):
            if task is not None:
                task.cancel()
        if self._flushing is not None:
            self._flushing.cancel()
        for viewer in list(self.viewers):
            self.drop(viewer)

    def addresses(self) -> list[str]:
        """Where each browser watching is (the lecturer's included)."""
        return [viewer.address for viewer in self.viewers]

    @property
    def full(self) -> bool:
        """Whether the class has all the viewers it may: the lecturer's sockets are not
        counted against the cap, and are never refused for it (pages.py)."""
        return sum(not v.lecturer for v in self.viewers) >= self.limits.max_viewers

    def output(self, data: bytes) -> None:
        """What the screen drew, gathered for a moment (BATCH_SECONDS): a frame comes
        from the terminal a few KiB at a time, and each viewer should get it as one
        message, not one a read, whatever the number of viewers."""
        self._batch += data
        if self._flushing is None:
            loop = asyncio.get_running_loop()
            self._flushing = loop.call_later(BATCH_SECONDS, self.flush)

    def flush(self) -> None:
        """The output gathered: into the model, and to every viewer as one message."""
        self._flushing = None
        cut = whole_part(self._batch)
        if not cut:
            return
        data = bytes(self._batch[:cut])
        del self._batch[:cut]  # the start of a sequence, kept for the next message
        self.model.feed(data)
        self._send_all(frame(BINARY, data))

    def _send_all(self, message: bytes) -> None:
        limit = self.limits.max_behind_bytes
        total = 0
        for viewer in list(self.viewers):
            waiting = viewer.waiting()
            if waiting + len(message) > limit:
                self.drop(viewer)
                continue
            if not viewer.write(message):
                self.leave(viewer)
                continue
            total += waiting + len(message)
        if total > self.limits.total_behind_bytes:
            self._trim(total)

    def reset(self) -> None:
        """A new screen process starts: everyone's terminal starts afresh with it."""
        self.flush()
        self._batch.clear()  # the old screen's unfinished sequence, if any
        self.model.reset()
        self._send_all(frame(BINARY, b"\x1bc"))

    def whole_screen(self) -> bytes:
        """What draws the screen as it stands on a fresh terminal."""
        self.flush()  # the model is the whole screen only with nothing gathered
        return self.model.serialised()

    def join(self, viewer: Viewer) -> None:
        """A viewer comes in: the screen as it stands first, then what follows."""
        if viewer.write(frame(BINARY, self.whole_screen())):
            self.viewers.add(viewer)

    def leave(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)

    def drop(self, viewer: Viewer) -> None:
        """Let a viewer that fell behind go at once: a close handshake would wait on the
        very reading it does not do."""
        if viewer not in self.viewers:
            return
        self.dropped += 1
        self.leave(viewer)
        if viewer.transport is not None:
            viewer.transport.abort()

    def _trim(self, total: int) -> None:
        """Drop the viewers furthest behind while all of them together have more than
        the total limit waiting: many slow viewers are bounded, not only each one."""
        for viewer in sorted(self.viewers, key=Viewer.waiting, reverse=True):
            if total <= self.limits.total_behind_bytes:
                break
            total -= viewer.waiting()
            self.drop(viewer)

    async def _count_forever(self) -> None:
        """The number watching, to every page whenever it changed (the pages show it)."""
        while True:
            await asyncio.sleep(COUNT_EVERY)
            count = len(self.viewers)
            message = frame(TEXT, json.dumps({"viewers": count}).encode())
            for viewer in list(self.viewers):
                if viewer.count_sent != count:
                    viewer.count_sent = count
                    if not viewer.write(message):
                        self.leave(viewer)

    async def _look_forever(self) -> None:
        """Drop each viewer that has been behind for too long, or has too much waiting in
        the kernel: neither shows in this process while a viewer simply stops reading."""
        while True:
            await asyncio.sleep(LOOK_EVERY)
            self.look()

    def look(self) -> None:
        now = time.monotonic()
        limits = self.limits
        for viewer in list(self.viewers):
            behind = viewer.behind()
            if behind <= SLACK_BYTES:
                viewer.behind_since = None
            elif viewer.behind_since is None:
                viewer.behind_since = now
            if behind > limits.max_behind_bytes or (
                viewer.behind_since is not None
                and now - viewer.behind_since > limits.max_behind_seconds
            ):
                self.drop(viewer)
