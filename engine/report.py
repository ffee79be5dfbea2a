"""The end-of-crawl report, in the chapter's format, plus redirect chains and the accounting."""

from __future__ import annotations

import heapq
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol, TextIO

from .config import CrawlConfig
from .hosts.figures import host_rows_of
from .ledger import Ledger
from .observe.snapshot import Accounting, HostView
from .observe.text import printable
from .observe.waterfall import host_parts, slowest, waterfalls
from .observe.workers import Worker, WorkerState
from .politeness import crawl_delays_of
from .records import FetchRecord, is_html
from .redirects import Chain, ChainEnd
from .trace.flight_saver import FlightSaver


def url_line(record: FetchRecord, stats: Counter[str]) -> str:
    url = printable(record.url)
    if record.failed:
        stats["fail"] += 1
        stats["fail_" + _exception_name(record)] += 1
        return f"{url} error {printable(record.exception or '')}"
    # An answer with a problem (a bad Location, a body cut at max_size) says so at the end.
    problem = f" {printable(record.exception)}" if record.exception else ""
    if record.exception:
        stats["problem_" + _exception_name(record)] += 1
    # Every answer by its status, whatever else it counts as: status_200 is every 200.
    stats[f"status_{record.status}"] += 1
    if record.next_url:
        stats["redirect"] += 1
        return f"{url} {record.status} redirect {printable(record.next_url)}"
    ctype = printable(record.content_type or "-")
    encoding = printable(record.encoding or "-")
    if record.status == 200 and is_html(record.content_type) and not record.exception:
        stats["html"] += 1
        stats["html_bytes"] += record.size
        return (
            f"{url} {record.status} {ctype} {encoding} {record.size}"
            f" {record.num_new_urls}/{record.num_urls}"
        )
    # A 404 or a 500 is an answer, so the URL is done, not failed: not "error" beside
    # "failed 0".
    stats["http_error" if (record.status or 0) >= 400 else "other"] += 1
    stats["other_bytes"] += record.size
    return f"{url} {record.status} {ctype} {encoding} {record.size}{problem}"


def _exception_name(record: FetchRecord) -> str:
    return printable((record.exception or "").split(":", 1)[0], 60)


def chain_line(chain: Chain) -> str:
    path = " -> ".join(printable(url) for url in chain.urls)
    if chain.end is ChainEnd.FETCHED:
        end = str(chain.status)
    elif chain.end is ChainEnd.LIMIT:
        end = "max_redirect reached"
    elif chain.end is ChainEnd.MEETS:
        # It stops where another chain goes on: that chain's line has the rest, once.
        return f"  {path} [meets another chain]"
    else:
        end = chain.end.value
    meets = " (meets another chain)" if chain.meets else ""
    return f"  {path} [{end}]{meets}"


# URLs the filtered section lists per reason (the first, in sorted order; the rest are
# counted), and how much of each it shows: a URL filtered for its length can be huge.
FILTERED_SHOWN = 20
FILTERED_URL_CHARS = 300


def filtered_lines(filtered: Mapping[str, str], shown: int = FILTERED_SHOWN) -> list[str]:
    """The report's filtered section: each reason and its count, most first, then its URLs.

    Linear in the filtered URLs (a heap picks the ones shown), whatever their number."""
    by_reason: dict[str, list[str]] = {}
    for url, reason in filtered.items():
        by_reason.setdefault(reason, []).append(url)
    lines = ["Filtered (not fetched), by reason:"] if by_reason else []
    for reason, urls in sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0])):
        lines.append(f"  {printable(reason, FILTERED_URL_CHARS)}: {len(urls)}")
        first = heapq.nsmallest(shown, urls)
        lines.extend(f"    {printable(url, FILTERED_URL_CHARS)}" for url in first)
        if len(urls) > shown:
            lines.append(f"    ... and {len(urls) - shown} more")
    return lines


