"""No process crawlscope starts carries a token or a password on its command line, which
every user of the machine can read (/proc/PID/cmdline): the real `crawlscope serve`, a tab
opened on it as a browser opens one, and every process under it read from /proc."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from classroom_support import cmdline, descendants
from hostile_peers import chain_plain, record_plain, snapshot_plain
from redis_support import RedisServer, redis_server  # noqa: F401  (a fixture)

from crawlscope.cli.attach import attach_source
from crawlscope.engine.cluster.redis_frontier import key_prefix
from crawlscope.engine.remote.client import RemoteCrawl
from crawlscope.tui.waiting import wait_until
from helpers import CLI

TIMEOUT = 60.0


def _collect(stream: IO[str], into: dict[str, str]) -> None:
    """Each `name: value` line, by name ("serving", "lecturer", "monitor")."""
    for line in stream:
        name, _, value = line.partition(": ")
        into.setdefault(name, value.strip())


@dataclass
class Serve:
    proc: subprocess.Popen[str]
    lines: dict[str, str] = field(default_factory=dict)  # "serving", "lecturer", "monitor"


@contextlib.contextmanager
def serve(*args: str, env: dict[str, str] | None = None) -> Iterator[Serve]:
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, env={**os.environ, **(env or {})},
        start_new_session=True,
    )  # fmt: skip
    served = Serve(proc)
    for stream in (proc.stdout, proc.stderr):
        assert stream is not None
        threading.Thread(target=_collect, args=(stream, served.lines), daemon=True).start()
    try:
        deadline = time.monotonic() + TIMEOUT
        while not {"serving", "lecturer"} <= set(served.lines):
            assert proc.poll() is None and time.monotonic() < deadline, served.lines
            time.sleep(0.05)
        yield served
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=TIMEOUT)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@dataclass
class Tab:
    ws: aiohttp.ClientWebSocketResponse
    screen: bytearray = field(default_factory=bytearray)

    def shows(self, text: bytes) -> bool:
        return text in self.screen


@contextlib.asynccontextmanager
async def tab(page: str) -> AsyncIterator[Tab]:
    """A browser tab on `page`, as the page's script opens it: its WebSocket, and what
    the tab's process draws on it."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(page))
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"{page}ws?width=160&height=40", headers={"Origin": origin}) as ws,
    ):
        opened = Tab(ws)

        async def read() -> None:
            async for message in ws:
                if message.type is aiohttp.WSMsgType.BINARY:
                    opened.screen += message.data

        reading = asyncio.create_task(read())
        try:
            yield opened
        finally:
            reading.cancel()


async def attach_processes(serve: Serve) -> list[int]:
    pids: list[int] = []

    def found() -> bool:
        pids[:] = [pid for pid in descendants(serve.proc.pid) if b" attach " in cmdline(pid)]
        return bool(pids)

    await wait_until(found, "a tab's attach process", timeout=TIMEOUT)
    return pids


def assert_secret_nowhere(serve: Serve, secret: str, *, itself: bool = False) -> list[Path]:
    """Asserts `secret` is on no command line; the secret files the tabs were given,
    each checked to be this user's alone."""
    pids = descendants(serve.proc.pid) + ([serve.proc.pid] if itself else [])
    lines = {pid: cmdline(pid) for pid in pids}
    assert any(b" attach " in line for line in lines.values())
    files = set()
    for pid, line in lines.items():
        assert secret.encode() not in line, (pid, line)
        if b"--secret-file " in line:
            files.add(Path(line.split(b"--secret-file ")[1].split()[0].decode()))
    for file in files:
        assert file.stat().st_mode & 0o077 == 0 and file.parent.stat().st_mode & 0o077 == 0
    return sorted(files)


async def test_the_lecturers_tab_steers_with_a_token_on_no_command_line() -> None:
    with serve("--max-tasks", "2", "--running") as served:
        await wait_until(lambda: "monitor" in served.lines, "the monitor: line", timeout=TIMEOUT)
        monitor = served.lines["monitor"]
        token = parse_qs(urlsplit(monitor).query)["token"][0]
        watcher = RemoteCrawl(monitor.split("?")[0])
        watching = asyncio.create_task(watcher.run())
        try:
            async with tab(served.lines["lecturer"]) as lecturer, tab(served.lines["serving"]):
                await attach_processes(served)
                await wait_until(lambda: lecturer.shows(b"connected"), "the lecturer's screen")
                await wait_until(watcher.ready.is_set, "the watcher's first frame")
                assert_secret_nowhere(served, token)
                # The class's one screen had the token all the same: the lecturer's p
                # pauses the crawl. (The two tabs the screen is shown in, and this watcher.)
                await wait_until(lambda: len(watcher.viewers) == 3, "the screen attached")
                await lecturer.ws.send_str(json.dumps(["stdin", "p"]))
                await wait_until(lambda: watcher.snapshot().paused_all, "p paused the crawl")
                files = assert_secret_nowhere(served, token)
        finally:
            watching.cancel()
    assert len(files) == 1 and not files[0].exists()  # the lecturer's, gone with serve


