"""A root that cannot be reached is said to be so, plainly, and why (issue 10, item 12):
headless and in the TUI, with exit status 1."""

from __future__ import annotations

from tui_support import crawler_of, frames, screen_text, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.politeness import RobotsRules
from crawlscope.engine.report import unreachable_roots
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from helpers import run_cli, run_crawl

REFUSED = "Connect call failed"  # what the connection error says, in asyncio's words


def test_headless_says_the_host_could_not_be_reached_and_why(unused_tcp_port: int) -> None:
    root = f"http://127.0.0.1:{unused_tcp_port}/"
    result = run_cli("crawl", root, "-q")
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"crawlscope: cannot reach {root}: ClientConnectorError: ")
    assert REFUSED in line
    assert "robots" not in line  # it was the host, not its robots.txt


async def test_the_reason_is_the_connection_error_not_the_rule_it_led_to(
    unused_tcp_port: int,
) -> None:
    root = f"http://127.0.0.1:{unused_tcp_port}/"
    crawler = await run_crawl(root)
    # In the books it stays what RFC 9309 makes of it: filtered, all disallowed.
    assert crawler.ledger.filtered[root].startswith("robots.txt unreachable (")
    ((where, why),) = unreachable_roots(crawler)
    assert where == root
    assert why.startswith("ClientConnectorError: ") and REFUSED in why
    # The same when robots.txt is not asked for: the root's own failure.
    crawler = await run_crawl(root, obey_robots=False, max_tries=1)
    ((_, why),) = unreachable_roots(crawler)
    assert why.startswith("ClientConnectorError: ")


def test_the_reason_follows_the_robots_rules_own_words() -> None:
    # unreachable_roots reads the reason RobotsRules gives; a change there must show here.
    rules = RobotsRules(None, disallow_all=True, note="unreachable (OSError: x (y))")
    assert rules.refusal == "robots.txt unreachable (OSError: x (y)): all disallowed (RFC 9309)"


async def test_the_tui_says_it_and_exits_1(unused_tcp_port: int) -> None:
    root = f"http://127.0.0.1:{unused_tcp_port}/"
    app = CrawlScopeApp(
        LiveCrawl((root,), make_config=lambda roots: CrawlConfig(roots=tuple(roots)))
    )
    async with app.run_test(size=(200, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
        await frames(pilot, 3)
        status = "\n".join(line for line in screen_text(app).splitlines() if "FINISHED" in line)
        assert f"cannot reach {root}: ClientConnectorError" in status
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, "the app to exit")
    assert app.return_value == 1
