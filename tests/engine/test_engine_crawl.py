"""The crawler against the demo site, over real sockets: what it finds and records."""

from __future__ import annotations

import io
import socket
from urllib.parse import urlsplit

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.redirects import ChainEnd
from crawlscope.engine.report import write_report
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import assert_accounted, expected, outcomes, path, run_crawl


async def test_every_demo_page_is_found_with_the_expected_outcome(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url)
    assert outcomes(crawler) == expected(demo.config)
    assert crawler.phase is Phase.FINISHED
    assert crawler.unfinished == 0
    assert_accounted(crawler)


async def test_same_result_with_one_worker_and_with_many(demo: DemoServer) -> None:
    one = await run_crawl(demo.url, max_tasks=1)
    many = await run_crawl(demo.url, max_tasks=50)
    assert outcomes(one) == outcomes(many)


async def test_paths_meeting_at_one_target_fetch_it_once(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url)
    assert demo.requests["/baz"] == 1
    assert demo.requests["/foo"] == demo.requests["/bar"] == 1
    foo_bar = [c for c in crawler.ledger.chains() if path(c.urls[0]) in ("/foo", "/bar")]
    assert len(foo_bar) == 2
    for chain in foo_bar:
        assert path(chain.urls[-1]) == "/baz"
        assert chain.end is ChainEnd.FETCHED and chain.status == 200
        assert chain.meets


async def test_redirect_loop_ends_with_a_record(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url)
    loops = [c for c in crawler.ledger.chains() if c.end is ChainEnd.LOOP]
    assert [[path(u) for u in c.urls] for c in loops] == [["/loop/a", "/loop/b", "/loop/a"]]
    for p in ("/loop/a", "/loop/b"):
        record = crawler.ledger.done[demo.url.rstrip("/") + p]
        assert record.status == 302 and record.next_url is not None
        assert demo.requests[p] == 1


async def test_chain_longer_than_max_redirect_stops_with_a_record(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url, max_redirect=10)
    (chain,) = [c for c in crawler.ledger.chains() if path(c.urls[0]) == "/chain/0"]
    assert chain.end is ChainEnd.LIMIT
    assert [path(u) for u in chain.urls] == [f"/chain/{i}" for i in range(12)]
    assert demo.requests["/chain/10"] == 1
    assert demo.requests["/chain/11"] == 0
    last = crawler.ledger.done[demo.url + "chain/10"]
    assert path(last.next_url or "") == "/chain/11"


async def test_a_bigger_redirect_budget_reaches_the_end_of_the_chain(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url, max_redirect=12)
    (chain,) = [c for c in crawler.ledger.chains() if path(c.urls[0]) == "/chain/0"]
    assert chain.end is ChainEnd.FETCHED and chain.status == 200
    assert outcomes(crawler) == expected(demo.config, max_redirect=12)


async def test_the_trailing_slash_redirect_is_followed(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url)
    record = crawler.ledger.done[demo.url + "353"]
    assert record.status == 301
    assert record.next_url == demo.url + "353/"
    assert crawler.ledger.done[demo.url + "353/"].referrer == demo.url + "353"


async def test_the_flaky_page_is_retried_then_fetched(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url, backoff=0.01)
    record = crawler.ledger.done[demo.url + "flaky"]
    assert record.status == 200
    assert record.tries >= 2
    assert record.exception is None


async def test_a_page_that_never_answers_fails_after_max_tries() -> None:
    async with DemoServer(DemoConfig(flaky_failures=1000)) as server:
        crawler = await run_crawl(server.url, max_tries=3, backoff=0.01)
    record = crawler.ledger.failed[server.url + "flaky"]
    assert record.status is None
    assert record.tries == 3
    assert record.exception is not None and "Disconnect" in record.exception
    assert_accounted(crawler)


async def test_404_and_500_are_recorded(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url)
    assert crawler.ledger.done[demo.url + "missing"].status == 404
    assert crawler.ledger.done[demo.url + "broken"].status == 500
    assert crawler.ledger.done[demo.url + "broken"].tries == 1  # an answer, not a network failure


async def test_non_html_is_recorded_but_not_parsed(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url)
    png = crawler.ledger.done[demo.url + "files/diagram.png"]
    pdf = crawler.ledger.done[demo.url + "files/chapter.pdf"]
    assert (png.content_type, pdf.content_type) == ("image/png", "application/pdf")
    assert png.num_urls == pdf.num_urls == 0
    assert png.size > 0 and pdf.size > 0


