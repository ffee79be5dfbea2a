"""What comes out of Redis is untrusted, and a Redis that cannot be used never hangs a
crawl: real `crawlscope crawl` processes against a real redis-server and a real site."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis_support import (
    RedisServer,
    balanced_books,
    crawl,
    fetched,
    finish,
    free_port,
    persistent_redis,
    records,
    redis_server,
    redis_server_or_skip,
    wait_until,
)

from crawlscope.engine.cluster.local import LocalCluster
from crawlscope.engine.cluster.lookup import look_up
from crawlscope.engine.cluster.redis_frontier import _fields
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.urls import origin_of
from helpers import run_cli

__all__ = ["persistent_redis", "redis_server"]  # fixtures, used by name

# Long enough a crawl to lose Redis in the middle of it, short enough to finish soon.
PAGES, LATENCY = "80", "0.03"
DEADLINE = 60  # seconds a process is given to end, where today's code never ends


# The options of this module's demo site (conftest.py's `site` fixture).
DEMO_SITE = ("--pages", PAGES, "--latency", LATENCY)


@pytest.fixture(scope="module")
def reference(site: str, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The URL set of a one-process crawl in memory."""
    out = tmp_path_factory.mktemp("reference") / "one.jsonl"
    finish(crawl(site, None, out, "--max-tasks", "10"))
    return {str(r["url"]) for r in records(out)}


@pytest.fixture
def secret_redis(tmp_path: Path) -> Iterator[RedisServer]:
    yield from redis_server_or_skip(tmp_path, password="the-right-one")


def ended(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    """Its status and output once it ends; a process still running at the deadline is
    killed and the test fails (today's code waits for ever)."""
    try:
        out, err = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"still running after {DEADLINE} s; stderr: {err[-2000:]}")
    assert "Traceback" not in err, err
    return proc.returncode, out, err


def member(host: str, url: object, max_redirect: object = 10) -> str:
    return f"{host} {json.dumps([url, max_redirect, 0, None], separators=(',', ':'))}"


# ---- a Redis that cannot be used: one line, at once ---------------------------------------


