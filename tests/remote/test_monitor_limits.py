"""What viewers may cost a crawl's process (engine/remote/monitor.py): a bounded number of
connections, each a WebSocket within seconds or closed; a bounded number of bytes queued
for each, kernel included; and only pages from allowed origins. Over real sockets, with a
crawl of the demo site in another process when the process's file limit is the point."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import queue
import resource
import secrets
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

import aiohttp
import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.remote.monitor import (
    VIEWER_SNDBUF,
    Monitor,
    ViewerLimits,
    listen,
    origin_of,
)
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.tui.waiting import wait_until
from tests.helpers import CLI, expected, path, run_cli

TIMEOUT = 60.0


@contextlib.asynccontextmanager
async def watched(
    pages: int = 300, tasks: int = 5, limits: ViewerLimits | None = None, latency: float = 0.01
) -> AsyncIterator[tuple[Crawler, Monitor]]:
    """A crawl of the demo site running here, with a monitor on a free port."""
    async with DemoServer(DemoConfig(pages=pages, latency=latency)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=tasks))
        sock = listen("127.0.0.1", 0)
        async with Monitor(crawler, crawler, sock, limits=limits or ViewerLimits()) as monitor:
            crawl = asyncio.create_task(crawler.crawl())
            await wait_until(lambda: crawler.t0 is not None, "the crawl starts")
            try:
                yield crawler, monitor
            finally:
                crawler.stop()
                await crawl


def port_of(monitor: Monitor) -> int:
    return int(monitor.sock.getsockname()[1])


def upgrade(
    port: int, origin: str | None = None, host: str | None = None, query: str = ""
) -> bytes:
    """A WebSocket upgrade request for the monitor's path, written by hand."""
    key = base64.b64encode(secrets.token_bytes(16)).decode()
    lines = [
        f"GET /crawl{query} HTTP/1.1",
        f"Host: {host or f'127.0.0.1:{port}'}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def status_of(
    port: int, origin: str | None = None, host: str | None = None, query: str = ""
) -> int:
    """The status line's code the monitor answers an upgrade with."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(upgrade(port, origin, host, query))
        line = await asyncio.wait_for(reader.readline(), TIMEOUT)
        return int(line.split()[1])
    finally:
        writer.close()


def server_sockets(port: int) -> list[tuple[str, int]]:
    """(state, bytes in the kernel's send queue) of each TCP socket on local `port`, from
    /proc/net/tcp: the monitor's side of its connections, as the kernel sees them."""
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port:
            found.append((fields[3], int(fields[4].split(":")[0], 16)))
    return found


ESTABLISHED = "01"


# ---- origins (item 4) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "host", "status"),
    [
        ("http://evil.example", None, 403),
        ("null", None, 403),
        ("http://127.0.0.1:1", None, 403),  # another port is another origin
        ("https://127.0.0.1:{port}", None, 403),  # and another scheme
        (None, None, 101),  # not a browser: `crawlscope attach`
        ("http://127.0.0.1:{port}", None, 101),  # the monitor's own origin
        ("http://class.example:8000", None, 101),  # allowed by name
        # A page whose own name points here (DNS rebinding) is not the monitor's origin.
        ("http://evil.example:{port}", "evil.example:{port}", 403),
    ],
)
async def test_a_web_page_watches_only_from_an_origin_allowed(
    origin: str | None, host: str | None, status: int
) -> None:
    limits = ViewerLimits(allow_origins=frozenset({origin_of("http://CLASS.example:8000/")}))
    async with watched(limits=limits) as (_crawler, monitor):
        port = port_of(monitor)
        given = None if origin is None else origin.format(port=port)
        assert await status_of(port, given, host and host.format(port=port)) == status


async def test_origin_null_watches_only_when_the_user_names_it() -> None:
    async with watched(limits=ViewerLimits(allow_origins=frozenset({"null"}))) as (_, monitor):
        assert await status_of(port_of(monitor), "null") == 101
        assert await status_of(port_of(monitor), "http://evil.example") == 403


async def test_a_foreign_page_is_refused_read_only_or_with_the_token() -> None:
    async with watched() as (_crawler, monitor), aiohttp.ClientSession() as session:
        for url in (monitor.view_url, monitor.url):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(url, origin="http://evil.example")
            assert refused.value.status == 403
        async with session.ws_connect(monitor.view_url) as ws:  # no Origin: attach
            hello = await asyncio.wait_for(ws.receive_json(), TIMEOUT)
            assert hello["kind"] == "hello"


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        ("http://Class.Example:80/", "http://class.example"),
        ("https://h:8443", "https://h:8443"),
        ("null", "null"),
    ],
)
def test_an_origin_is_compared_in_one_form(text: str, origin: str) -> None:
    assert origin_of(text) == origin


