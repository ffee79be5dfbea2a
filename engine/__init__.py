"""The crawl engine: pure asyncio, aiohttp and BeautifulSoup; never imports a UI.

Reading order, for the crawl itself (the chapter's crawling.py, in today's asyncio):

1. `crawler`    the queue of (url, max_redirect) pairs, the workers, join()/task_done(),
                the fetch with its retries, and the live controls.
2. `ledger`     the books: which URLs were seen, what became of each, how a redirect or
                a page's links turn into new pairs for the queue.
3. `records`    one FetchRecord per fetch, and the JSON Lines writer.
4. `report`     the chapter's report, with the accounting line that proves nothing is lost.

What they lean on, at the top: `config` (every limit, with its default), `plan` (one
crawl described once and opened in one place), `frontier` (the queue, with leases),
`urls` and `credentials` (normalising, scope, passwords never shown), `links` (the parse),
`sitemaps` (more roots), `politeness` (robots.txt, per-host limits), `connections`
(kept-alive connections in step with their requests) and `redirects` (hops and chains).

Each subpackage is one idea a reader can skip:
- `observe`   the contract with whoever watches: the protocols, a snapshot (one frame of
              plain data), each worker's state, one worker in full, where a coroutine is
              suspended, and text made safe to show;
- `timing`    why it is slow: time per worker, the loop's health, the garbage collector,
              turns at the loop for parsing, and slow motion;
- `lints`     the warnings, each a sentence in the crawl's words;
- `hosts`     one row per host, and the hosts' controls as they arrive from a viewer;
- `exchange`  what crosses the process's edge: plain JSON checked once, the config as
              JSON, files a user names, and the feeds written out;
- `cluster` (one crawl over many processes), `remote` (monitor, attach), `lecture` (the
  chapter's stages 1 and 2), `trace` (record and replay), `sites` (the demo and hostile
  web sites).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ConfigError, CrawlConfig
    from .crawler import Crawler
    from .observe.snapshot import Accounting, Phase, Snapshot
    from .observe.workers import WorkerState
    from .records import FetchRecord
    from .report import write_report

# Each name is loaded on first use: importing one small module of the engine (a command
# line reading a default from `config`) must not load aiohttp and BeautifulSoup with it.
_HOMES = {
    "Accounting": "observe.snapshot",
    "ConfigError": "config",
    "CrawlConfig": "config",
    "Crawler": "crawler",
    "FetchRecord": "records",
    "Phase": "observe.snapshot",
    "Snapshot": "observe.snapshot",
    "WorkerState": "observe.workers",
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
