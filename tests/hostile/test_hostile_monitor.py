"""`crawlscope attach` on a hostile monitor, in a real terminal (a pty): whatever the
monitor sends, every string is drawn escaped, and a frame with a wrong type is dropped
and told on the watch line, the viewer staying up."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

from hostile_peers import RAW, HostileMonitor, escaped, frame, hello, terminal

from crawlscope.engine.remote.client import Link, RemoteCrawl
from crawlscope.tui.waiting import wait_until

# Fields drawn on a 200x50 live screen, each escaped where it was read.
DRAWN = ("url", "suspended_at", "crawl_delay", "rec_url", "chain_a", "chain_b", "viewer", "verdict")


async def test_a_hostile_monitors_text_reaches_the_terminal_escaped() -> None:
    async with HostileMonitor() as monitor, terminal("attach", monitor.url) as term:
        await term.shows(*(escaped(field) for field in DRAWN), what="every field, escaped")
        out = term.bytes()
        for raw in RAW:
            assert raw not in out, raw
        assert b"Traceback" not in out


def benign(field: str) -> str:
    return f"text-{field}"


def good() -> dict[str, Any]:
    return frame(benign)


def broken(path: tuple[str | int, ...], value: object) -> str:
    """A good frame with the field at `path` set to `value` (DELETE: taken out)."""
    message = copy.deepcopy(good())
    *parents, last = path
    where: Any = message
    for step in parents:
        where = where[step]
    if value is DELETE:
        del where[last]
    else:
        where[last] = value
    return json.dumps(message)


DELETE = object()
W, R, C = ("snapshot", "workers", 1), ("recent", 0), ("chains", 0)
# (where in the frame, what is put there, what the watch line says of it)
WRONG: list[tuple[tuple[str | int, ...], object, str]] = [
    (("snapshot", "t"), "x", "snapshot.t is not a number"),
    (("snapshot", "elapsed"), float("nan"), "snapshot.elapsed is not a finite number"),
    (("snapshot", "phase"), 7, "snapshot.phase is not a known Phase"),
    (("snapshot", "workers"), "x", "snapshot.workers is not a list"),
    ((*W[:2], 0), 5, "snapshot.workers[0] is not an object"),
    ((*W, "id"), "x", "snapshot.workers[1].id is not a whole number"),
    ((*W, "state"), "asleep", "snapshot.workers[1].state is not a known WorkerState"),
    ((*W, "url"), 5, "snapshot.workers[1].url is not a string"),
    ((*W, "since"), "x", "snapshot.workers[1].since is not a number"),
    ((*W, "pages"), 1.5, "snapshot.workers[1].pages is not a whole number"),
    ((*W, "paused"), "yes", "snapshot.workers[1].paused is not true or false"),
    ((*W, "retiring"), 1, "snapshot.workers[1].retiring is not true or false"),
    ((*W, "alive"), None, "snapshot.workers[1].alive is not true or false"),
    ((*W, "suspended_at"), [], "snapshot.workers[1].suspended_at is not a string"),
    ((*W, "since"), DELETE, "snapshot.workers[1].since is missing"),
    ((*W, "since"), -1.7e308, "snapshot.workers[1].since is out of range"),
    ((*W, "pages"), 10**400, "snapshot.workers[1].pages is out of range"),
    (("snapshot", "live_workers"), "3", "snapshot.live_workers is not a whole number"),
    (("snapshot", "accounting"), [1], "snapshot.accounting is not an object"),
    (("snapshot", "accounting", "seen"), "1", "snapshot.accounting.seen is not a whole"),
    (("snapshot", "accounting", "done"), None, "snapshot.accounting.done is not a whole"),
    (("snapshot", "accounting", "done"), 10**400, "snapshot.accounting.done is out of range"),
    (("snapshot", "elapsed"), 1e300, "snapshot.elapsed is out of range"),
    (("snapshot", "unfinished"), True, "snapshot.unfinished is not a whole number"),
    (("snapshot", "redirect_version"), {}, "snapshot.redirect_version is not a whole"),
    (("snapshot", "paused_all"), "no", "snapshot.paused_all is not true or false"),
    (("snapshot", "slowmo"), float("inf"), "snapshot.slowmo is not a finite number"),
    (("snapshot", "crawl_delay"), 5, "snapshot.crawl_delay is not a string"),
    (("snapshot",), "x", "snapshot is not an object"),
    (("recent",), {}, "recent is not a list"),
    (("recent", 0), "x", "recent[0] is not an object"),
    ((*R, "url"), None, "recent[0].url is not a string"),
    ((*R, "status"), "200", "recent[0].status is not a whole number"),
    ((*R, "next_url"), 1, "recent[0].next_url is not a string"),
    ((*R, "exception"), [], "recent[0].exception is not a string"),
    ((*R, "size"), "10", "recent[0].size is not a whole number"),
    ((*R, "size"), 10**30, "recent[0].size is out of range"),
    ((*R, "t_end"), 1e300, "recent[0].t_end is out of range"),
    ((*R, "content_type"), 1, "recent[0].content_type is not a string"),
    ((*R, "encoding"), 1, "recent[0].encoding is not a string"),
    ((*R, "num_urls"), "0", "recent[0].num_urls is not a whole number"),
    ((*R, "num_new_urls"), 0.5, "recent[0].num_new_urls is not a whole number"),
    ((*R, "tries"), None, "recent[0].tries is not a whole number"),
    ((*R, "depth"), "0", "recent[0].depth is not a whole number"),
    ((*R, "referrer"), 2, "recent[0].referrer is not a string"),
    ((*R, "worker"), "0", "recent[0].worker is not a whole number"),
    ((*R, "t_start"), "now", "recent[0].t_start is not a number"),
    ((*R, "t_end"), None, "recent[0].t_end is not a number"),
    ((*R, "filtered"), 3, "recent[0].filtered is not a string"),
    (("chains",), 5, "chains is not a list"),
    (C, "x", "chains[0] is not a list of five"),
    ((*C, 0), "ab", "chains[0].urls is not a list"),
    ((*C, 0, 1), 5, "chains[0].urls[1] is not a string"),
    ((*C, 1), "round", "chains[0].end is not a known ChainEnd"),
    ((*C, 2), "x", "chains[0].status is not a whole number"),
    ((*C, 3), 0, "chains[0].meets is not true or false"),
    ((*C, 4), "0", "chains[0].hidden is not a whole number"),
    (("chain_count",), "1", "chain_count is not a whole number"),
    (("viewers",), "me", "viewers is not a list"),
    (("viewers", 0), 5, "viewers[0] is not a string"),
    (("recent_reset",), "yes", "recent_reset is not true or false"),
    (("kind",), 3, "kind 3 is not known"),
]


async def test_a_frame_of_the_wrong_types_is_told_and_dropped_the_viewer_stays_up() -> None:
    async with HostileMonitor(good) as monitor, terminal("attach", monitor.url) as term:
        await term.shows(b"text-url", b" connected ", what="the first good frame")
        others = [
            ("[1, 2]", "not an object"),
            ("{not json", "not JSON"),
            (json.dumps({"kind": "error", "error": 5}), "error is not a string"),
        ]
        cases = [(broken(path, value), words) for path, value, words in WRONG] + others
        for text, words in cases:
            await monitor.bad.put(text)
            await term.shows(f"bad frame from monitor: {words}".encode(), what=words)
        assert monitor.sent_bad == len(cases)
        # Still up and still taking the good frames that came between.
        assert term.proc.poll() is None
        await term.shows(b" connected ", what="still connected")
        assert b"Traceback" not in term.bytes()
        term.press(b"q")
        await wait_until(lambda: term.proc.poll() is not None, "q closes the view")
        assert term.proc.returncode == 0, term.tail()


async def test_a_hello_of_the_wrong_types_is_not_a_monitor_and_said_so() -> None:
    def bad_hello() -> dict[str, Any]:
        greeting = hello()
        greeting["config"]["max_tasks"] = "ten"
        return greeting

    async with HostileMonitor(good, bad_hello) as monitor:
        remote = RemoteCrawl(monitor.url)
        watching = asyncio.create_task(remote.run())
        try:
            await wait_until(lambda: remote.why != "", "the hello refused")
            assert remote.link is Link.DROPPED and not remote.ready.is_set()
            assert remote.why == "not a crawlscope monitor: config.max_tasks is not a whole number"
        finally:
            watching.cancel()
