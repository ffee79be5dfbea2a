"""What watching costs a crawl: headless pages/s against the same crawl served by its
monitor (engine/remote/monitor.py) to 10 attached viewers, and to one viewer that stops
reading.

Every crawl is a fresh process at 100 workers on the 5,000-page demo site (served by a
process of its own); the viewers are RemoteCrawl clients (what `crawlscope attach` uses)
in one more process, connected before the crawl starts. The stuck viewer connects and
never reads: the monitor drops it once too many bytes wait for it (MAX_BEHIND_BYTES, the
kernel's send queue included) or it has been behind too long (MAX_BEHIND_SECONDS), and
from then on it should cost nothing. The three kinds run interleaved, the order turning
from round to round; the table shows medians and the ratio to headless (goal: 10 viewers >= 0.95x).

    python -m bench.viewers [--quick] [--rounds N] [--pages N] [--workers N]
    python -m bench.viewers trial KIND ROOT --workers N   (one crawl; used by the above)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from typing import Any

import aiohttp

from bench.common import (
    REPO,
    DemoSite,
    SiteOptions,
    machine_line,
    median,
    parser,
    table,
    write_results,
)
from bench.trial import engine_config, steady_rate
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.remote.client import RemoteCrawl
from crawlscope.engine.remote.monitor import Monitor, listen

KINDS = ("headless", "10 viewers", "stuck viewer")
VIEWERS = {"headless": 0, "10 viewers": 10, "stuck viewer": 1}
GOAL = 0.95
SHOWN_ROWS = frozenset(range(1, 31))  # the workers table of a 120x40 terminal, about


# ---- one crawl, in a process of its own ---------------------------------------------------


async def crawl_watched(root: str, workers: int, viewers: int) -> dict[str, Any]:
    """Crawl `root`; with viewers, serve a monitor and wait for them before starting."""
    crawler = Crawler(engine_config(root, workers))
    stamps: list[float] = []
    crawler.ledger.record_listeners.append(lambda _record: stamps.append(time.perf_counter()))
    async with contextlib.AsyncExitStack() as stack:
        monitor = None
        if viewers:
            monitor = await stack.enter_async_context(
                Monitor(crawler, crawler, listen("127.0.0.1", 0))
            )
            # The read-only URL: the watchers' command line is world-readable, the token
            # must not be on it (and they only watch).
            print(json.dumps({"monitor": monitor.view_url}), flush=True)
            while len(monitor.viewers) < viewers:
                await asyncio.sleep(0.01)
        t0, c0 = time.perf_counter(), time.process_time()
        await crawler.crawl()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {
            "pages": len(crawler.ledger.done) + len(crawler.ledger.failed),
            "seconds": seconds,
            "cpu_seconds": cpu,
            "steady_pages_per_s": steady_rate(stamps),
            "frames": monitor.frames if monitor else 0,
            "monitor_busy_s": monitor.busy_seconds if monitor else 0.0,
            "dropped": monitor.dropped if monitor else 0,
        }


async def watch(url: str, count: int, stuck: bool) -> None:
    """`count` viewers of the crawl at `url` until it ends (stuck: one that never reads)."""
    if stuck:
        async with aiohttp.ClientSession() as session, session.ws_connect(url):
            await asyncio.Event().wait()  # holds the connection, reads nothing
    remotes = [RemoteCrawl(url) for _ in range(count)]
    await asyncio.gather(*(remote.run() for remote in remotes), *map(like_a_screen, remotes))


async def like_a_screen(remote: RemoteCrawl) -> None:
    """Ask, as a screen of 40 lines does, for the rows it shows: the monitor then reads
    where those workers' tasks are suspended, every frame."""
    await remote.ready.wait()
    remote.snapshot(SHOWN_ROWS)