BAD_ORIGINS = ["http://a b", "http://" + "a" * 10_000, "http://a\u202eb.example",
               "http://a\x1bb", "http://-a.example", "http://a..b"]  # fmt: skip


@pytest.mark.parametrize(
    "text",
    ["evil.example", "ftp://h", "http://h/page", "http://h:x", *BAD_ORIGINS],
    ids=lambda text: text[:20],
)
def test_a_bad_origin_is_a_clear_error(text: str) -> None:
    with pytest.raises(ValueError, match="origin") as refused:
        origin_of(text)
    said = str(refused.value)
    assert said.isprintable() and "\u202e" not in said and len(said) < 300, said


@pytest.mark.parametrize("query", ["?token=", "?token", "?token=x"])
async def test_an_empty_or_wrong_token_gets_403_not_steering(query: str) -> None:
    async with watched() as (_crawler, monitor):
        assert await status_of(port_of(monitor), query=query) == 403
        assert await status_of(port_of(monitor), query=f"?token={monitor.token}") == 101


# ---- how many, and for how long (item 2) ----------------------------------------------


async def test_a_client_trickling_a_partial_request_is_closed_at_the_handshake_timeout() -> None:
    # The timer runs from the connection, not from its last byte: a request sent a byte
    # every 0.1 s (some 17 s) never completes, and is closed once 1 s has gone by.
    limits = ViewerLimits(handshake_seconds=1.0)
    async with watched(limits=limits) as (_crawler, monitor):
        reader, writer = await asyncio.open_connection("127.0.0.1", port_of(monitor))
        partial = upgrade(port_of(monitor))[:-2]  # never the blank line that ends it

        async def trickle() -> None:
            for byte in partial:
                writer.write(bytes((byte,)))
                await asyncio.sleep(0.1)

        trickling = asyncio.create_task(trickle())
        closed = asyncio.create_task(reader.read())
        try:
            await asyncio.wait([trickling, closed], return_when=asyncio.FIRST_COMPLETED)
            assert closed.done(), f"open after {len(partial)} bytes trickled in 0.1 s apart"
            assert closed.result() == b""
        finally:
            trickling.cancel()
            closed.cancel()
            writer.close()


async def test_connections_over_the_cap_are_refused_and_idle_ones_closed() -> None:
    limits = ViewerLimits(max_viewers=4, handshake_seconds=1.0)
    async with (
        watched(limits=limits) as (_crawler, monitor),
        aiohttp.ClientSession() as session,
    ):
        port = port_of(monitor)
        viewers = [await session.ws_connect(monitor.view_url) for _ in range(2)]
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(10)]
        # Two idle connections get in and are closed unasked; the other eight are refused.
        answers = [await asyncio.wait_for(reader.read(), TIMEOUT) for reader, _ in idle]
        assert sum(a.startswith(b"HTTP/1.1 503") for a in answers) == 8
        assert answers.count(b"") == 2
        await wait_until(lambda: monitor.connections == 2, "only the viewers are held")
        late = await session.ws_connect(monitor.view_url)  # and a place is free again
        viewers.append(late)
        for ws in viewers:
            message = await asyncio.wait_for(ws.receive(), TIMEOUT)
            assert message.type is aiohttp.WSMsgType.TEXT
            await ws.close()
        for _, writer in idle:
            writer.close()


FILE_LIMIT = 256  # files the crawl's process may open: 1,100 idle viewers is far more
IDLE = 400
CLASS = "http://class.example:8000"  # an origin allowed by name
DEMO = DemoConfig(pages=300, latency=0.1)  # some seconds at 10 workers: viewers come first


def low_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


