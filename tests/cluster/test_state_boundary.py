"""A `--state` file is input from outside the crawl: its rows are checked as discovered
URLs are, and a second process on the same file is told at once who has it."""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest
from redis_support import crawl, records, wait_until

from crawlscope.engine.cluster.sqlite_state import SCHEMA
from crawlscope.engine.urls import normalize
from helpers import run_cli


class Site:
    """A real HTTP server on 127.0.0.1 that notes every path asked of it."""

    def __init__(self, robots: str = "", root_page: str = "") -> None:
        asked: list[str] = []
        self.asked = asked
        authorized: list[str] = []  # the Authorization headers received
        self.authorized = authorized
        # /held answers once the test sets this: until then its crawl is surely under way.
        gate = self.gate = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                asked.append(self.path)
                if "Authorization" in self.headers:
                    authorized.append(self.headers["Authorization"])
                if self.path == "/held":
                    gate.wait(timeout=120)
                if self.path == "/robots.txt":
                    body, kind = robots.encode(), "text/plain"
                elif self.path == "/":
                    body, kind = f"<html>{root_page}</html>".encode(), "text/html"
                else:
                    body, kind = b"<html><title>page</title></html>", "text/html"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Site:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site() -> Iterator[Site]:
    with Site("User-agent: *\nDisallow: /private/\n") as s:
        yield s


@pytest.fixture
def elsewhere() -> Iterator[Site]:
    with Site() as s:
        yield s


def write_state(path: Path, rows: list[tuple[object, ...]]) -> None:
    db = sqlite3.connect(path)
    db.execute(SCHEMA)
    db.executemany("INSERT INTO urls VALUES (?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()


def states(path: Path) -> dict[str, str]:
    db = sqlite3.connect(path)
    try:
        return dict(db.execute("SELECT url, state FROM urls"))
    finally:
        db.close()


def test_queued_rows_against_the_rules_are_filtered_never_fetched(
    site: Site, elsewhere: Site, tmp_path: Path
) -> None:
    root = site.url
    other_port = f"{elsewhere.url}stolen"
    bad = {
        "javascript:alert(1)": "not an http(s) URL",
        "file:///etc/passwd": "not an http(s) URL",
        other_port: "out of scope",
        f"{root}private/secret": "robots.txt",
        root.replace("http://", "HTTP://") + "a/../b": "not a normalised URL",
    }
    bad[f"http://u:secret@{root[7:]}page"] = "not a normalised URL"  # no password sent
    good = f"{root}page"
    # What a crawl queues is normalize()'s output, which normalize() itself may spell
    # otherwise (a ":" escaped in a relative link): still the crawl's own URL, fetched.
    own = normalize("3SG96%38:J/s", f"{root}a/b")
    assert own is not None and own != normalize(own)
    state = tmp_path / "crawl.db"
    write_state(
        state,
        [(root, 10, 0, None, "done")] + [(url, 10, 1, root, "queued") for url in [*bad, good, own]],
    )
    out = tmp_path / "out.jsonl"
    result = run_cli("crawl", root, "--state", str(state), "-o", str(out), "--max-tries", "1")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = {str(r["url"]): r for r in records(out)}
    for url, reason in bad.items():
        assert url in lines, url
        assert lines[url]["filtered"] and reason in str(lines[url]["filtered"]), lines[url]
    for url in (good, own):
        assert not lines[url].get("filtered") and lines[url]["status"] == 200
    assert elsewhere.asked == []  # the other port's server was never asked anything
    asked = sorted(p for p in site.asked if p != "/robots.txt")
    assert asked == sorted(["/page", unquote(own[len(root) - 1 :])])  # the client's spelling
    assert site.authorized == []  # the file's password was never sent
    books = re.search(r"Accounting: .*", result.stdout)
    assert books is not None
    assert books.group(0) == (
        f"Accounting: {len(bad) + 3} seen = 3 done + 0 failed + {len(bad)} filtered"
        " + 0 queued + 0 held + 0 unfetched (all accounted for)"
    )
    # The file agrees: what it had queued is filtered now, and a third run has nothing to do.
    assert {url: states(state)[url] for url in bad} == dict.fromkeys(bad, "filtered")
    again = run_cli("crawl", root, "--state", str(state), "-o", str(tmp_path / "2.jsonl"))
    assert again.returncode == 0 and records(tmp_path / "2.jsonl") == []


# ---- a file that cannot be a crawl's state, or is in use --------------------------------


def one_line_error(result: object, *words: str) -> str:
    assert getattr(result, "returncode", None) in (1, 2)
    err = str(getattr(result, "stderr", ""))
    assert err.count("\n") == 1 and err.startswith("crawlscope: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


def test_a_row_with_an_unknown_state_is_a_one_line_error(tmp_path: Path) -> None:
    state = tmp_path / "crawl.db"
    write_state(state, [("http://127.0.0.1:9/\x1b]0;owned\x07", 10, 0, None, "bogus")])
    err = one_line_error(run_cli("crawl", "http://127.0.0.1:9/", "--state", str(state)), "bogus")
    assert "\x1b" not in err and "\x07" not in err  # the file's text is shown escaped


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [
        ("max_redirect", "'ten'", ("max_redirect", "'ten'")),
        ("depth", "-1", ("depth", "-1")),
        ("referrer", "x'00ff'", ("referrer",)),
        ("url", "x'4142'", ("not text",)),
    ],
)
def test_a_row_of_the_wrong_type_is_a_one_line_error(
    tmp_path: Path, column: str, value: str, words: tuple[str, ...]
) -> None:
    state = tmp_path / "crawl.db"
    write_state(state, [("http://127.0.0.1:9/", 10, 0, None, "queued")])
    db = sqlite3.connect(state)
    db.execute(f"UPDATE urls SET {column} = {value}")
    db.commit()
    db.close()
    one_line_error(run_cli("crawl", "http://127.0.0.1:9/", "--state", str(state)), *words)


def test_a_database_of_something_else_is_a_one_line_error_and_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "places.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE bookmarks (title TEXT)")
    db.commit()
    db.close()
    before = other.read_bytes()
    one_line_error(run_cli("crawl", "http://127.0.0.1:9/", "--state", str(other)), "bookmarks")
    assert other.read_bytes() == before  # no table of ours added, no WAL mode set


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ("CREATE TABLE urls (url TEXT, seen BLOB)", ("columns",)),
        (
            "CREATE TABLE urls (url INTEGER, max_redirect INTEGER, depth INTEGER,"
            " referrer TEXT, state TEXT)",
            ("columns", "url INTEGER"),
        ),
        (
            "CREATE TABLE urls (url TEXT, max_redirect INTEGER, depth INTEGER,"
            " referrer TEXT, state TEXT)",
            ("primary key",),
        ),
        (
            SCHEMA + "; CREATE TRIGGER t AFTER UPDATE ON urls BEGIN DELETE FROM urls; END",
            ("trigger", "'t'"),
        ),
    ],
)
def test_a_urls_table_not_made_by_a_crawl_is_a_one_line_error(
    tmp_path: Path, schema: str, words: tuple[str, ...]
) -> None:
    other = tmp_path / "crawl.db"
    db = sqlite3.connect(other)
    db.executescript(schema)
    db.commit()
    db.close()
    one_line_error(run_cli("crawl", "http://127.0.0.1:9/", "--state", str(other)), *words)


