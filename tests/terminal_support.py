"""A `crawlscope` command in a real pseudo-terminal, its screen read back with its colours
(pyte, a terminal emulator): what a person at that terminal would see, as tmux shows it.

    with Terminal([*CLI, "replay", path], 160, 45) as term:
        term.send(b"t")
        term.wait_for(lambda: "following now" in term.text(), "the timeline")
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Sequence
from types import TracebackType

import pyte

TIMEOUT = 60.0


class Terminal:
    def __init__(self, argv: Sequence[str], columns: int, rows: int) -> None:
        self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.ByteStream(self.screen)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = dict(os.environ, TERM="xterm-256color", COLORTERM="truecolor")
        # The size is the pty's: a COLUMNS or LINES inherited (pytest-xdist's workers have
        # COLUMNS=80) would win over it where the size is read, and the program would draw
        # 80 columns on a screen read as 160.
        env["COLUMNS"], env["LINES"] = str(columns), str(rows)
        env.pop("TEXTUAL", None)
        self.proc = subprocess.Popen(
            list(argv), stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        os.close(slave)
        self.master = master

    def pump(self, wait: float = 0.05) -> None:
        """Read what the program wrote meanwhile into the screen."""
        while True:
            ready, _, _ = select.select([self.master], [], [], wait)
            if not ready:
                return
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the program closed its side
                return
            if not data:
                return
            self.stream.feed(data)
            wait = 0.0

    def settle(self, quiet: float = 0.5) -> None:
        """Read until the screen is the same before and after `quiet` seconds of reading:
        a frame is written in pieces, and a screen read between two of them mixes two
        frames. For a screen that stops changing (a paused replay); TIMEOUT bounds it."""
        deadline = time.monotonic() + TIMEOUT
        before = self.text()
        while time.monotonic() < deadline:
            self.pump(quiet)
            now = "\n".join(self.screen.display)
            if now == before:
                return
            before = now
        raise AssertionError(f"the screen never stopped changing:\n{self.text()}")

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def text(self) -> str:
        self.pump()
        return "\n".join(self.screen.display)

    def line(self, y: int) -> str:
        return self.screen.display[y]

    def colour(self, x: int, y: int) -> str:
        """A cell's colour: its background where it has one (text written on a colour),
        else its foreground."""
        char = self.screen.buffer[y][x]
        return char.bg if char.bg != "default" else char.fg

    def wait_for(self, condition: Callable[[], object], what: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not condition():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"no {what} on screen:\n{self.text()}")
            self.pump(0.1)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        os.close(self.master)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