async def test_after_kill_9_of_serve_its_screen_dies_and_the_next_serve_sweeps_its_folder() -> None:
    with serve("--max-tasks", "1") as killed:
        (screen,) = await attach_processes(killed)
        await wait_until(lambda: "monitor" in killed.lines, "the monitor: line", timeout=TIMEOUT)
        token = parse_qs(urlsplit(killed.lines["monitor"]).query)["token"][0]
        (left,) = assert_secret_nowhere(killed, token)
        os.kill(killed.proc.pid, signal.SIGKILL)
        killed.proc.wait()
        # The screen, in a session of its own, goes with serve (as --procs children do).
        await wait_until(lambda: not cmdline(screen), "the screen gone", timeout=TIMEOUT)
        assert left.parent.exists()  # what the killed serve left behind
        with serve("--max-tasks", "1") as later:
            await attach_processes(later)
            assert not left.parent.exists(), "the next serve left the killed one's folder"


# A screen that outlives a closed terminal and SIGTERM (an attach that went on drawing at
# 100% of a core with parent 1, for ever), started by ScreenProcess in another process.
STUBBORN_SCREEN = """
import asyncio, sys
from crawlscope.tui.classroom.pty_screen import ScreenProcess

STUBBORN = (
    "import signal, time\\n"
    "for sig in (signal.SIGTERM, signal.SIGHUP): signal.signal(sig, signal.SIG_IGN)\\n"
    "time.sleep(600)"
)

async def main():
    screen = ScreenProcess([sys.executable, "-c", STUBBORN], 80, 24, lambda data: None)
    await screen.start()
    print(screen.process.pid, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_a_screen_dies_with_the_process_that_started_it_killed_9() -> None:
    parent = subprocess.Popen([sys.executable, "-c", STUBBORN_SCREEN], stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    assert parent.stdout is not None
    screen = int(parent.stdout.readline())
    try:
        assert cmdline(screen)
        parent.kill()
        parent.wait()
        await wait_until(lambda: not cmdline(screen), "the screen gone", timeout=20.0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(screen, signal.SIGKILL)


@pytest.mark.parametrize("given", ["in the URL", "in the environment"])
async def test_the_tabs_of_a_cluster_get_the_redis_password_on_no_command_line(
    redis_server: RedisServer,  # noqa: F811
    given: str,
) -> None:
    password = "pw-" + secrets.token_hex(8)
    r = redis_server.client()
    prefix = key_prefix("t")
    publication = {
        "config": {"roots": ["http://127.0.0.1:9/"]},
        "snapshot": snapshot_plain(lambda f: f"text-{f}"),
        "recent": [record_plain(lambda f: f"text-{f}")],
        "chains": [chain_plain(lambda f: f"text-{f}")],
        "chain_count": 1,
        "unreachable": None,
    }
    r.set(f"{prefix}proc:h:1", json.dumps(publication))
    r.zadd(f"{prefix}procs", {"h:1": time.time()})
    r.config_set("requirepass", password)
    host = f"127.0.0.1:{redis_server.port}/0"
    if given == "in the URL":
        url, env = f"redis://:{password}@{host}", {}
    else:
        url, env = f"redis://{host}", {"CRAWLSCOPE_REDIS_PASSWORD": password}
    with serve("--redis", url, "--crawl-id", "t", env=env) as served:
        async with tab(served.lines["lecturer"]) as lecturer, tab(served.lines["serving"]) as tab2:
            await attach_processes(served)
            # Each tab read the crawl's publication: it reached Redis with the password.
            for each in (lecturer, tab2):
                await wait_until(lambda t=each: t.shows(b"text-url"), "the publication read")
            assert_secret_nowhere(served, password, itself=bool(env))


def test_attach_takes_the_token_from_the_environment_or_a_file(tmp_path: Path) -> None:
    os.environ["CRAWLSCOPE_TOKEN"] = "from-env"
    try:
        source = attach_source("ws://127.0.0.1:1/crawl", None, False)
        assert source.url.endswith("?token=from-env")  # type: ignore[union-attr]
        secret = tmp_path / "secret"
        secret.write_text("from-file\n")
        source = attach_source("ws://127.0.0.1:1/crawl?viewer=x", None, False, str(secret))
        assert source.url.endswith("?viewer=x&token=from-file")  # type: ignore[union-attr]
        # --read-only: no token at all, whatever is given.
        source = attach_source("ws://127.0.0.1:1/crawl?token=t", None, True)
        assert "token" not in source.url  # type: ignore[union-attr]
    finally:
        del os.environ["CRAWLSCOPE_TOKEN"]


def test_attach_echoes_no_secret_of_a_url_it_refuses() -> None:
    done = subprocess.run(
        [*CLI, "attach", "http://u:pw-123@example.com/crawl?token=tok-456&x=1"],
        capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "pw-123" not in done.stderr and "tok-456" not in done.stderr
    assert "http://u:***@example.com/crawl?token=***&x=1" in done.stderr
