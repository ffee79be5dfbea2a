"""`crawl --procs N`: one crawl over N local processes, one report from their parent.

With no ROOT the parent serves the demo site on its own loop (127.0.0.1, a port the
kernel picks) and every child crawls that one site. The parent is the only process the
user sees: Ctrl-C (or SIGTERM) stops every child, each giving its leases back, then the
embedded Redis; a second one kills the children at once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import signal
import sys
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, TextIO

from crawlscope.engine.records import STDOUT

from .common import fail
from .headless import _show_progress

if TYPE_CHECKING:
    from crawlscope.engine.cluster.local import LocalCluster
    from crawlscope.engine.exchange.feeds import FeedWriter
    from crawlscope.engine.plan import CrawlPlan

MOST_PROCS = 64


def procs_count(text: str) -> int:
    """--procs: a whole number of processes, or `auto` (one per core); 0 is this process
    alone, the default, so that a script's `--procs $N` or a config file may say it."""
    if text == "auto":
        from crawlscope.engine.cluster.local import cores

        return cores()
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of processes or auto, not {text!r}") from None
    if not 0 <= value <= MOST_PROCS:
        raise argparse.ArgumentTypeError(
            f"must be from 0 (this process alone) to {MOST_PROCS}, not {text}"
        )
    return value


def make_cluster(plan: CrawlPlan, args: argparse.Namespace, roots: tuple[str, ...]) -> LocalCluster:
    from crawlscope.engine.cluster.local import LOCAL_CRAWL_ID, LocalCluster

    shared = plan.shared
    return LocalCluster(
        dataclasses.replace(plan.config, roots=roots), args.procs,
        redis_url=shared.url if shared else None,
        crawl_id=shared.crawl_id if shared else LOCAL_CRAWL_ID,
        fresh=bool(shared and shared.fresh), lease=args.lease, patience=args.redis_patience,
    )  # fmt: skip


def spec_refusal(plan: CrawlPlan, args: argparse.Namespace) -> str | None:
    """The line refusing an option the processes would refuse (--redis-patience inf, a
    --max-tasks past what a process takes), by their own rules, before any starts;
    None if each would take its spec."""
    from crawlscope.engine.exchange.plain import BadMessage

    from .options import CRAWL_OPTIONS

    cluster = make_cluster(plan, args, plan.config.roots)
    try:
        cluster.check_spec()
    except BadMessage as exc:
        where, _, why = str(exc).partition(" ")
        field = where.removeprefix("config.")
        flags = {o.field: o.flags[0] for o in CRAWL_OPTIONS}
        flags |= {"lease": "--lease", "patience": "--redis-patience"}
        owner = cluster.config if where.startswith("config.") else cluster
        value = getattr(owner, field, None)
        said = f"{flags[field]} {value}" if field in flags else f"the crawl's {where}"
        return f"{said} {why} for a process of --procs"
    return None


def open_outputs(plan: CrawlPlan) -> list[FeedWriter]:
    from crawlscope.engine.exchange.feeds import open_feed
    from crawlscope.engine.plan import PlanError

    writers: list[FeedWriter] = []
    try:
        for path in plan.outputs:
            writers.append(open_feed(path, plan.feed_format))
    except OSError as exc:
        for writer in writers:
            with contextlib.suppress(OSError):
                writer.close()
        raise PlanError(f"cannot write output: {exc}") from None
    return writers


@contextlib.asynccontextmanager
async def served_roots(plan: CrawlPlan) -> AsyncIterator[tuple[str, ...]]:
    """The crawl's roots: the plan's, or the demo site's, served here for as long."""
    if not plan.crawl_demo:
        yield plan.config.roots
        return
    from crawlscope.engine.sites.demo import DemoServer

    async with DemoServer(plan.demo) as server:
        yield (server.url,)


async def crawl_procs(plan: CrawlPlan, args: argparse.Namespace) -> int:
    from crawlscope.engine.cluster.embedded import EmbeddedRedisError
    from crawlscope.engine.cluster.local import CrawlFinished
    from crawlscope.engine.cluster.problems import RedisProblem
    from crawlscope.engine.plan import PlanError

    out = sys.stderr if STDOUT in args.output else sys.stdout
    refusal = spec_refusal(plan, args)
    if refusal is not None:
        return fail(refusal)
    try:
        writers = open_outputs(plan)
    except PlanError as exc:
        return fail(str(exc))
    received: list[int] = []
    async with served_roots(plan) as roots:
        cluster = make_cluster(plan, args, roots)
        cluster.listeners.extend(writers)
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            if received:
                cluster.kill()  # a second Ctrl-C: no more waiting
            received.append(signum)
            cluster.stop()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal, sig)
        progress = None
        try:
            try:
                await cluster.start()
            except CrawlFinished as exc:  # run again after the shared crawl finished
                print(f"crawlscope: {exc}", file=sys.stderr)
                return 0
            except (RedisProblem, EmbeddedRedisError) as exc:
                return fail(str(exc))
            if not args.quiet and not args.verbose and sys.stderr.isatty():
                progress = asyncio.create_task(
                    _show_progress(cluster, sys.stderr, says=progress_line)
                )
            if args.verbose:
                from collections import Counter

                from crawlscope.engine.report import url_line

                cluster.listeners.append(lambda r: print(url_line(r, Counter()), file=sys.stderr))
            await cluster.wait()
        finally:
            if progress is not None:
                progress.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await progress
            await cluster.close()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            _close(writers, cluster)
    return _finish(cluster, args, out, received[0] if received else None)


