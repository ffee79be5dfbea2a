"""`serve --here`: the lecturer's own terminal, where `crawlscope serve` runs, shows the
class's screen and steers it, like the lecturer's page does (for a laptop that drives the
projector itself while the class follows in their browsers).

The terminal is put in raw mode, so every key (Ctrl-C included) goes to the screen as a
browser's would; q in the app ends the class. The screen's bytes are written as they come
through a non-blocking pipe transport: a terminal that stops reading (a stalled ssh
session) makes serve skip to the screen as it stands once it drains, never wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import termios
import tty
from collections.abc import Callable
from typing import Any

# Bytes waiting for the terminal past which it is skipped until it drains, then redrawn
# whole from the screen model (which needs no history).
MAX_WAITING = 1024 * 1024
LOOK_EVERY = 0.25
# What a full-screen app may have left switched on, switched off: mouse reports, the
# alternate screen, a hidden cursor. Written at the end whatever the app managed to say.
RESTORE = b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?1049l\x1b[?25h\x1b[0m"


def refusal(cols: int, rows: int) -> str | None:
    """Why --here cannot be had with a screen of `cols` x `rows`, or None."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return "--here: needs a terminal (stdin and stdout)"
    size = os.get_terminal_size(sys.stdout.fileno())
    if size.columns < cols or size.lines < rows:
        return (
            f"--here: this terminal is {size.columns}x{size.lines}, smaller than the "
            f"screen's --size {cols}x{rows}"
        )
    return None


class LecturerTerminal:
    """This process's terminal as one more viewer, whose keys steer (`keys`)."""

    def __init__(self, keys: Callable[[bytes], None], whole_screen: Callable[[], bytes]) -> None:
        self.keys = keys
        self.whole_screen = whole_screen  # the screen as it stands, drawn on a fresh terminal
        self._stdin = sys.stdin.fileno()
        self._stdout = sys.stdout.fileno()
        self._saved: list[Any] | None = None
        self._transport: asyncio.WriteTransport | None = None
        self._skipping = False
        self._closed = False
        self._looking: asyncio.Task[None] | None = None

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        self._saved = termios.tcgetattr(self._stdin)
        tty.setraw(self._stdin)
        loop.add_reader(self._stdin, self._read)
        # The transport owns the file from here: it closes it.
        pipe = open(os.dup(self._stdout), "wb", buffering=0)  # noqa: SIM115
        self._transport, _ = await loop.connect_write_pipe(asyncio.Protocol, pipe)
        self._looking = asyncio.create_task(self._look_forever())

    def output(self, data: bytes) -> None:
        transport = self._transport
        if transport is None or transport.is_closing() or self._skipping:
            return
        if transport.get_write_buffer_size() > MAX_WAITING:
            self._skipping = True
            return
        transport.write(data)

    async def _look_forever(self) -> None:
        while True:
            await asyncio.sleep(LOOK_EVERY)
            transport = self._transport
            if self._skipping and transport is not None and not transport.get_write_buffer_size():
                self._skipping = False
                self.output(b"\x1b[H\x1b[2J" + self.whole_screen())

    def _read(self) -> None:
        try:
            data = os.read(self._stdin, 4096)
        except OSError:
            data = b""
        if not data:  # the terminal went away: nothing more to read from it
            asyncio.get_running_loop().remove_reader(self._stdin)
            return
        self.keys(data)

    async def close(self) -> None:
        """The terminal as it was: modes off, cooked, blocking (the pipe transport made
        the descriptor non-blocking, and the shell shares it). Once; again does nothing."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(self._stdin)
        if self._looking is not None:
            self._looking.cancel()
        transport = self._transport
        self._transport = None
        if transport is not None:
            transport.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(_drained(transport), 2.0)
        with contextlib.suppress(OSError):
            os.set_blocking(self._stdout, True)
            os.set_blocking(self._stdin, True)
            os.write(self._stdout, RESTORE + b"\x1b]2;\x07\r\n")
        if self._saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self._stdin, termios.TCSADRAIN, self._saved)


async def _drained(transport: asyncio.WriteTransport) -> None:
    while transport.get_write_buffer_size():
        await asyncio.sleep(0.02)