def test_a_second_process_on_one_state_file_is_told_which_process_has_it(tmp_path: Path) -> None:
    state = tmp_path / "crawl.db"
    links = "".join(f'<a href="/p{i}">p</a>' for i in range(10)) + '<a href="/held">h</a>'
    with Site(root_page=links) as site:
        root = site.url
        first = crawl(root, None, tmp_path / "1.jsonl", "--max-tasks", "2", "--state", str(state))
        try:
            # The first is under way, and stays so until the gate opens.
            wait_until(lambda: "/held" in site.asked, timeout=120)
            second = run_cli(
                "crawl", root, "--state", str(state), "-o", str(tmp_path / "2.jsonl"), timeout=60
            )
            err = one_line_error(second, str(first.pid), "in use")
            assert re.search(rf"\bpid {first.pid}\b", err), err
            assert records(tmp_path / "2.jsonl") == []
            # Another spelling of the same file is the same file.
            (tmp_path / "link.db").symlink_to(state)
            by_link = run_cli("crawl", root, "--state", str(tmp_path / "link.db"), timeout=60)
            one_line_error(by_link, str(first.pid), "in use")
            assert first.poll() is None  # all this while the first crawled on
            site.gate.set()
            report, first_err = first.communicate(timeout=120)
        finally:
            site.gate.set()
            if first.poll() is None:
                first.kill()
                first.wait()
        assert first.returncode == 0, first_err
        assert "Traceback" not in first_err and "locked" not in first_err
        assert "= 12 done + 0 failed + 0 filtered + 0 queued + 0 held " in report
        assert "(all accounted for)" in report
        assert not (tmp_path / "crawl.db.lock").exists()  # the first let go of it, and tidied
        # Once the first has ended the file is free again: a run on it has nothing to do.
        third = run_cli("crawl", root, "--state", str(state), "-o", str(tmp_path / "3.jsonl"))
        assert third.returncode == 0, third.stderr
        assert records(tmp_path / "3.jsonl") == []


def test_a_queued_row_deeper_than_max_depth_waits_for_a_run_that_allows_it(
    site: Site, tmp_path: Path
) -> None:
    root, deep = site.url, f"{site.url}deep"
    state = tmp_path / "crawl.db"
    write_state(state, [(root, 10, 0, None, "done"), (deep, 10, 5, root, "queued")])
    shallow = run_cli("crawl", root, "--state", str(state), "--max-depth", "2")
    assert shallow.returncode == 0, shallow.stderr
    assert "= 1 done + 0 failed + 0 filtered + 0 queued + 0 held + 1 unfetched" in shallow.stdout
    assert site.asked == [] and states(state)[deep] == "queued"
    deeper = run_cli("crawl", root, "--state", str(state), "--max-depth", "5")
    assert deeper.returncode == 0, deeper.stderr
    assert site.asked == ["/robots.txt", "/deep"] and states(state)[deep] == "done"


def test_a_state_path_that_is_no_regular_file_is_a_one_line_error(tmp_path: Path) -> None:
    fifo, folder = tmp_path / "fifo", tmp_path / "folder"
    os.mkfifo(fifo)  # read as a database it would wait for a writer for ever
    folder.mkdir()
    for path in (fifo, folder):
        result = run_cli("crawl", "http://127.0.0.1:9/", "--state", str(path), timeout=60)
        one_line_error(result, "not a regular file")