class Crawl(Protocol):
    """What a report needs of an engine; every stage's crawler has it."""

    config: CrawlConfig
    ledger: Ledger

    @property
    def elapsed(self) -> float: ...

    def accounting(self) -> Accounting: ...


# The reason RobotsRules.refusal gives when robots.txt could not be fetched at all: the
# host was not reached, and the parenthesis says why (describe_exception's words).
_NOT_REACHED = re.compile(r"robots\.txt unreachable \((?P<why>.*)\): all disallowed \(RFC 9309\)")


def unreachable_roots(crawl: Crawl) -> list[tuple[str, str]]:
    """(root, why) for each root, when no root could be reached at all (else empty).

    `why` is what stopped the connection (the fetch's own error, or robots.txt's when
    that was the first thing asked of the host), not the rule it led to."""
    books = crawl.ledger
    roots = crawl.config.root_urls
    if any(root in books.done for root in roots):
        return []
    reasons = []
    for root in roots:
        if root in books.failed:
            reasons.append((root, books.failed[root].exception or "no response"))
        elif (match := _NOT_REACHED.fullmatch(books.filtered.get(root, ""))) is not None:
            reasons.append((root, match["why"]))
    return reasons if len(reasons) == len(roots) else []


def write_report(
    crawl: Crawl, out: TextIO, chains: Iterable[Chain] | None = None, ended: str | None = None,
    flight: FlightSaver | None = None,
) -> None:  # fmt: skip
    books = crawl.ledger
    stats: Counter[str] = Counter()
    print("*** Report ***", file=out)
    records = sorted([*books.done.values(), *books.failed.values()], key=lambda r: r.url)
    for record in records:
        print(url_line(record, stats), file=out)
    chain_list = list(books.chains() if chains is None else chains)
    if chain_list:
        print("Redirect chains:", file=out)
        for chain in chain_list:
            print(chain_line(chain), file=out)
    delays = crawl_delays_of(crawl)
    if delays:
        print("Crawl-delay (robots.txt):", file=out)
        for delay in delays:
            print(f"  {delay.describe()}", file=out)
    for line in hosts_lines(crawl):
        print(line, file=out)
    for line in filtered_lines(books.filtered):
        print(line, file=out)
    sitemaps: list[str] = getattr(crawl, "sitemap_notes", [])  # the asyncio engine's
    if sitemaps:
        print("Sitemaps (--sitemaps):", file=out)
        for line in sitemaps:
            print(f"  {line}", file=out)
    for line in warning_lines(crawl):
        print(line, file=out)
    for line in verdict_lines(crawl):
        print(line, file=out)
    if flight is not None:
        for line in flight_report_lines(flight):
            print(line, file=out)
    write_totals(crawl, out, stats, ended)


SLOWEST = 10


def flight_report_lines(flight: FlightSaver) -> list[str]:
    """The flight recorder's part of the report: the slowest fetches it kept, each with
    its waterfall; per host, each part's p50 and p99; and the flights saved."""
    falls = waterfalls(flight.ring)
    lines: list[str] = []
    if falls:
        kept = f"{len(falls)} fetches the flight recorder kept"
        lines.append(f"Slowest fetches (of the {kept}), where their time went:")
        for fall in slowest(falls, SLOWEST):
            parts = "  ".join(f"{name} {_seconds(s)}" for name, s in fall.parts)
            lines.append(f"  {_seconds(fall.total):>7} {printable(fall.url, 300)}")
            lines.append(f"          {parts}")
        lines.append("Time per part of a fetch, per host (p50 / p99):")
        for host, parts_of in host_parts(falls).items():
            cells = "  ".join(
                f"{name} {_seconds(p50)}/{_seconds(p99)}" for name, (p50, p99) in parts_of.items()
            )
            lines.append(f"  {printable(host, 200)}: {cells}")
    for saved in flight.saved:
        lines.append(f"Flight saved ({saved.why}): {printable(str(saved.path), 500)}")
    if flight.problem:
        lines.append(f"Flight not saved: {printable(flight.problem, 500)}")
    return lines


