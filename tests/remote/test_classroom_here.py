"""`crawlscope serve --here`: the terminal serve runs in shows the class's screen and its
keys steer it, in a real pseudo-terminal, with a real browser-side viewer on the class
page; q there ends the class and gives the terminal back as it was."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import struct
import subprocess
import termios
import threading
import time

import pyte
from classroom_support import TIMEOUT, client_session, watching

from crawlscope.tui.classroom.terminal import RESTORE
from crawlscope.tui.waiting import wait_until
from helpers import CLI, run_cli


class Terminal:
    """`crawlscope serve ARGS...` with a pseudo-terminal of `cols` x `rows` as its stdin,
    stdout and stderr; what it writes is read into a pyte screen as a terminal would."""

    def __init__(self, *args: str, cols: int = 120, rows: int = 40) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.process = subprocess.Popen(
            [*CLI, "serve", "--port", "0", *args], stdin=slave, stdout=slave, stderr=slave,
            start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        self.master = master
        self.raw = bytearray()
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.raw += data
                self.stream.feed(data)

    def shows(self, words: str) -> bool:
        with self.lock:
            return words in "\n".join(self.screen.display)

    def said(self, name: str) -> str | None:
        with self.lock:
            text = self.raw.decode("utf-8", "replace")
        for line in text.splitlines():
            if line.startswith(f"{name}: "):
                return line.partition(": ")[2].strip()
        return None

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


async def test_the_terminal_serve_runs_in_shows_the_screen_and_steers_the_class() -> None:
    terminal = Terminal("--lecture", "--here")
    try:
        await wait_until(lambda: terminal.said("serving") is not None, "serving:", timeout=TIMEOUT)
        page = terminal.said("serving")
        assert page is not None
        async with client_session() as client, watching(client, page) as student:
            await wait_until(lambda: student.shows("step 0 "), "the class page", timeout=TIMEOUT)
            await wait_until(lambda: terminal.shows("step 0 "), "the terminal's", timeout=TIMEOUT)
            terminal.type(b"n")
            await wait_until(lambda: student.shows("step 1 "), "n typed", timeout=TIMEOUT)
            await wait_until(lambda: terminal.shows("step 1 "), "and on it", timeout=TIMEOUT)
            terminal.type(b"q")
            await wait_until(lambda: terminal.process.poll() is not None, "q", timeout=TIMEOUT)
        assert terminal.process.returncode == 0
        # The modes the app switched on are switched off again, last of all.
        assert RESTORE in terminal.raw[-200:]
    finally:
        terminal.close()


async def test_here_is_refused_in_one_line_without_a_terminal_or_with_one_too_small() -> None:
    done = await asyncio.to_thread(run_cli, "serve", "--lecture", "--here", "--port", "0")
    assert done.returncode == 2
    assert done.stderr == "crawlscope: --here: needs a terminal (stdin and stdout)\n"
    terminal = Terminal("--lecture", "--here", "--size", "100x30", cols=80, rows=24)
    try:
        deadline = time.monotonic() + TIMEOUT
        while terminal.process.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert terminal.process.returncode == 2
        said = "this terminal is 80x24, smaller than the screen's --size 100x30"
        await wait_until(lambda: said.encode() in terminal.raw, "why", timeout=TIMEOUT)
    finally:
        terminal.close()