def _collect(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes | None:
    """What the monitor sends an idle connection before it closes it (None: reset)."""
    try:
        return await asyncio.wait_for(reader.read(), TIMEOUT)
    except ConnectionResetError:
        return None
    finally:
        writer.close()


async def test_idle_connections_never_starve_the_crawl_of_files(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    async with DemoServer(DEMO) as server:
        command = [*CLI, "crawl", server.url, "--monitor", "127.0.0.1:0", "--max-tasks", "10",
                   "-q", "-o", str(records), "--allow-origin", CLASS]  # fmt: skip
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL, preexec_fn=low_file_limit,
        )  # fmt: skip
        lines: queue.Queue[str] = queue.Queue()
        assert process.stderr is not None
        threading.Thread(target=_collect, args=(process.stderr, lines), daemon=True).start()
        try:
            stderr: list[str] = []
            while not any(line.startswith("monitor: ") for line in stderr):
                await wait_until(
                    lambda: not lines.empty() or process.poll() is not None,
                    "the monitor: line",
                    timeout=TIMEOUT,
                )
                assert not lines.empty(), f"the crawl ended first: {''.join(stderr)}"
                stderr.append(lines.get())
            url = stderr[-1].removeprefix("monitor: ").strip().split("?")[0]
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            async with aiohttp.ClientSession() as session:
                allowed = await session.ws_connect(url, origin=CLASS)
                with pytest.raises(aiohttp.WSServerHandshakeError) as foreign:
                    await session.ws_connect(url, origin="http://evil.example")
                assert foreign.value.status == 403
                # Idle connections far over the cap and the file limit: each is refused at
                # once or closed unasked within seconds, while the crawl goes on.
                idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(IDLE)]
                answering = [asyncio.create_task(answer(*pair)) for pair in idle]
                frames = 0
                while frames < 2:  # the viewer that got in still sees the crawl
                    message = await asyncio.wait_for(allowed.receive(), TIMEOUT)
                    assert message.type is aiohttp.WSMsgType.TEXT, message
                    frames += json.loads(message.data)["kind"] == "frame"
                answers = await asyncio.gather(*answering)
                refused = sum(bool(a and a.startswith(b"HTTP/1.1 503")) for a in answers)
                assert refused >= IDLE - FILE_LIMIT
                await allowed.close()
            await asyncio.to_thread(process.wait, TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    while not lines.empty():
        stderr.append(lines.get())
    text = "".join(stderr)
    assert process.returncode == 0, text[-2000:]
    assert "Traceback" not in text
    assert sum("files" in line or "Too many" in line for line in stderr) <= 1, text[-2000:]
    fetched = [json.loads(line) for line in records.read_text().splitlines()]
    assert not [r for r in fetched if "Too many open files" in (r["exception"] or "")]
    got = {path(r["url"]) for r in fetched if r["filtered"] is None}
    assert got == set(expected(DEMO))  # every URL of the site fetched


# ---- what a viewer that does not read may cost (item 3) --------------------------------

STUCK = 50
KERNEL_SLACK = 4 * VIEWER_SNDBUF  # the kernel doubles SO_SNDBUF, and counts its overhead
BYTES_BOUND = 256 * 1024


def stuck_viewer(port: int) -> socket.socket:
    """A WebSocket viewer that asks, and then never reads a byte."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(upgrade(port))
    return sock


async def test_viewers_that_never_read_are_dropped_by_the_bytes_waiting_for_them() -> None:
    # Many workers make big frames: what is queued for a stuck viewer grows fast. Only
    # the bytes can drop one here: the time and total rules are out of reach.
    # (A smaller byte bound than the default's 2 MiB: once the crawl is done its frames
    # are small, and a stuck viewer would take a minute to have 2 MiB waiting.)
    limits = ViewerLimits(
        max_behind_bytes=BYTES_BOUND, max_behind_seconds=1e9, total_behind_bytes=1 << 40
    )
    async with (
        watched(pages=3000, tasks=300, limits=limits) as (_crawler, monitor),
        aiohttp.ClientSession() as session,
        session.ws_connect(monitor.view_url, max_msg_size=0) as reader,
    ):
        port = port_of(monitor)
        frames = 0

        async def read() -> None:
            nonlocal frames
            async for message in reader:
                frames += message.type is aiohttp.WSMsgType.TEXT

        reading = asyncio.create_task(read())
        stuck = [stuck_viewer(port) for _ in range(STUCK)]
        peak = {"process": 0, "kernel": 0}

        def all_dropped() -> bool:
            kernel = sum(tx for state, tx in server_sockets(port) if state == ESTABLISHED)
            peak["kernel"] = max(peak["kernel"], kernel)
            peak["process"] = max(peak["process"], monitor.queued_bytes())
            return monitor.dropped >= STUCK

        try:
            await wait_until(
                all_dropped, "every stuck viewer dropped by its bytes", timeout=TIMEOUT,
                describe=lambda: f"{monitor.dropped} dropped, {peak} bytes at most",
            )  # fmt: skip
            # Each stuck viewer held at most the byte limit here, the kernel's queue
            # included, and the kernel alone no more than the small send buffer.
            assert peak["process"] <= STUCK * (BYTES_BOUND + KERNEL_SLACK)
            assert peak["kernel"] <= STUCK * KERNEL_SLACK
            assert len(monitor.viewers) == 1  # the viewer that reads stays
            seen = frames
            await wait_until(lambda: frames > seen, "the reader goes on getting frames")
        finally:
            reading.cancel()
            for sock in stuck:
                sock.close()


async def test_a_viewer_behind_for_too_long_is_dropped_though_its_bytes_are_few() -> None:
    limits = ViewerLimits(max_behind_bytes=1 << 30, max_behind_seconds=1.0)
    async with watched(pages=3000, tasks=300, limits=limits) as (_crawler, monitor):
        sock = stuck_viewer(port_of(monitor))
        try:
            await wait_until(lambda: monitor.viewers, "the viewer attached")
            await wait_until(lambda: monitor.dropped == 1, "the viewer dropped for its lag")
            assert monitor.queued_bytes() == 0
        finally:
            sock.close()


OUT_OF_FILES = """
import asyncio, resource, socket, sys
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.remote.monitor import Monitor, listen

async def main():
    crawler = Crawler(CrawlConfig(roots=("http://127.0.0.1:9/",)))
    async with Monitor(crawler, crawler, listen("127.0.0.1", 0)) as monitor:
        print(monitor.sock.getsockname()[1], flush=True)
        held = []
        try:  # every file the process may still open, as a crawl that needs them all
            while True:
                held.append(socket.socket())
        except OSError:
            pass
        print("full", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        for sock in held:
            sock.close()
        print("free", flush=True)
        await asyncio.to_thread(sys.stdin.readline)

resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
asyncio.run(main())
"""


async def test_a_process_out_of_files_is_one_line_once_and_viewers_come_back() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", OUT_OF_FILES], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    threading.Thread(target=_collect, args=(process.stderr, lines), daemon=True).start()
    stderr: list[str] = []

    def said() -> bool:
        while not lines.empty():
            stderr.append(lines.get())
        return any("out of files" in line for line in stderr)

    try:
        port = int(await asyncio.to_thread(process.stdout.readline))
        assert await asyncio.to_thread(process.stdout.readline) == "full\n"
        waiting = [await asyncio.open_connection("127.0.0.1", port) for _ in range(5)]
        await wait_until(said, "the monitor says it is out of files", timeout=TIMEOUT)
        process.stdin.write("\n")
        process.stdin.flush()
        assert await asyncio.to_thread(process.stdout.readline) == "free\n"
        # Files free again: a viewer gets in (those that waited are let in or refused).
        async with aiohttp.ClientSession() as session:
            url = f"ws://127.0.0.1:{port}/crawl"
            async with session.ws_connect(url) as ws:
                hello = await asyncio.wait_for(ws.receive_json(), TIMEOUT)
                assert hello["kind"] == "hello"
        for _, writer in waiting:
            writer.close()
        process.stdin.close()
        await asyncio.to_thread(process.wait, TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    said()
    text = "".join(stderr)
    assert process.returncode == 0, text
    assert "Traceback" not in text
    assert len(stderr) == 1, text


async def test_many_viewers_behind_are_bounded_together_not_only_each() -> None:
    # No limit for one viewer: only what all of them have waiting together drops them.
    # (A frame carries the rows a viewer shows, not every worker's: a small total fills.)
    limits = ViewerLimits(
        max_behind_bytes=1 << 40, max_behind_seconds=1e9, total_behind_bytes=1024 * 1024
    )
    async with watched(pages=3000, tasks=300, limits=limits) as (_crawler, monitor):
        stuck = [stuck_viewer(port_of(monitor)) for _ in range(20)]
        peak = 0

        def all_dropped() -> bool:
            nonlocal peak
            peak = max(peak, monitor.queued_bytes())
            return monitor.dropped == len(stuck)

        try:
            await wait_until(all_dropped, "every stuck viewer dropped", timeout=TIMEOUT)
            # The total, and what one frame for each adds before the furthest behind go.
            assert peak <= limits.total_behind_bytes + len(stuck) * (KERNEL_SLACK + 2**20)
        finally:
            for sock in stuck:
                sock.close()


@pytest.mark.parametrize("command", ["crawl", "tui"])
def test_the_limits_and_origins_are_options_with_their_defaults_in_help(command: str) -> None:
    shown = " ".join(run_cli(command, "--help").stdout.split())
    assert "--max-viewers N connections the monitor holds at once (default 256" in shown
    assert "within 5 s is closed" in shown and "more than 2 MiB waiting" in shown
    assert "behind for over 5 s" in shown and "all viewers together: 32 MiB" in shown
    assert "--allow-origin ORIGIN" in shown and "Origin null, gets 403" in shown


def test_a_bad_origin_option_is_refused_before_anything_starts() -> None:
    done = run_cli("crawl", "http://127.0.0.1:9/", "--monitor", "0", "--allow-origin", "evil")
    assert done.returncode == 2
    assert "--allow-origin: not an origin: 'evil'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", [("crawl", "http://127.0.0.1:9/", "--monitor", "0"),
                                     ("serve", "--port", "0")])  # fmt: skip
@pytest.mark.parametrize("bad", BAD_ORIGINS[:3], ids=["space", "long", "bidi"])
def test_an_origin_with_a_space_a_long_host_or_bidi_is_one_line(
    command: tuple[str, ...], bad: str
) -> None:
    done = run_cli(*command, "--allow-origin", bad)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "--allow-origin: not an origin:" in line and "\u202e" not in line
    assert len(line) < 400 and "Traceback" not in done.stderr