async def test_external_and_non_http_links_are_not_fetched(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url)
    hosts = {urlsplit(url).netloc for url in [*crawler.ledger.done, *crawler.ledger.failed]}
    assert hosts == {urlsplit(demo.url).netloc}
    assert crawler.ledger.filtered == {
        "http://example.invalid/": "out of scope",
        demo.url + "private/secret": "disallowed by robots.txt (Disallow: /private/)",
    }
    assert not any(url.startswith("mailto:") for url in crawler.ledger.seen_urls)


async def test_exclude_patterns_filter_urls(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url, exclude=(r"/page/\d*7$", r"/files/"))
    fetched = set(outcomes(crawler))
    assert not any(p.endswith("7") and p.startswith("/page/") for p in fetched)
    assert not any(p.startswith("/files/") for p in fetched)
    excluded = [u for u, why in crawler.ledger.filtered.items() if why.startswith("excluded")]
    assert demo.url + "files/diagram.png" in excluded
    assert_accounted(crawler)


async def test_max_pages_leaves_the_rest_unfetched(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url, max_pages=10)
    assert len(crawler.ledger.done) + len(crawler.ledger.failed) == 10
    assert crawler.ledger.unfetched
    assert_accounted(crawler)


async def test_max_depth_limits_link_levels(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url, max_depth=1)
    depths = {r.depth for r in crawler.ledger.done.values()}
    assert depths == {0, 1}
    assert demo.url + "page/0" in crawler.ledger.done
    assert demo.url + "page/1" in crawler.ledger.unfetched
    assert_accounted(crawler)


async def test_records_carry_depth_referrer_worker_and_times(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url, max_tasks=3)
    root = crawler.ledger.done[demo.url]
    assert (root.depth, root.referrer) == (0, None)
    page0 = crawler.ledger.done[demo.url + "page/0"]
    assert (page0.depth, page0.referrer) == (1, demo.url)
    assert page0.num_urls >= page0.num_new_urls >= 1
    for record in crawler.ledger.done.values():
        assert record.worker in (0, 1, 2)
        assert record.t_end >= record.t_start > 0
        text = record.content_type is not None and record.content_type.startswith("text/")
        # A PDF or a PNG is bytes: no encoding, where the chapter's code wrote utf-8.
        assert record.encoding == ("utf-8" if text else None), record
    files = [
        crawler.ledger.done[demo.url + f"files/{name}"] for name in ("diagram.png", "chapter.pdf")
    ]
    assert [(r.content_type, r.encoding) for r in files] == [
        ("image/png", None),
        ("application/pdf", None),
    ]


async def test_report_has_the_chapters_lines_and_the_accounting(demo: DemoServer) -> None:
    crawler = await run_crawl(demo.url, max_tasks=4)
    out = io.StringIO()
    write_report(crawler, out)
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == "*** Report ***"
    url_lines = [line for line in lines if line.startswith("http")]
    assert url_lines == sorted(url_lines)
    assert f"{demo.url}foo 302 redirect {demo.url}baz" in lines
    assert any(line.startswith(f"{demo.url}missing 404 text/html") for line in lines)
    assert "Redirect chains:" in lines
    assert any("[loop]" in line for line in lines)
    assert any("[max_redirect reached]" in line for line in lines)
    finished = [line for line in lines if line.startswith("Finished ")]
    assert len(finished) == 1 and "(max_tasks=4)" in finished[0] and "urls/sec/task" in finished[0]
    assert "Todo: 0" in lines
    assert f"Done: {len(crawler.ledger.done)}" in lines
    accounting = [line for line in lines if line.startswith("Accounting:")]
    assert accounting and accounting[0].endswith("(all accounted for)")


async def test_the_reports_totals_agree_with_each_other_and_say_what_they_count(
    demo: DemoServer,
) -> None:
    # The demo site, and a root nothing answers: done and failed URLs both.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    config = CrawlConfig(roots=(demo.url, dead), max_tasks=4, max_tries=1, obey_robots=False)
    crawler = Crawler(config)
    await crawler.crawl()
    out = io.StringIO()
    write_report(crawler, out)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Finished "))
    end = lines.index("Todo: 0")
    totals: dict[str, int] = {}
    for line in lines[start + 1 : end]:
        count, key, words = line.split(maxsplit=2)
        assert words, f"{key} does not say what it counts"
        totals[key] = int(count)
    done, failed = len(crawler.ledger.done), len(crawler.ledger.failed)
    assert dead in crawler.ledger.failed and totals["fail"] == failed
    # A 404 is an answer: it is done, and no total calls it an error beside "failed".
    assert "error" not in totals and totals["http_error"] == 2  # /missing, /broken
    kinds = sum(totals[k] for k in ("html", "other", "http_error", "redirect"))
    statuses = sum(n for key, n in totals.items() if key.startswith("status_"))
    assert kinds == statuses == done
    assert totals["status_200"] == totals["html"] + totals["other"]
