"""What travels between a monitor and its viewers: JSON text messages, one per frame.

Monitor to viewer:
    {"kind": "hello", "version", "config", "steer", "you"}     once, on connecting
    {"kind": "frame", "snapshot", "recent", "viewers"[, "chains", "chain_count"]}
        "recent" holds the fetches since the previous frame; the first frame a viewer
        gets holds the whole window instead ("recent_reset": true). Chains come only
        when they changed.
    {"kind": "ok", "control"} / {"kind": "error", "error"}   the answer to a control
Viewer to monitor:
    {"control": NAME, "args": {...}}   steering, honoured only on a connection whose URL
                                       carried the token
    {"view": [ID, ...]}                the workers whose rows it shows: their "suspended
                                       at" is read for it (a walk of each task, too dear
                                       to do for every worker 15 times a second)

Everything is built from the engine's plain data (Snapshot.to_plain, FetchRecord), so a
panel drawn from a frame is the panel drawn from the crawl itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..config import CrawlConfig
from ..records import FetchRecord
from ..redirects import Chain, ChainEnd
from ..snapshot import Accounting, Snapshot
from ..workers import WorkerView

VERSION = 1
PATH = "/crawl"  # where a monitor listens for viewers
TOKEN_PARAM = "token"
VIEWER_PARAM = "viewer"  # optional: whom a relaying viewer watches for (serve: a browser)

# What the redirect panel asks for (tui/widgets/redirect_tree.py): a monitor sends that
# much, once, for every viewer.
CHAIN_LIMIT = 300
CHAIN_HOPS = 20


MAX_VIEW = 1000  # worker ids a viewer may say it shows


class BadMessage(ValueError):
    """A message that is not what the protocol says; the text is for the user."""


def config_to_plain(config: CrawlConfig) -> dict[str, Any]:
    plain = dataclasses.asdict(config)
    plain.pop("compiled_exclude", None)  # rebuilt from `exclude` on the other side
    return plain


def config_from_plain(plain: Mapping[str, Any]) -> CrawlConfig:
    raw = dict(plain)
    raw["roots"] = tuple(raw["roots"])
    raw["exclude"] = tuple(raw.get("exclude", ()))
    return CrawlConfig(**raw)


_SNAPSHOT_FIELDS = tuple(f.name for f in dataclasses.fields(Snapshot))
_ACCOUNTING_FIELDS = tuple(f.name for f in dataclasses.fields(Accounting))
_VIEW_FIELDS = tuple(f.name for f in dataclasses.fields(WorkerView))
_RECORD_ORDER = tuple(f.name for f in dataclasses.fields(FetchRecord))


def snapshot_to_plain(snap: Snapshot, rows: bool = True) -> dict[str, Any]:
    """What Snapshot.to_plain gives, built field by field (dataclasses.asdict copies
    deeply and costs a monitor several milliseconds a frame at 100 workers); without
    "workers" when not `rows`, for a frame that leaves the rows as they were."""
    plain = {name: getattr(snap, name) for name in _SNAPSHOT_FIELDS}
    if rows:
        plain["workers"] = [{n: getattr(w, n) for n in _VIEW_FIELDS} for w in snap.workers]
    else:
        del plain["workers"]
    a = snap.accounting
    plain["accounting"] = {name: getattr(a, name) for name in _ACCOUNTING_FIELDS}
    return plain


def record_to_plain(record: FetchRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in _RECORD_ORDER}


def chain_to_plain(chain: Chain) -> list[Any]:
    return [list(chain.urls), chain.end.value, chain.status, chain.meets, chain.hidden]


def chain_from_plain(plain: Sequence[Any]) -> Chain:
    urls, end, status, meets, hidden = plain
    if not all(isinstance(url, str) for url in urls):
        raise BadMessage("a chain's URLs must be strings")
    return Chain(
        tuple(urls),
        ChainEnd(end),
        None if status is None else int(status),
        bool(meets),
        int(hidden),
    )


_RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(FetchRecord))


def record_from_plain(plain: Mapping[str, Any]) -> FetchRecord:
    if not isinstance(plain, Mapping) or set(plain) != _RECORD_FIELDS:
        raise BadMessage("a fetch record with missing or unknown fields")
    return FetchRecord(**plain)
