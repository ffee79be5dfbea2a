"""What the screen draws, read once and queued for every viewer (asciinema's relay: one
producer, many read-only players). A viewer costs its socket and a bounded queue: one that
has too much waiting for it, or has been behind for too long, is dropped at once, and the
screen never waits for anyone.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass, field

from aiohttp import web

from crawlscope.engine.remote.monitor import kernel_queue

from .limits import BATCH_SECONDS, COUNT_EVERY, LOOK_EVERY, SLACK_BYTES, ClassLimits
from .model import ScreenModel


@dataclass(eq=False)
class Viewer:
    ws: web.WebSocketResponse
    transport: asyncio.Transport | None
    lecturer: bool
    # The screen's bytes, and now and then a line of text (the count) for the page.
    pending: deque[bytes | str] = field(default_factory=deque)
    queued: int = 0  # bytes in `pending`
    in_flight: int = 0  # bytes handed to the socket's writer and not yet taken
    behind_since: float | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    sender: asyncio.Task[None] | None = None
    count_sent: int = -1

    def waiting(self) -> int:
        """Bytes waiting for this viewer in this process."""
        transport = self.transport
        buffered = 0 if transport is None or transport.is_closing() else (
            transport.get_write_buffer_size()
        )  # fmt: skip
        return self.queued + self.in_flight + buffered

    def behind(self) -> int:
        """Bytes waiting for this viewer, the kernel's send queue included."""
        transport = self.transport
        kernel = 0 if transport is None or transport.is_closing() else kernel_queue(transport)
        return self.waiting() + kernel


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

    @property
    def full(self) -> bool:
        return len(self.viewers) >= self.limits.max_viewers

    def output(self, data: bytes) -> None:
        """What the screen drew, gathered for a moment (BATCH_SECONDS): a frame comes
        from the terminal a few KiB at a time, and each viewer should get it as one
        message, not one a read, whatever the number of viewers."""
        self._batch += data
        if self._flushing is None:
            loop = asyncio.get_running_loop()
            self._flushing = loop.call_later(BATCH_SECONDS, self.flush)

    def flush(self) -> None:
        """The output gathered: into the model, and queued for every viewer."""
        self._flushing = None
        if not self._batch:
            return
        data = bytes(self._batch)
        self._batch.clear()
        self.model.feed(data)
        limit = self.limits.max_behind_bytes
        total = 0
        for viewer in list(self.viewers):
            if viewer.waiting() + len(data) > limit:
                self.drop(viewer)
                continue
            self._queue(viewer, data)
            total += viewer.waiting()
        if total > self.limits.total_behind_bytes:
            self._trim(total)

    def reset(self) -> None:
        """A new screen process starts: everyone's terminal starts afresh with it."""
        self.flush()
        self.model.reset()
        for viewer in list(self.viewers):
            self._queue(viewer, b"\x1bc")

    def join(self, viewer: Viewer) -> None:
        """A viewer comes in: the screen as it stands first, then what follows."""
        self.flush()  # the model is the whole screen only with nothing gathered
        self.viewers.add(viewer)
        self._queue(viewer, self.model.serialised())
        viewer.sender = asyncio.create_task(self._send(viewer), name="class-viewer")

    def leave(self, viewer: Viewer) -> None:
        if viewer in self.viewers:
            self.viewers.discard(viewer)
        if viewer.sender is not None:
            viewer.sender.cancel()
        viewer.pending.clear()
        viewer.queued = 0

    def drop(self, viewer: Viewer) -> None:
        """Let a viewer that fell behind go at once: a close handshake would wait on the
        very reading it does not do."""
        if viewer not in self.viewers:
            return
        self.dropped += 1
        self.leave(viewer)
        if viewer.transport is not None:
            viewer.transport.abort()

    def _queue(self, viewer: Viewer, data: bytes | str) -> None:
        viewer.pending.append(data)
        viewer.queued += len(data)
        viewer.wake.set()

    def _trim(self, total: int) -> None:
        """Drop the viewers furthest behind while all of them together have more than
        the total limit waiting: many slow viewers are bounded, not only each one."""
        for viewer in sorted(self.viewers, key=Viewer.waiting, reverse=True):
            if total <= self.limits.total_behind_bytes:
                break
            total -= viewer.waiting()
            self.drop(viewer)

    async def _send(self, viewer: Viewer) -> None:
        """Everything queued for `viewer`, the screen's bytes as one message each time
        it is free (a viewer that fell behind catches up in one go)."""
        while True:
            await viewer.wake.wait()
            viewer.wake.clear()
            while viewer.pending:
                screen = bytearray()
                text: str | None = None
                while viewer.pending:
                    item = viewer.pending.popleft()
                    if isinstance(item, bytes):
                        screen += item
                    elif screen:  # a text message goes on its own, in its turn
                        viewer.pending.appendleft(item)
                        break
                    else:
                        text = item
                        break
                size = len(screen) if screen else len(text or "")
                viewer.queued -= size
                viewer.in_flight = size
                try:
                    if screen:
                        await viewer.ws.send_bytes(bytes(screen))
                    elif text is not None:
                        await viewer.ws.send_str(text)
                except (ConnectionError, RuntimeError):
                    self.leave(viewer)
                    return
                finally:
                    viewer.in_flight = 0

    async def _count_forever(self) -> None:
        """The number watching, to every page whenever it changed (the pages show it)."""
        while True:
            await asyncio.sleep(COUNT_EVERY)
            count = len(self.viewers)
            text = json.dumps({"viewers": count})
            for viewer in list(self.viewers):
                if viewer.count_sent != count:
                    viewer.count_sent = count
                    self._queue(viewer, text)

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
