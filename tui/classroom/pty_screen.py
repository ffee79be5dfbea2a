"""The one screen a class watches: a `crawlscope` command (attach, replay, lecture) run
once in a pseudo-terminal of a fixed size. Its output is read here, once, and handed to
`on_output`; the lecturer's keys are written to it. Nobody else can resize it: a viewer's
window changes only the font its browser draws with.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import os
import pty
import re
import signal
import struct
import termios
from collections.abc import Callable

from crawlscope.engine.cluster.embedded import end_with_parent

READ_SIZE = 64 * 1024
MAX_PENDING_KEYS = 64 * 1024  # keys the app has not read yet; a paste beyond is cut
STOP_SECONDS = 5.0
ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|.)")


class ScreenProcess:
    """`argv` in a `cols` x `rows` pseudo-terminal, from start() until stop()."""

    def __init__(
        self,
        argv: list[str],
        cols: int,
        rows: int,
        on_output: Callable[[bytes], None],
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv, self.cols, self.rows = argv, cols, rows
        self.on_output = on_output
        self.env = env
        self.process: asyncio.subprocess.Process | None = None
        self.ended = asyncio.Event()
        self._master = -1
        self._keys = bytearray()
        self._tail = bytearray()  # the last output, to say why a screen ended

    async def start(self) -> None:
        master, slave = pty.openpty()
        try:
            size = struct.pack("HHHH", self.rows, self.cols, 0, 0)
            fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
            env = dict(os.environ if self.env is None else self.env)
            env.update(TERM="xterm-256color", COLORTERM="truecolor")
            for name in ("COLUMNS", "LINES", "TEXTUAL_DRIVER"):
                env.pop(name, None)
            # In a session of its own, the terminal gives it no SIGHUP when serve dies:
            # the kernel's SIGKILL does (a screen holds nothing to save; left alone, it
            # spun at 100% of a core on the closed terminal, for ever).
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, stdin=slave, stdout=slave, stderr=slave,
                env=env, start_new_session=True,
                preexec_fn=functools.partial(end_with_parent, os.getpid(), signal.SIGKILL),
            )  # fmt: skip
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self._master = master
        os.set_blocking(master, False)
        asyncio.get_running_loop().add_reader(master, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self._master, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:  # EIO: every holder of the terminal's other side is gone
            data = b""
        if not data:
            self._close_master()
            return
        self._tail = (self._tail + data)[-4096:]
        self.on_output(data)

    def _close_master(self) -> None:
        if self._master < 0:
            return
        loop = asyncio.get_running_loop()
        loop.remove_reader(self._master)
        loop.remove_writer(self._master)
        os.close(self._master)
        self._master = -1
        self.ended.set()

    def send(self, keys: bytes) -> None:
        """The lecturer's keys, to the app; kept (up to a bound) while it does not read."""
        if self._master < 0:
            return
        room = MAX_PENDING_KEYS - len(self._keys)
        if room <= 0:
            return
        was_empty = not self._keys
        self._keys += keys[:room]
        if was_empty:
            self._writable()

    def _writable(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            done = os.write(self._master, self._keys)
        except BlockingIOError:
            done = 0
        except OSError:
            self._keys.clear()
            done = 0
        del self._keys[:done]
        if self._keys:
            loop.add_writer(self._master, self._writable)
        else:
            loop.remove_writer(self._master)

    def last_words(self) -> str:
        """The screen's last line of text, for a line saying why it ended."""
        text = ESCAPES.sub("", self._tail.decode("utf-8", "replace"))
        lines = [line.strip() for line in text.replace("\r", "\n").split("\n")]
        lines = [line for line in lines if line]
        return lines[-1] if lines else ""

    async def wait(self) -> int:
        assert self.process is not None
        code = await self.process.wait()
        await self.ended.wait()
        return code

    async def stop(self) -> None:
        """The app asked to end (SIGTERM to its session), then made to."""
        process = self.process
        if process is not None and process.returncode is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, sig)
                try:
                    await asyncio.wait_for(process.wait(), STOP_SECONDS)
                    break
                except TimeoutError:
                    continue
        self._close_master()
