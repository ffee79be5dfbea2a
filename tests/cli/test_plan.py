"""One crawl plan (engine/plan.py) for every command that crawls: an option means the
same in `crawl`, `tui` and `serve`, or is refused by the same line in each; and the plan's
open() closes what it opened however the crawl ends. Real processes, real sockets."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import fcntl
import json
import os
import pty
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest
from redis_support import RedisServer, redis_server

import crawlscope.engine
from crawlscope.engine.cluster.lookup import look_up
from crawlscope.engine.cluster.sqlite_state import StateError, check_state_file
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.plan import STAND_IN_ROOT, CrawlPlan
from crawlscope.engine.remote.client import RemoteCrawl
from crawlscope.engine.remote.monitor import listen
from crawlscope.engine.remote.spot import MonitorSpot
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.tui.serve import screen_command
from crawlscope.tui.waiting import wait_until
from helpers import CLI, demo_site_process, run_cli

__all__ = ["redis_server"]  # a fixture, used by name

TIMEOUT = 60.0
SMALL = DemoConfig(pages=30, links_per_page=4)


# ---- a command in a process of its own, as a user runs it -----------------------------


@dataclass
class Running:
    process: subprocess.Popen[str]
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)

    def said(self, prefix: str) -> str | None:
        """The rest of the first line on stdout or stderr that starts with `prefix`."""
        for line in [*self.out, *self.err]:
            if line.startswith(prefix):
                return line.removeprefix(prefix).strip()
        return None

    async def line(self, prefix: str) -> str:
        await wait_until(
            lambda: self.said(prefix) is not None or self.process.poll() is not None,
            f"a {prefix!r} line",
            timeout=TIMEOUT,
        )
        await asyncio.sleep(0)
        said = self.said(prefix)
        assert said is not None, f"exited {self.process.poll()}: {''.join(self.err)}"
        return said


def _collect(stream: IO[str], into: list[str]) -> None:
    for line in stream:
        into.append(line)


def _collect_terminal(master: int, into: list[str]) -> None:
    """What the TUI writes to its terminal, read as it comes (or it would block), cut
    into lines; until the terminal closes."""
    text = ""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: every process on the terminal has gone
            chunk = b""
        if not chunk:
            into.append(text)
            return
        text += chunk.decode("utf-8", "replace")
        *lines, text = text.split("\n")
        into.extend(line + "\n" for line in lines)


@contextlib.asynccontextmanager
async def running(*args: str, terminal: bool = False, ends: bool = False) -> AsyncIterator[Running]:
    """`crawlscope ARGS`, its lines collected; at the end of the block, Ctrl-C (SIGINT),
    or q in a `terminal` (a pty, as the TUI needs), unless it `ends` by itself, and the
    process waited for: what it writes on the way out is written when the block is left."""
    master = slave = -1
    if terminal:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [*CLI, *args], text=True,
        stdin=slave if terminal else subprocess.DEVNULL,
        stdout=slave if terminal else subprocess.PIPE,
        stderr=slave if terminal else subprocess.PIPE,
        env={**os.environ, "TERM": "xterm-256color"}, start_new_session=terminal,
    )  # fmt: skip
    run = Running(process)
    if terminal:
        os.close(slave)
        readers = [threading.Thread(target=_collect_terminal, args=(master, run.err))]
    else:
        readers = [
            threading.Thread(target=_collect, args=(stream, into))
            for stream, into in ((process.stdout, run.out), (process.stderr, run.err))
        ]
    for reader in readers:
        reader.daemon = True
        reader.start()
    try:
        yield run
    finally:
        if process.poll() is None and not ends:
            if terminal:
                os.write(master, b"q")
            else:
                process.send_signal(signal.SIGINT)
        try:
            await asyncio.to_thread(process.wait, TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for reader in readers:
            reader.join(TIMEOUT)
        if terminal:
            os.close(master)


async def watch_to_the_end(url: str, resume: bool = False) -> RemoteCrawl:
    """A viewer of the monitor at `url`, once it has seen the crawl finish; with `resume`
    (and the token in `url`) it resumes a crawl that started paused."""
    viewer = RemoteCrawl(url)
    task = asyncio.create_task(viewer.run())
    try:
        await wait_until(viewer.ready.is_set, "the first frame", timeout=TIMEOUT)
        if resume:
            await wait_until(
                lambda: viewer.snapshot().phase is Phase.PAUSED, "paused", timeout=TIMEOUT
            )
            viewer.send("resume_all")
        await wait_until(
            lambda: viewer.snapshot().phase is Phase.FINISHED, "the crawl's end", timeout=TIMEOUT
        )
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return viewer


def replayable(path: Path) -> ReplayedCrawl:
    """The recording at `path`, loaded (every line checked) and played to its end."""
    replay = ReplayedCrawl.load(path)
    replay.seek(replay.duration)
    assert json.loads(path.read_text().splitlines()[-1])["kind"] == "end"
    return replay


# ---- each option in each command that takes it ----------------------------------------


@pytest.mark.parametrize("command", ["crawl", "tui", "serve"])
@pytest.mark.slow
async def test_record_state_and_monitor_mean_the_same_in_every_command(
    command: str, tmp_path: Path, unused_tcp_port: int
) -> None:
    """The crawl served to a viewer on the port asked for (paused until the viewer
    resumes it, so that a headless crawl cannot end unseen), recorded, and kept in a state
    file that the next run resumes from: the TUI in a terminal, the others headless."""
    state, recording = tmp_path / "crawl.db", tmp_path / "first.jsonl"
    monitor = ["--monitor", f"127.0.0.1:{unused_tcp_port}", "--paused"]
    options = [*monitor, "--state", str(state)]
    if command == "serve":
        options += ["--port", "0"]
    async with DemoServer(SMALL) as site:
        how = {"terminal": command == "tui", "ends": command == "crawl"}
        first_run = running(command, site.url, *options, "--record", str(recording),
                            "--max-pages", "5", **how)  # fmt: skip
        async with first_run as first:
            url = await first.line("monitor: ")
            assert url.startswith(f"ws://127.0.0.1:{unused_tcp_port}/crawl?token=")
            viewer = await watch_to_the_end(url, resume=True)
        assert first.process.returncode == 0, "".join(first.err)
        replay = replayable(recording)
        assert replay.phase is Phase.FINISHED
        books = viewer.snapshot().accounting
        assert (replay.accounting().seen, replay.accounting().done) == (books.seen, books.done)
        after_first = dict(site.requests)
        async with running(command, site.url, *options, **how) as again:
            viewer = await watch_to_the_end(await again.line("monitor: "), resume=True)
        assert again.process.returncode == 0, "".join(again.err)
    # Nothing the first run fetched was fetched again; the second went on with the rest.
    fetched_again = {p for p, n in site.requests.items() if n > after_first.get(p, 0)}
    assert fetched_again & set(after_first) <= {"/robots.txt"}, fetched_again
    assert len(fetched_again) > 5
    # The state file's books count the first run's pages too.
    fetched = {path for path in site.requests if path != "/robots.txt"}
    books = viewer.snapshot().accounting
    assert books.done + books.failed == len(fetched)


@pytest.mark.slow
async def test_serve_says_why_its_crawl_stopped_when_its_recording_cannot_be_written(
    tmp_path: Path,
) -> None:
    async with (
        DemoServer(SMALL) as site,
        running("serve", site.url, "--port", "0", "--record", "/dev/full") as serve,
    ):
        viewer = RemoteCrawl((await serve.line("monitor: ")).split("?")[0])
        task = asyncio.create_task(viewer.run())
        await wait_until(viewer.ready.is_set, "the first frame", timeout=TIMEOUT)
        # Stopped by the fault, or (a crawl quicker than a flush) ended before it.
        await wait_until(
            lambda: viewer.snapshot().phase in (Phase.STOPPED, Phase.FINISHED),
            "the crawl's end",
            timeout=TIMEOUT,
        )
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert serve.process.returncode == 1
    assert any("/dev/full" in line for line in serve.err), serve.err


@pytest.mark.slow
async def test_a_headless_crawl_starts_paused_and_a_viewer_resumes_it(tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    async with (
        DemoServer(SMALL) as site,
        running(
            "crawl", site.url, "--paused", "--monitor", "127.0.0.1:0", "-o", str(out), "-q"
        ) as crawl,  # fmt: skip
    ):
        viewer = RemoteCrawl(await crawl.line("monitor: "))  # the URL that steers
        task = asyncio.create_task(viewer.run())
        await wait_until(viewer.ready.is_set, "the first frame", timeout=TIMEOUT)
        await wait_until(lambda: viewer.snapshot().phase is Phase.PAUSED, "paused", timeout=TIMEOUT)
        assert site.requests == {}  # paused before its first fetch
        viewer.send("resume_all")
        await asyncio.to_thread(crawl.process.wait, TIMEOUT)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert crawl.process.returncode == 0, "".join(crawl.err)
    assert len(out.read_text().splitlines()) >= SMALL.pages


@pytest.mark.slow
def test_plain_crawlscope_without_a_terminal_takes_the_plans_options(tmp_path: Path) -> None:
    recording = tmp_path / "demo.jsonl"
    done = run_cli("--pages", "20", "--record", str(recording))
    assert done.returncode == 0, done.stderr
    assert replayable(recording).phase is Phase.FINISHED


@pytest.mark.slow
def test_the_tui_joins_a_cluster_crawl(redis_server: RedisServer, tmp_path: Path) -> None:
    shot = tmp_path / "shot.svg"
    with demo_site_process("--pages", "30") as url:
        done = run_cli(
            "tui", url, "--redis", redis_server.url, "--crawl-id", "t",
            "--screenshot", str(shot), "--screenshot-after", "2",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = asyncio.run(look_up(redis_server.url, "t"))
    assert found.exists and found.seen > 1


@pytest.mark.slow
async def test_serve_joins_a_cluster_crawl_and_serves_the_whole_of_it(
    redis_server: RedisServer,
) -> None:
    # A class's crawl starts paused (the lecturer's p): --running, for a crawl to watch end
    joined = ("--running", "--redis", redis_server.url, "--crawl-id", "t")
    async with (
        DemoServer(SMALL) as site,
        running("serve", site.url, "--port", "0", *joined) as serve,  # fmt: skip
    ):
        assert (await serve.line("serving: ")).startswith("http://127.0.0.1:")

        async def finished() -> bool:
            found = await look_up(redis_server.url, "t")
            return found.finished

        async def until_finished() -> None:
            while not await finished():
                await asyncio.sleep(0.1)

        await asyncio.wait_for(until_finished(), TIMEOUT)
        assert site.requests["/"] == 1
    assert serve.process.returncode == 0, "".join(serve.err)


# ---- the same refusal, in the same words, in every command that cannot take it --------

ROOT = "http://127.0.0.1:9/"
REDIS = "redis://127.0.0.1:9/0"


@pytest.mark.parametrize(
    ("commands", "options", "line"),
    [
        ([["crawl", ROOT], ["tui", ROOT], ["serve", ROOT]], ["--redis", REDIS],
         "--redis and --crawl-id go together"),
        ([["crawl", ROOT], ["tui"], ["serve"]], ["--fresh"],
         "--fresh goes with --redis: it forgets a crawl kept in Redis"),
        ([["crawl", ROOT], ["tui", ROOT], ["serve", ROOT]],
         ["--redis", REDIS, "--crawl-id", "x", "--state", "s.db"],
         "--state keeps a crawl of one process; with --redis, Redis keeps it"),
        ([["tui"], ["serve"]], ["-o", "-"],
         "-o - would write over what this command shows on stdout: give a file name"),
        ([["crawl", ROOT, "--engine", "callbacks"], ["tui", "--engine", "generators"]],
         ["--state", "s.db"],
         "--state needs the asyncio engine (the lecture engines cannot take it)"),
        ([["crawl", ROOT, "--engine", "generators"], ["tui", "--engine", "callbacks"]],
         ["--monitor", "0"],
         "--monitor needs the asyncio engine; "
         "for the lecture's stages: crawlscope lecture --monitor PORT"),
        ([["crawl", ROOT], ["tui"], ["serve"]], ["--monitor", "127.0.0.1:x"],
         "--monitor: not a port number: 'x' (use [HOST:]PORT)"),
        ([["crawl", ROOT], ["tui", ROOT, "--screenshot", "x.svg"], ["serve", ROOT, "--port", "0"]],
         ["--redis", REDIS, "--crawl-id", "x"],
         f"cannot reach Redis at {REDIS}: ConnectionError: Error 111 connecting to "
         "127.0.0.1:9. Connect call failed ('127.0.0.1', 9)."),
        ([["crawl", ROOT], ["tui"], ["serve"]], ["--lease", "5"],
         "--lease goes with --redis: without it, it would tune nothing"),
        ([["crawl", ROOT], ["tui"]], ["--max-viewers", "3"],
         "--max-viewers goes with --monitor: without it, it would tune nothing"),
        ([["tui", ROOT], ["serve", ROOT]], ["--pages", "5"],
         "the demo site's options (--pages, --latency, ...) go with no ROOT: the demo "
         "site is served only when no ROOT is given"),
        ([["crawl", ROOT], ["tui"], ["serve"]], ["--report", "/nonexistent/r.txt"],
         "cannot write the report: [Errno 2] No such file or directory: '/nonexistent/r.txt'"),
    ],
)  # fmt: skip
@pytest.mark.slow
def test_an_option_a_command_cannot_take_is_refused_in_the_same_line(
    commands: list[list[str]], options: list[str], line: str, tmp_path: Path
) -> None:
    for command in commands:
        done = subprocess.run(
            [*CLI, *command, *options], capture_output=True, text=True, timeout=TIMEOUT,
            stdin=subprocess.DEVNULL, cwd=tmp_path,
        )  # fmt: skip
        assert (done.returncode, done.stderr) == (2, f"crawlscope: {line}\n"), command
        assert not (tmp_path / "s.db").exists()


def test_serve_starts_the_real_command_line_for_its_screen() -> None:
    words = screen_command("attach", "ws://127.0.0.1:9/crawl")
    assert words[:4] == [sys.executable, "-m", "crawlscope", "attach"]
    assert [sys.executable, "-m", "crawlscope"] == CLI
    done = subprocess.run([*words[:3], "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("crawlscope ")


# ---- open() closes what it opened, however the crawl ends ------------------------------


def _refused(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize("ending", ["raises", "cancelled"])
async def test_open_closes_the_site_recorder_monitor_and_state_however_it_ends(
    ending: str, tmp_path: Path
) -> None:
    spot = MonitorSpot(listen("127.0.0.1", 0), "token")
    monitor_port = spot.sock.getsockname()[1]
    state, recording, out = tmp_path / "s.db", tmp_path / "r.jsonl", tmp_path / "o.jsonl"
    plan = CrawlPlan(
        CrawlConfig(roots=(STAND_IN_ROOT,), max_tasks=3), crawl_demo=True,
        demo=DemoConfig(pages=500, latency=0.05), state=str(state), record=str(recording),
        outputs=(str(out),), monitor=spot,
    )  # fmt: skip
    plan.check()
    opened: dict[str, object] = {}

    async def crawl_until_told() -> None:
        async with plan.open() as crawl:
            opened["crawl"] = crawl
            if ending == "cancelled":
                await crawl.run()  # as a command awaits it, until Ctrl-C cancels that
            crawl.start()  # as serve runs it, beside its pages
            await wait_until(
                lambda: len(crawl.crawler.ledger.done) >= 5, "some pages", timeout=TIMEOUT
            )
            raise RuntimeError("boom")

    task = asyncio.create_task(crawl_until_told())
    if ending == "raises":
        with pytest.raises(RuntimeError, match="boom"):
            await task
    else:
        await wait_until(lambda: "crawl" in opened, "the plan opened", timeout=TIMEOUT)
        await wait_until(
            lambda: len(opened["crawl"].crawler.ledger.done) >= 5,  # type: ignore[attr-defined]
            "some pages",
            timeout=TIMEOUT,
        )
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    crawl = opened["crawl"]
    crawler = crawl.crawler  # type: ignore[attr-defined]
    assert crawler.phase is Phase.STOPPED
    demo_port = int(crawl.demo_url.rsplit(":", 1)[1].strip("/"))  # type: ignore[attr-defined]
    assert _refused(demo_port), "the demo site still answers"
    assert spot.sock.fileno() == -1 and _refused(monitor_port), "the monitor still listens"
    assert replayable(recording).phase is Phase.STOPPED  # the recorder wrote its end line
    assert out.read_text().endswith("\n")
    check_state_file(state)  # raises StateError if the lock were still held
    with pytest.raises(StateError):  # ...as it does while a plan has it open
        async with dataclasses.replace(plan, monitor=None, record=None, outputs=()).open():
            check_state_file(state)


def test_the_plan_is_the_engines_own_it_reads_no_options_and_imports_no_ui() -> None:
    script = (
        "import sys, crawlscope.engine.plan\n"
        "print(' '.join(m for m in sys.modules if m.startswith(('crawlscope.cli', "
        "'crawlscope.tui', 'textual', 'rich'))))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, ""), done.stderr
    # aiohttp.web imports argparse for a command line of its own; the engine never does.
    engine = Path(crawlscope.engine.__file__).parent
    for module in engine.rglob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert "argparse" not in names, module
