"""One process at a time on a file: an flock on a side file that holds the owner's PID.

SQLite's own locking lets two processes share a state file and fails one of them
later, mid-crawl, with "database is locked"; the side lock fails the second at once,
and says which process has the file. The kernel drops an flock when its process dies
(even by SIGKILL), so a crashed crawl never leaves a lock that blocks the next run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time


class LockedError(Exception):
    """Another process holds the lock; `pid` is its PID, if it wrote one."""

    def __init__(self, path: str, pid: int | None) -> None:
        who = f"pid {pid}" if pid is not None else "a process that has not said its pid"
        super().__init__(f"{path} is in use by another crawlscope process ({who})")
        self.pid = pid


class FileLock:
    """An exclusive lock on the side file `path + ".lock"` (`path` with its symlinks
    resolved), taken at once or not at all."""

    def __init__(self, path: str) -> None:
        self.name = path
        # The same side file whatever the spelling: "./crawl.db", a symlink to it.
        self.path = os.path.realpath(path) + ".lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock; LockedError if another process has it, OSError if the side
        file cannot be made."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _holder(fd)
                os.close(fd)
                raise LockedError(self.name, pid) from None
            except BaseException:
                os.close(fd)
                raise
            # The owner before us removes the side file as it lets go: if it did so
            # after we opened it, ours is a lock on a file no one else can see.
            try:
                ours, named = os.fstat(fd), os.stat(self.path)
                same = (ours.st_dev, ours.st_ino) == (named.st_dev, named.st_ino)
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        # Removed while still held, so no one can lock this file after we let it go.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(fd)

    def __del__(self) -> None:
        self.release()


def _holder(fd: int, patience: float = 0.5) -> int | None:
    """The PID the holder wrote; it writes it just after it locks, so an empty file is
    waited on for a moment."""
    deadline = time.monotonic() + patience
    while (pid := _read_pid(fd)) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return pid


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
