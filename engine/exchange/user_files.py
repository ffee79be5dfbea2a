"""Reading a file a user names (a recording, a config, a secret): only a regular file,
only up to its cap, and refused BEFORE it is read when it is neither.

`/dev/zero`, a FIFO or a 20 GB file handed to a loader that reads whole would fill the
memory (or wait for a writer for ever) before any check of its content could say no. So
every loader of a user's file opens it through `UserFile`: opened without blocking (a
FIFO with no writer does not hang the open), its kind and size read from the open file
itself (fstat: no window between the look and the read), and at most `cap + 1` bytes
read whatever the size said (a file that grows, or one of /proc that says 0).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..observe.text import printable

MiB = 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


class FileRefused(ValueError):
    """A file that cannot be read, is no regular file or is over its cap: one line for
    the user, naming the file."""


def shown_path(path: str | Path) -> str:
    """A path as a message names it: escaped, and not a screenful."""
    return printable(str(path), 200)


def size_text(size: int) -> str:
    """A size in MiB, KiB or bytes: whole, or to a tenth."""
    for unit, name in ((MiB, "MiB"), (1024, "KiB")):
        if size >= unit:
            return f"{size // unit:,} {name}" if size % unit == 0 else f"{size / unit:,.1f} {name}"
    return f"{size} bytes"


class UserFile:
    """A regular file opened for reading; FileRefused if it is anything else."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise FileRefused(f"cannot read {shown_path(path)}: {exc.strerror or exc}") from None
        try:
            mode, self.size = (info := os.fstat(fd)).st_mode, info.st_size
            if not stat.S_ISREG(mode):
                kind = next((name for test, name in _KINDS if test(mode)), "of an odd kind")
                why = f"it is {kind}, not a regular file"
                raise FileRefused(f"cannot read {shown_path(path)}: {why}")
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def __enter__(self) -> UserFile:
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self._fd)

    def head(self, count: int) -> bytes:
        """Its first `count` bytes at most (less in a shorter file)."""
        return self._read(0, count)

    def read(self, cap: int, what: str) -> bytes:
        """The whole file, refused unread if its size is over `cap`, and never more than
        `cap + 1` bytes read to find out (FileRefused either way). `what` names it in the
        refusal ("a crawl recording")."""
        if self.size > cap:
            raise self._too_big(cap, what, f"{size_text(self.size)}, ")
        data = self._read(0, cap + 1)
        if len(data) > cap:  # it grew since, or its size said nothing (/proc)
            raise self._too_big(cap, what, "")
        return data

    def _too_big(self, cap: int, what: str, size: str) -> FileRefused:
        name = shown_path(self.path)
        return FileRefused(f"{name} is too big for {what} ({size}at most {size_text(cap)})")

    def _read(self, offset: int, count: int) -> bytes:
        chunks: list[bytes] = []
        while count > 0:
            try:
                chunk = os.pread(self._fd, min(count, 16 * MiB), offset)
            except OSError as exc:  # EIO, EISDIR on an odd file system...
                why = exc.strerror or exc
                raise FileRefused(f"cannot read {shown_path(self.path)}: {why}") from None
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            count -= len(chunk)
        return b"".join(chunks)


def read_capped(path: str | Path, cap: int, what: str) -> bytes:
    """The whole of the regular file at `path`, at most `cap` bytes (FileRefused, in one
    line, for anything else)."""
    with UserFile(path) as file:
        return file.read(cap, what)