def warning_lines(crawl: Crawl) -> list[str]:
    """The report's "Warnings" section: the lints of engine/timing/loop_health.py (the latest
    it keeps, oldest first), or nothing when none was raised."""
    health = getattr(crawl, "health", None)  # the asyncio engine's
    warnings = list(getattr(health, "warnings", ()))
    told = int(getattr(health, "warning_count", 0))
    if not warnings:
        return []
    lines = [f"Warnings ({told}):"]
    if told > len(warnings):
        lines.append(f"  ... {told - len(warnings)} earlier, then the latest {len(warnings)}:")
    lines += [
        f"  {lint.t:8.3f}s {lint.kind.value}: {printable(lint.text, 500)}" for lint in warnings
    ]
    return lines


def verdict_lines(crawl: Crawl) -> list[str]:
    """The report's "What limited it": each verdict the crawl said (engine/observe/verdict.py),
    from when, and for how long, to the crawl's end."""
    health = getattr(crawl, "health", None)  # the asyncio engine's
    diagnosis = getattr(health, "diagnosis", None)
    said = list(getattr(diagnosis, "history", ()))
    if not said:
        return []
    end = float(getattr(crawl, "elapsed", 0.0))
    lines = ["What limited it:"]
    for verdict, after in zip(said, [*said[1:], None], strict=True):
        until = after.since if after is not None else max(end, verdict.since)
        lines.append(f"  {verdict.since:7.1f}s for {until - verdict.since:5.1f}s  "
                     f"{printable(verdict.line, 300)}")  # fmt: skip
    return lines


# The hosts panel's columns after the host's name: header, width, the cell of a row.
# Crawl-delay is left out when no host asked for one: the report then names none.
HostCell = Callable[[HostView, float], str]
HOST_COLUMNS: tuple[tuple[str, int, HostCell], ...] = (
    ("queued", 7, lambda h, _w: str(h.queued)),
    ("in flight", 9, lambda h, _w: str(h.in_flight)),
    ("done", 7, lambda h, _w: str(h.done)),
    ("failed", 7, lambda h, _w: str(h.failed)),
    ("p50", 7, lambda h, _w: _seconds(h.p50)),
    ("p99", 7, lambda h, _w: _seconds(h.p99)),
    ("next", 7, lambda _h, wait: _seconds(wait)),
    ("delay", 6, lambda h, _w: _seconds(h.delay)),
    ("Crawl-delay", 11, lambda h, _w: _seconds(h.crawl_delay)),
    ("limit", 5, lambda h, _w: str(h.limit or "none")),
    ("robots.txt", -15, lambda h, _w: h.robots.value),
    ("errors", 6, lambda h, _w: f"{h.error_rate:.0%}" if h.tries else "-"),
)


def hosts_lines(crawl: object) -> list[str]:
    """The report's "Hosts" section: the hosts panel's columns, one host (origin) a
    line (its name on a line of its own: an origin may be long), busiest first."""
    rows, count = host_rows_of(crawl)
    if not rows:
        return []
    end = getattr(crawl, "elapsed", 0.0)
    delays = any(host.crawl_delay for host in rows)
    columns = [c for c in HOST_COLUMNS if delays or c[0] != "Crawl-delay"]

    def line(cells: Iterable[str]) -> str:
        parts = (f"{cell:<{-w}}" if w < 0 else f"{cell:>{w}}" for cell, (_, w, _f) in
                 zip(cells, columns, strict=True))  # fmt: skip
        return "  " + " ".join(parts).rstrip()

    lines = ["Hosts (p50/p99: the top of a power-of-two bucket of ms):"]
    lines.append(line(header for header, _w, _f in columns))
    for host in rows:
        blocked = " [blocked]" if host.blocked else ""
        wait = host.next_fetch - end if isinstance(end, float) else 0.0
        lines.append(f"  {printable(host.origin, FILTERED_URL_CHARS)}{blocked}")
        lines.append(line(cell(host, wait) for _h, _w, cell in columns))
    if count > len(rows):
        lines.append(f"  ... and {count - len(rows)} more hosts")
    return lines