def _close(writers: list[FeedWriter], cluster: LocalCluster) -> None:
    from crawlscope.engine.records import OutputError

    for writer in writers:
        try:
            writer.close()
        except OutputError as exc:
            cluster.ledger.faults.append(exc)


def _finish(
    cluster: LocalCluster, args: argparse.Namespace, out: TextIO, signum: int | None
) -> int:
    from crawlscope.engine.report import write_report

    from .common import save_report
    from .headless import EXIT_CLOSED_PIPE, closed_pipe, ended_by, exit_status

    if closed_pipe(cluster):  # type: ignore[arg-type]
        return EXIT_CLOSED_PIPE  # the reader of -o - went away (`| head`): quietly, as one process
    ended = ended_by(signum)
    if args.report:
        report = open(args.report, "w", encoding="utf-8")  # noqa: SIM115
        save_report(cluster, report, None if args.quiet else out, ended)
    elif not args.quiet:
        write_report(cluster, out, ended=ended)
    err = sys.stderr
    if not args.quiet:  # -q: what went wrong only, below
        print(f"crawlscope: {cluster.processes} processes, {cluster.per_process()}", file=err)
    for line in cluster.closing_lines():
        print(f"crawlscope: {line}", file=err)
    # The cluster's books are a crawl's as a report reads them: the same lines and status.
    status = exit_status(cluster, signum, err)  # type: ignore[arg-type]
    return status or (1 if cluster.failed_to_start else 0)


def progress_line(cluster: LocalCluster) -> str:
    books = cluster.ledger
    finished = len(books.done) + len(books.failed)
    rate = finished / cluster.elapsed if cluster.elapsed else 0.0
    return (
        f"{cluster.elapsed:7.1f}s  {len(books.done)} done  {len(books.failed)} failed"
        f"  {cluster.processes} processes  {rate:.0f} pages/s"
    )


class ClusterThread(threading.Thread):
    """`tui --procs`: the local cluster on a loop of its own, so the screen's loop only
    draws. The screen watches it through its Redis, as `attach` watches any cluster."""

    def __init__(self, plan: CrawlPlan, args: argparse.Namespace) -> None:
        super().__init__(name="local-cluster", daemon=True)
        self.plan, self.args = plan, args
        self.cluster: LocalCluster | None = None
        self.ready = threading.Event()  # the Redis is up (or the start failed: `error`)
        self.error: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._writers: list[FeedWriter] = []
        self._released: asyncio.Event | None = None  # set when the screen has closed

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        from crawlscope.engine.cluster.embedded import EmbeddedRedisError
        from crawlscope.engine.cluster.local import CrawlFinished
        from crawlscope.engine.cluster.problems import RedisProblem
        from crawlscope.engine.plan import PlanError

        self._loop = asyncio.get_running_loop()
        self._released = asyncio.Event()
        try:
            self._writers = open_outputs(self.plan)
            async with served_roots(self.plan) as roots:
                cluster = self.cluster = make_cluster(self.plan, self.args, roots)
                cluster.listeners.extend(self._writers)
                try:
                    await cluster.start()
                    self.ready.set()
                    await cluster.wait()
                    # The crawl is over, the screen still up: its Redis stays, so the
                    # screen shows the end (FINISHED, the figures), not a Redis gone.
                    await self._released.wait()
                finally:
                    await cluster.close()
                    _close(self._writers, cluster)
        except (PlanError, RedisProblem, EmbeddedRedisError, CrawlFinished, OSError) as exc:
            self.error = str(exc)
        finally:
            self.ready.set()

    def stop(self) -> None:
        """Stop every child (their leases given back) and wait for the cluster's end."""
        cluster, released = self.cluster, self._released
        if self._loop is not None and cluster is not None and released is not None:

            def stop() -> None:
                cluster.stop()
                released.set()

            with contextlib.suppress(RuntimeError):  # its loop has ended already
                self._loop.call_soon_threadsafe(stop)
        self.join()


def tui_procs(plan: CrawlPlan, args: argparse.Namespace) -> int:
    """`tui --procs N`: the cluster view on N local processes; the totals when it closes."""
    from crawlscope.tui.app import CrawlScopeApp
    from crawlscope.tui.cluster_view import ClusterAttached
    from crawlscope.tui.screenshot_run import take_screenshot

    from .common import open_report, summarise

    refusal = spec_refusal(plan, args)
    if refusal is not None:
        return fail(refusal)
    try:
        report_file = None if args.screenshot else open_report(args.report)
    except OSError as exc:
        return fail(f"cannot write the report: {exc}")
    runner = ClusterThread(plan, args)
    runner.start()
    runner.ready.wait()
    cluster = runner.cluster
    if runner.error is not None or cluster is None:
        runner.join()
        return fail(runner.error or "the cluster did not start")
    app = CrawlScopeApp(ClusterAttached(cluster.redis_url, cluster.crawl_id), fps=args.fps)
    try:
        if args.screenshot:
            saved = take_screenshot(app, args.screenshot, args.screenshot_after, args.size)
            print(f"crawlscope: screenshot saved to {saved}", file=sys.stderr)
            return 0
        app.run()
    except OSError as exc:
        return fail(f"cannot write the screenshot: {exc}")
    finally:
        runner.stop()
    summarise(cluster, report_file, sys.stdout)
    for line in cluster.closing_lines():
        print(f"crawlscope: {line}", file=sys.stderr)
    return app.return_code or 0