def run(kind: str, site: DemoSite, workers: int) -> dict[str, Any]:
    """One crawl of `site` as `kind`, in a fresh process (and its viewers in another)."""
    cmd = [sys.executable, "-m", "bench.viewers", "trial", kind, site.url,
           "--workers", str(workers)]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    watcher = None
    try:
        line = proc.stdout.readline()
        if VIEWERS[kind]:
            url = json.loads(line)["monitor"]
            wcmd = [sys.executable, "-m", "bench.viewers", "watch", url,
                    "--count", str(VIEWERS[kind])]  # fmt: skip
            wcmd += ["--stuck"] if kind == "stuck viewer" else []
            watcher = subprocess.Popen(wcmd, cwd=REPO, stderr=subprocess.DEVNULL)
            line = proc.stdout.readline()
        proc.wait()
    finally:
        if watcher is not None:
            watcher.terminate()
            watcher.wait()
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}")
    row: dict[str, Any] = {"kind": kind, **json.loads(line)}
    row["pages_per_s"] = row["pages"] / row["seconds"]
    return row


# ---- the comparison -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("trial", "watch"):
        return _child(argv)
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, help="demo site pages (default 5000; quick 400)")
    p.add_argument("--workers", type=int, default=100)
    p.add_argument("--rounds", type=int, help="default 3; quick 1")
    args = p.parse_args(argv)
    args.pages = args.pages or (400 if args.quick else 5000)
    args.rounds = args.rounds or (1 if args.quick else 3)
    print(f"viewers: what attached viewers cost the crawl; {machine_line()}")
    rows: list[dict[str, Any]] = []
    with DemoSite(SiteOptions(pages=args.pages)) as site:
        for round_ in range(args.rounds):
            order = KINDS[round_ % 3 :] + KINDS[: round_ % 3]
            for kind in order:
                row = run(kind, site, args.workers)
                row["round"] = round_
                rows.append(row)
                print(f"  round {round_ + 1} {kind}: {row['pages_per_s']:.0f} pages/s", flush=True)
    summary: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        summary[kind] = {
            "pages_per_s": median(r["pages_per_s"] for r in mine),
            "steady_pages_per_s": median(r["steady_pages_per_s"] for r in mine),
            "cpu_s_per_1000_pages": median(1000 * r["cpu_seconds"] / r["pages"] for r in mine),
            "frames": median(r["frames"] for r in mine),
            "monitor_share": median(r["monitor_busy_s"] / r["seconds"] for r in mine),
            "dropped": median(r["dropped"] for r in mine),
        }
    base = summary["headless"]["pages_per_s"]
    for kind in KINDS:
        summary[kind]["ratio"] = summary[kind]["pages_per_s"] / base
    headers = ["crawl", "pages/s", "steady pages/s", "CPU s / 1000 pages", "frames", "dropped",
               "monitor's share", "vs headless"]  # fmt: skip
    print()
    print(table(headers, [
        [kind, f"{s['pages_per_s']:.0f}", f"{s['steady_pages_per_s']:.0f}",
         f"{s['cpu_s_per_1000_pages']:.2f}", f"{s['frames']:.0f}", f"{s['dropped']:.0f}",
         f"{100 * s['monitor_share']:.1f}%", f"{s['ratio']:.3f}x"]
        for kind, s in summary.items()
    ]))  # fmt: skip
    ten = summary["10 viewers"]["ratio"]
    share = summary["10 viewers"]["monitor_share"]
    verdict = "met" if ten >= GOAL else "NOT met"
    notes = [
        f"10 viewers: {ten:.3f}x headless pages/s (goal >= {GOAL}x): {verdict}",
        f"the monitor's own time in the crawl's loop with 10 viewers: {100 * share:.1f}% "
        "(the viewers' process shares the machine's cores with the crawl and the site)",
    ]
    print("\n" + "\n".join(notes))
    write_results("viewers", args, {"summary": summary, "trials": rows}, notes)
    return 0


def _child(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="what", required=True)
    trial = sub.add_parser("trial")
    trial.add_argument("kind", choices=KINDS)
    trial.add_argument("root")
    trial.add_argument("--workers", type=int, default=100)
    watching = sub.add_parser("watch")
    watching.add_argument("url")
    watching.add_argument("--count", type=int, default=1)
    watching.add_argument("--stuck", action="store_true")
    args = p.parse_args(argv)
    if args.what == "watch":
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(watch(args.url, args.count, args.stuck))
        return 0
    figures = asyncio.run(crawl_watched(args.root, args.workers, VIEWERS[args.kind]))
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
