"""The crawl engine: pure asyncio, aiohttp and BeautifulSoup; never imports a UI.

Reading order, for the crawl itself (the chapter's crawling.py, in today's asyncio):

1. `crawler`    the queue of (url, max_redirect) pairs, the workers, join()/task_done(),
                the fetch with its retries, and the live controls.
2. `ledger`     the books: which URLs were seen, what became of each, how a redirect or
                a page's links turn into new pairs for the queue.
3. `records`    one FetchRecord per fetch, and the JSON Lines writer.
4. `report`     the chapter's report, with the accounting line that proves nothing is lost.

What they lean on: `config` (every limit, with its default), `urls` (normalising and
scope), `links` (BeautifulSoup link extraction), `politeness` (robots.txt, per-host
limits), `redirects` (hops and the chains they form), and, for whoever watches:
`workers` (each worker's state), `snapshot` (one frame of plain data) and `introspect`
(where a coroutine is suspended, read from the task itself).

Each subpackage is one idea a reader can skip: `lecture` (the chapter's stages 1 and 2),
`trace` (record and replay), `sites` (the demo and hostile web sites).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ConfigError, CrawlConfig
    from .crawler import Crawler
    from .records import FetchRecord
    from .report import write_report
    from .snapshot import Accounting, Phase, Snapshot
    from .workers import WorkerState

# Each name is loaded on first use: importing one small module of the engine (a command
# line reading a default from `config`) must not load aiohttp and BeautifulSoup with it.
_HOMES = {
    "Accounting": "snapshot",
    "ConfigError": "config",
    "CrawlConfig": "config",
    "Crawler": "crawler",
    "FetchRecord": "records",
    "Phase": "snapshot",
    "Snapshot": "snapshot",
    "WorkerState": "workers",
    "write_report": "report",
}

__all__ = [
    "Accounting",
    "ConfigError",
    "CrawlConfig",
    "Crawler",
    "FetchRecord",
    "Phase",
    "Snapshot",
    "WorkerState",
    "write_report",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)