def test_an_unreachable_redis_at_start_is_one_line(site: str, tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    status, out, err = ended(crawl(site, url, tmp_path / "o.jsonl"))
    assert status in (1, 2) and out == ""
    assert err.splitlines() == [err.strip()], err  # one line
    assert err.startswith(f"crawlscope: cannot reach Redis at {url}: ConnectionError")


@pytest.mark.parametrize(
    ("password", "db", "says"),
    [
        ("a-wrong-one", 0, "refused the password"),
        (None, 0, "asks for a password, and none was given"),
        ("the-right-one", 99, "DB index is out of range"),
    ],
)
def test_a_redis_that_refuses_is_one_line(
    site: str, secret_redis: RedisServer, tmp_path: Path, password: str | None, db: int, says: str
) -> None:
    auth = f":{password}@" if password else ""
    url = f"redis://{auth}127.0.0.1:{secret_redis.port}/{db}"
    status, out, err = ended(crawl(site, url, tmp_path / "o.jsonl"))
    assert status in (1, 2) and out == ""
    assert err.splitlines() == [err.strip()], err
    assert says in err
    assert "the-right-one" not in err and "a-wrong-one" not in err  # never shown
    assert not (tmp_path / "o.jsonl").exists() or records(tmp_path / "o.jsonl") == []


def test_the_password_can_come_from_the_environment(
    site: str,
    secret_redis: RedisServer,
    reference: set[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Off the command line, which every user of the machine can read.
    monkeypatch.setenv("CRAWLSCOPE_REDIS_PASSWORD", "the-right-one")
    out = tmp_path / "o.jsonl"
    status, _out, err = ended(crawl(site, f"redis://127.0.0.1:{secret_redis.port}/0", out))
    assert status == 0, err
    assert {str(r["url"]) for r in records(out)} == reference
    assert "the-right-one" not in err


def test_a_key_of_the_wrong_type_is_one_line(
    site: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    client.set("crawlscope:t:seen", "not a set")
    client.close()
    status, _out, err = ended(crawl(site, redis_server.url, tmp_path / "o.jsonl"))
    assert status in (1, 2)
    assert err.splitlines() == [err.strip()], err
    assert "WRONGTYPE" in err and "'crawlscope:t:seen' holds a string, not a set" in err


def test_a_key_made_the_wrong_type_mid_crawl_stops_it_at_once(
    site: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    out = tmp_path / "o.jsonl"
    proc = crawl(site, redis_server.url, out, "--max-tasks", "2")
    wait_until(lambda: len(fetched(out)) >= 10)
    client = redis_server.client()
    client.delete("crawlscope:t:next")
    client.set("crawlscope:t:next", "not a hash")  # every take writes it
    client.close()
    status, _report, err = ended(proc)
    assert status == 1
    last = err.strip().splitlines()[-1]
    assert "WRONGTYPE" in last and "the crawl stopped" in last and "nothing is lost" in last


def test_patience_is_stated_in_help() -> None:
    result = run_cli("crawl", "--help")
    text = " ".join(result.stdout.split())
    said = text.split("--redis-patience S ")[1].split(" --fresh")[0]
    assert "(default 30.0)" in said


def test_a_redis_gone_for_longer_than_the_patience_stops_the_crawl_losing_nothing(
    site: str, reference: set[str], persistent_redis: RedisServer, tmp_path: Path
) -> None:
    first = tmp_path / "first.jsonl"
    proc = crawl(site, persistent_redis.url, first, "--max-tasks", "2", "--redis-patience", "2")
    wait_until(lambda: len(fetched(first)) >= 10)
    persistent_redis.stop()  # and it does not come back while this process runs
    status, _out, err = ended(proc)
    assert status == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"crawlscope: cannot reach Redis at {persistent_redis.url}")
    assert "waited 2 s (--redis-patience 2)" in last and "the crawl stopped" in last
    assert "nothing is lost" in last and "went on" not in err
    # Nothing lost indeed: Redis back, the same command again finishes the crawl.
    persistent_redis.start()
    again = tmp_path / "again.jsonl"
    finish(crawl(site, persistent_redis.url, again, "--max-tasks", "10", "--lease", "1"))
    assert {str(r["url"]) for out in (first, again) for r in records(out)} == reference
    assert balanced_books(persistent_redis)


def test_a_crawl_stopped_while_redis_is_away_says_so(
    site: str, persistent_redis: RedisServer, tmp_path: Path
) -> None:
    out = tmp_path / "o.jsonl"
    proc = crawl(site, persistent_redis.url, out, "--max-tasks", "2")
    wait_until(lambda: len(fetched(out)) >= 10)
    persistent_redis.stop()
    proc.send_signal(signal.SIGINT)
    status, _report, err = ended(proc)
    assert status == 130
    assert "Redis was unreachable when the crawl stopped" in err and "nothing is lost" in err
    assert "came back" not in err and "went on" not in err


# ---- what is in the crawl's keys is checked ------------------------------------------------


class Listener:
    """A real socket on another port, counting whoever connects to it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def test_urls_from_redis_pass_the_checks_a_found_link_passes(
    site: str, reference: set[str], redis_server: RedisServer, tmp_path: Path
) -> None:
    other = Listener()
    origin = origin_of(site)
    elsewhere = f"http://127.0.0.1:{other.port}"
    planted = {
        "javascript:alert(1)": "from Redis: not an http(s) URL",
        f"{site}a/../page/1": "from Redis: not a normalised URL",
        f"{elsewhere}/under-the-site's-host": "queued under another host",
        f"{elsewhere}/": "out of scope",
        f"{site}private/planted": "robots.txt",
    }
    client = redis_server.client()
    client.rpush(
        f"crawlscope:t:q:{origin}",
        *(member(origin, url) for url in planted if not url.startswith(f"{elsewhere}/")),
        member(origin, f"{elsewhere}/under-the-site's-host"),
    )
    client.rpush(f"crawlscope:t:q:{elsewhere}", member(elsewhere, f"{elsewhere}/"))
    client.zadd("crawlscope:t:ready", {origin: 0, elsewhere: 0})
    client.close()
    out = tmp_path / "o.jsonl"
    try:
        status, _report, err = ended(crawl(site, redis_server.url, out, "--max-tasks", "5"))
    finally:
        other.close()
    assert status == 0, err
    lines = records(out)
    reasons = {str(r["url"]): str(r.get("filtered")) for r in lines if str(r["url"]) in planted}
    assert set(reasons) == set(planted)
    for url, why in planted.items():
        assert why in reasons[url], (url, reasons[url])
    assert not set(planted) & set(fetched(out))  # none fetched, none failed
    assert other.connections == 0
    assert {str(r["url"]) for r in lines} == reference | set(planted)
    assert balanced_books(redis_server)
    assert "4 URL(s) taken from Redis kept from the workers" in err  # robots.txt: the worker's


def test_bad_entries_are_set_aside_and_the_crawl_goes_on(
    site: str, reference: set[str], redis_server: RedisServer, tmp_path: Path
) -> None:
    origin = origin_of(site)
    bad = [
        "not a member at all",
        f"{origin} {{not json",
        f"{origin} [1,2]",
        member(origin, f"{site}page/1", max_redirect="ten"),
    ]
    client = redis_server.client()
    client.rpush(f"crawlscope:t:q:{origin}", *bad)
    client.hset("crawlscope:t:q:http://127.0.0.1:1", "a", "hash, not a list")
    client.zadd("crawlscope:t:ready", {origin: 0, "http://127.0.0.1:1": 0})
    client.zadd("crawlscope:t:inflight", {"a garbage lease": 0, "another, for ever": 2**52})
    client.close()
    raw = redis.Redis(port=redis_server.port)  # bytes that are not UTF-8, as they are
    raw.rpush(f"crawlscope:t:q:{origin}", member(origin, "http://x/").encode() + b"\xff")
    raw.rpush(f"crawlscope:t:q:{origin}", f'{origin} ["{site}\xff",1,0,null]'.encode("latin-1"))
    raw.close()
    out = tmp_path / "o.jsonl"
    status, _report, err = ended(crawl(site, redis_server.url, out, "--max-tasks", "5"))
    assert status == 0, err
    assert {str(r["url"]) for r in records(out)} == reference
    assert balanced_books(redis_server)
    client = redis.Redis(port=redis_server.port)
    aside = [e.decode(errors="replace") for e in client.lrange("crawlscope:t:bad", 0, -1)]
    (renamed,) = client.scan_iter("crawlscope:t:bad:*")
    kept = client.hgetall(renamed)
    client.close()
    assert len(aside) == 8
    for entry in [
        *bad,
        "a garbage lease",
        "another, for ever",
        "crawlscope:t:q:http://127.0.0.1:1",
    ]:
        assert any(line.endswith(entry) for line in aside), entry
    assert any(line.endswith('http://x/",10,0,null]\ufffd') for line in aside)
    assert kept == {b"a": b"hash, not a list"}  # renamed, not deleted
    assert "8 entries in Redis that crawlscope did not write set aside" in err
    assert "1 URL(s) taken from Redis kept from the workers" in err  # the one not UTF-8


# ---- a crawl id that is not there ---------------------------------------------------------


def test_attach_to_a_crawl_that_is_not_there_names_those_that_are(
    redis_server: RedisServer,
) -> None:
    client = redis_server.client()
    client.hset("crawlscope:alpha:n", "unfinished", 0)
    client.sadd("crawlscope:beta:seen", "http://127.0.0.1:9/")
    client.close()
    result = run_cli("attach", redis_server.url, "--crawl-id", "typo", timeout=DEADLINE)
    assert result.returncode != 0
    assert result.stderr.splitlines() == [
        f"crawlscope: no crawl named typo in {redis_server.url}; crawls there: alpha, beta"
    ]
    # One that is there passes the look (and then wants a terminal, which a test has not).
    there = run_cli("attach", redis_server.url, "--crawl-id", "beta", timeout=DEADLINE)
    assert there.stderr.strip() == "crawlscope: attach needs a terminal"


# ---- numbers in Redis: each read within a range -------------------------------------------


async def test_figures_in_redis_past_any_real_crawl_count_nothing(
    redis_server: RedisServer,
) -> None:
    huge = "1" + "0" * 400
    client = redis_server.client()
    client.hset(
        "crawlscope:t:n",
        mapping={"queued": huge, "done": "7", "failed": str(2**64), "filtered": "-5",
                 "unfetched": "x", "unfinished": huge, "ended": huge},
    )  # fmt: skip
    client.close()
    cluster = LocalCluster(
        CrawlConfig(roots=("http://127.0.0.1:9/",)), 1, redis_url=redis_server.url, crawl_id="t"
    )
    books = await cluster.read_accounting()
    assert (books.queued, books.done, books.failed, books.filtered, books.unfetched) == (
        0, 7, 0, 0, 0,
    )  # fmt: skip
    found = await look_up(redis_server.url, "t", ["http://127.0.0.1:9/"])
    assert (found.unfinished, found.ended_ms) == (0, 0)
    # A queue entry whose depth no crawl reaches is set aside, not crawled with it (its
    # record would be refused by the --procs parent that reads it: a lost URL).
    for depth in (10**400, -1):
        entry = f"http://h {json.dumps(['http://h/', 10, depth, None])}"
        with pytest.raises(ValueError):
            _fields(entry)
