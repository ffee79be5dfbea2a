"""`tui --procs`: the cluster view of a crawl over local processes, to its end."""

from __future__ import annotations

from tui_support import until

from crawlscope.cli import build_parser
from crawlscope.cli.crawl_plan import plan_from_args
from crawlscope.cli.procs import ClusterThread
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.demo_config import DEMO_FOR_THE_EYE
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.cluster_view import ClusterAttached, cluster_lines


async def test_the_view_shows_the_crawl_to_its_end_then_everything_stops() -> None:
    args = build_parser().parse_args(["tui", "--procs", "2", "--pages", "80", "--latency", "0.01"])
    plan = plan_from_args(args, "tui", DEMO_FOR_THE_EYE)
    runner = ClusterThread(plan, args)
    runner.start()
    runner.ready.wait(60)
    cluster = runner.cluster
    assert cluster is not None and runner.error is None
    embedded = cluster.embedded
    assert embedded is not None and embedded.folder is not None
    folder = embedded.folder
    try:
        attached = ClusterAttached(cluster.redis_url, cluster.crawl_id)
        app = CrawlScopeApp(attached)
        async with app.run_test(size=(140, 44)) as pilot:
            await until(pilot, lambda: len(attached.cluster.processes) == 2, "both processes")
            panel = "\n".join(line.plain for line in cluster_lines(attached))
            assert " 2 processes " in panel and "#0 " in panel and "#1 " in panel
            await until(
                pilot, lambda: attached.cluster.snapshot(()).phase is Phase.FINISHED, "FINISHED"
            )
            # Every child has ended, and the view still reads the crawl's Redis.
            await until(pilot, lambda: all(c.proc.returncode == 0 for c in cluster.children),
                        "both processes ended")  # fmt: skip
            before = attached.cluster.figures  # each look at Redis makes new figures
            await until(
                pilot,
                lambda: attached.cluster.figures is not before or attached.cluster.unreachable,
                "a look at Redis after they ended",
            )
            panel = "\n".join(line.plain for line in cluster_lines(attached))
            assert "cannot reach Redis" not in panel and "unfinished 0" in panel
            assert folder.exists()
    finally:
        runner.stop()
    assert not folder.exists()
    assert cluster.final is not None and cluster.final.balanced and cluster.final.done > 20
