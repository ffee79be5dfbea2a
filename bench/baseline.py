"""The floor of this stack: a bare aiohttp + BeautifulSoup(lxml) queue-and-workers crawler.

It does the work crawlscope does for each page (fetch with redirects followed by hand,
the links of a/area honouring <base href>, fragments dropped, http(s) only, one host and
port, each URL once) and nothing else: no per-worker state, no records, no retries, no
pause, no accounting. crawlscope's throughput is measured against this loop.

    python -m bench.baseline http://127.0.0.1:8353/ --workers 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import asdict, dataclass
from urllib.parse import urldefrag, urljoin, urlsplit

import aiohttp
from bs4 import BeautifulSoup, SoupStrainer

_STRAINER = SoupStrainer(["a", "area", "base"])
_HTML = frozenset({"text/html", "application/xhtml+xml"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass
class BaselineResult:
    pages: int  # responses received, any status
    errors: int  # URLs that got no response
    seconds: float
    cpu_seconds: float


def extract_links(body: bytes, url: str, charset: str | None) -> list[str]:
    soup = BeautifulSoup(body, "lxml", parse_only=_STRAINER, from_encoding=charset)
    base = url
    tag = soup.find("base", href=True)
    if tag is not None:
        base = urljoin(url, str(tag["href"]).strip())
    return [urljoin(base, str(a["href"]).strip()) for a in soup.find_all(["a", "area"], href=True)]


async def crawl(root: str, workers: int, stamps: list[float] | None = None) -> BaselineResult:
    """Crawl from `root`; when given, `stamps` gets the time each response was done with."""
    netloc = urlsplit(root).netloc
    queue: asyncio.Queue[str] = asyncio.Queue()
    seen = {root}
    counts = {"pages": 0, "errors": 0}

    def add(link: str) -> None:
        link = urldefrag(link).url
        parts = urlsplit(link)
        if parts.scheme in ("http", "https") and parts.netloc == netloc and link not in seen:
            seen.add(link)
            queue.put_nowait(link)

    async def work(session: aiohttp.ClientSession) -> None:
        while True:
            url = await queue.get()
            try:
                async with session.get(url, allow_redirects=False) as response:
                    body = await response.read()
                counts["pages"] += 1
                if response.status in _REDIRECTS:
                    location = response.headers.get("Location")
                    if location:
                        add(urljoin(url, location))
                elif response.status == 200 and response.content_type in _HTML:
                    for link in extract_links(body, url, response.charset):
                        add(link)
            except (aiohttp.ClientError, TimeoutError):
                counts["errors"] += 1
            finally:
                if stamps is not None:
                    stamps.append(time.perf_counter())
                queue.task_done()

    t0, c0 = time.perf_counter(), time.process_time()
    queue.put_nowait(root)
    # limit=0: the number of workers is the concurrency limit, as in crawlscope.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        tasks = [asyncio.create_task(work(session)) for _ in range(workers)]
        await queue.join()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return BaselineResult(
        counts["pages"], counts["errors"], time.perf_counter() - t0, time.process_time() - c0
    )


async def fetch_only(
    root: str, workers: int, pages: int, stamps: list[float] | None = None
) -> BaselineResult:
    """The ceiling of this stack: aiohttp fetching the site's pages (root, then
    page/0 .. page/pages-1, known in advance) and reading each body, nothing else."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for url in (root, *(f"{root}page/{n}" for n in range(pages))):
        queue.put_nowait(url)
    counts = {"pages": 0, "errors": 0}

    async def work(session: aiohttp.ClientSession) -> None:
        while True:
            url = await queue.get()
            try:
                async with session.get(url, allow_redirects=False) as response:
                    await response.read()
                counts["pages"] += 1
            except (aiohttp.ClientError, TimeoutError):
                counts["errors"] += 1
            finally:
                if stamps is not None:
                    stamps.append(time.perf_counter())
                queue.task_done()

    t0, c0 = time.perf_counter(), time.process_time()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        tasks = [asyncio.create_task(work(session)) for _ in range(workers)]
        await queue.join()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return BaselineResult(
        counts["pages"], counts["errors"], time.perf_counter() - t0, time.process_time() - c0
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root")
    p.add_argument("--workers", type=int, default=100)
    args = p.parse_args()
    result = asyncio.run(crawl(args.root, args.workers))
    print(json.dumps(asdict(result)))


if __name__ == "__main__":
    main()