def _seconds(value: float) -> str:
    if value <= 0:
        return "-"
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:.3g}s"


def workers_at_end(crawl: Crawl) -> int:
    """The workers the crawl had when it ended: those it started with, give or take the
    ones added, removed (`retiring`) or cancelled (c) while it ran. An engine whose
    workers cannot change (the lecture's) has its config's count."""
    workers = getattr(crawl, "workers", None)
    if not isinstance(workers, Mapping) or not workers:
        return crawl.config.max_tasks
    if not all(isinstance(w, Worker) for w in workers.values()):
        return crawl.config.max_tasks
    # Alive, or ended by the crawl's own end (STOPPED, not retired): not one that a key
    # took away (retired, or cancelled and so CANCELLED) or that died of a bug.
    return sum(
        1
        for w in workers.values()
        if not w.retiring and (w.alive or w.state is WorkerState.STOPPED)
    )


# What each of the totals counts, said beside it. Done = html + other + http_error +
# redirect = the status_ lines added up; failed = fail.
COUNTS = {
    "html": "done: HTML pages (200), their links taken",
    "html_bytes": "bytes of those pages",
    "other": "done: other answers below 400 (files, not HTML)",
    "other_bytes": "bytes of every answer that is not an HTML page",
    "http_error": "done: answered 4xx or 5xx (not failed: an answer came)",
    "redirect": "done: 3xx answers with a Location",
    "fail": "failed: no answer after every try",
    "filtered": "not fetched: out of scope, disallowed, excluded",
    "unfetched": "not fetched: left by --max-pages, --max-depth or a stop",
}
COUNTS_OF_KIND = {
    "status_": "answers with status {}, of every kind above",
    "fail_": "failed, the last try with {}",
    "problem_": "answered, with a problem: {}",
}


def counts(key: str) -> str:
    """What the total named `key` counts, in words."""
    for prefix, words in COUNTS_OF_KIND.items():
        if key.startswith(prefix):
            return words.format(key.removeprefix(prefix))
    return COUNTS.get(key, "")


def write_totals(
    crawl: Crawl, out: TextIO, stats: Counter[str] | None = None, ended: str | None = None
) -> None:
    """The report's last lines: the time, the count of each outcome, the accounting.

    `stats` is what the report's URL lines tallied; without it (a summary that lists no
    URL) the records are tallied here. `ended` is how the crawl ended ("Interrupted" by
    Ctrl-C); without it, "Finished" if nothing was left queued or held, else "Stopped"
    (a screen quit before the end)."""
    books = crawl.ledger
    dt = crawl.elapsed
    tasks = workers_at_end(crawl)
    finished = len(books.done) + len(books.failed)
    speed = finished / dt / tasks if dt and tasks else 0.0
    accounting = crawl.accounting()
    if stats is None:
        stats = Counter()
        for record in [*books.done.values(), *books.failed.values()]:
            url_line(record, stats)
    started = "" if tasks == crawl.config.max_tasks else f", started with {crawl.config.max_tasks}"
    if ended is None:
        ended = "Finished" if accounting.queued == 0 and accounting.held == 0 else "Stopped"
    print(
        f"{ended} {finished} urls in {dt:.3f} secs (max_tasks={tasks}{started})"
        f" ({speed:.3f} urls/sec/task)",
        file=out,
    )
    stats["filtered"] = accounting.filtered
    stats["unfetched"] = accounting.unfetched
    for key, count in sorted(stats.items()):
        print(f"{count:10d} {key:<16} {counts(key)}", file=out)
    print(f"Todo: {accounting.queued}", file=out)
    print(f"Done: {finished}", file=out)
    print(accounting.line(), file=out)
    print(f"Date: {time.ctime()} local time", file=out)
