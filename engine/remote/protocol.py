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

What comes from another process (a monitor, a Redis entry) is untrusted: the `*_from_plain`
functions (here, and the config's in engine/exchange/config_json.py) are the one gate it passes,
each a check of engine/exchange/plain.py: every field's type where it is read (BadMessage names
the field: "workers[3].since is not a number"), every string escaped with `printable`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..exchange.plain import BadMessage, decode
from ..lints.lint import Lint
from ..observe.snapshot import (
    MAX_WARNINGS,
    Accounting,
    HostView,
    Snapshot,
    depths_problem,
    host_rows_problem,
)
from ..observe.workers import WorkerView
from ..records import FetchRecord
from ..redirects import Chain, ChainEnd
from ..timing.loop_health import MAX_HOLDS
from ..timing.per_worker import Hold

VERSION = 1
PATH = "/crawl"  # where a monitor listens for viewers
TOKEN_PARAM = "token"
VIEWER_PARAM = "viewer"  # optional: whom a relaying viewer watches for (serve: a browser)

MAX_VIEW = 1000  # worker ids a viewer may say it shows


_SNAPSHOT_FIELDS = tuple(f.name for f in dataclasses.fields(Snapshot))
_ACCOUNTING_FIELDS = tuple(f.name for f in dataclasses.fields(Accounting))
_VIEW_FIELDS = tuple(f.name for f in dataclasses.fields(WorkerView))
_HOLD_FIELDS = tuple(f.name for f in dataclasses.fields(Hold))
_LINT_FIELDS = tuple(f.name for f in dataclasses.fields(Lint))
_HOST_FIELDS = tuple(f.name for f in dataclasses.fields(HostView))
_RECORD_ORDER = tuple(f.name for f in dataclasses.fields(FetchRecord))


def snapshot_to_plain(snap: Snapshot, rows: bool = True) -> dict[str, Any]:
    """What Snapshot.to_plain gives, built field by field (dataclasses.asdict copies
    deeply and costs a monitor several milliseconds a frame at 100 workers); without
    "workers" (and "worker_ids") when not `rows`, for a frame that leaves the rows as they
    were."""
    plain = {name: getattr(snap, name) for name in _SNAPSHOT_FIELDS}
    if rows:
        plain["workers"] = [{n: getattr(w, n) for n in _VIEW_FIELDS} for w in snap.workers]
    else:
        del plain["workers"], plain["worker_ids"]
    plain["hosts"] = [{n: getattr(h, n) for n in _HOST_FIELDS} for h in snap.hosts]
    a = snap.accounting
    plain["accounting"] = {name: getattr(a, name) for name in _ACCOUNTING_FIELDS}
    plain["holds"] = [{n: getattr(h, n) for n in _HOLD_FIELDS} for h in snap.holds]
    plain["warnings"] = [{n: getattr(w, n) for n in _LINT_FIELDS} for w in snap.warnings]
    return plain


def record_to_plain(record: FetchRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in _RECORD_ORDER}


def chain_to_plain(chain: Chain) -> list[Any]:
    return [list(chain.urls), chain.end.value, chain.status, chain.meets, chain.hidden]


def chain_from_plain(plain: object, where: str = "chain") -> Chain:
    if not isinstance(plain, list) or len(plain) != 5:
        raise BadMessage(f"{where} is not a list of five")
    urls, end, status, meets, hidden = plain
    return Chain(
        decode(tuple[str, ...], urls, f"{where}.urls"),
        decode(ChainEnd, end, f"{where}.end"),
        decode(int | None, status, f"{where}.status"),
        decode(bool, meets, f"{where}.meets"),
        decode(int, hidden, f"{where}.hidden"),
    )


def record_from_plain(plain: object, where: str = "record") -> FetchRecord:
    return decode(FetchRecord, plain, where)


def snapshot_from_plain(plain: object, where: str = "snapshot") -> Snapshot:
    """A snapshot; one without "workers" (a frame that leaves the rows as they were) gets
    none, for the caller to put the rows it has back."""
    if isinstance(plain, dict) and "workers" not in plain:
        plain = {**plain, "workers": []}
    snap: Snapshot = decode(Snapshot, plain, where)
    # A peer's lists are held to what this side's engine would send.
    if len(snap.warnings) > MAX_WARNINGS or len(snap.holds) > MAX_HOLDS:
        snap = dataclasses.replace(
            snap, warnings=snap.warnings[-MAX_WARNINGS:], holds=snap.holds[:MAX_HOLDS]
        )
    problem = host_rows_problem(snap.hosts)
    if problem is not None:
        raise BadMessage(f"{where}: {problem}")
    problem = depths_problem(snap.depths)
    if problem is not None:
        raise BadMessage(f"{where}.depths: {problem}")
    if snap.host_count < len(snap.hosts):
        raise BadMessage(f"{where}.host_count is below its rows")
    return snap


def text_from_plain(plain: object, where: str) -> str:
    return decode(str, plain, where)


def texts_from_plain(plain: object, where: str) -> tuple[str, ...]:
    return decode(tuple[str, ...], plain, where)


def count_from_plain(plain: object, where: str) -> int:
    return decode(int, plain, where)
