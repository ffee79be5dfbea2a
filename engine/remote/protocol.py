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
functions are the one gate it passes. Each checks every field's type where it is read
(BadMessage names the field: "workers[3].since is not a number") and escapes every string
with `printable`, as crawled text is, so no widget can draw a monitor's escape sequence.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from typing import Any, TypeVar

from ..config import CrawlConfig
from ..records import FetchRecord
from ..redirects import Chain, ChainEnd
from ..snapshot import Accounting, Snapshot
from ..text import printable
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


def config_from_plain(plain: object, where: str = "config") -> CrawlConfig:
    """The config a monitor or a Redis entry sent; BadMessage if it is not one."""
    fields = _fields_of(CrawlConfig, plain, where)
    try:
        return CrawlConfig(**fields)
    except ValueError as exc:  # ConfigError: a value the crawler itself would refuse
        raise BadMessage(f"{where}: {printable(str(exc), 120)}") from None


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


def chain_from_plain(plain: object, where: str = "chain") -> Chain:
    if not isinstance(plain, list) or len(plain) != 5:
        raise BadMessage(f"{where} is not a list of five")
    urls, end, status, meets, hidden = plain
    return Chain(
        _value(tuple[str, ...], urls, f"{where}.urls"),
        _value(ChainEnd, end, f"{where}.end"),
        _value(int | None, status, f"{where}.status"),
        _value(bool, meets, f"{where}.meets"),
        _value(int, hidden, f"{where}.hidden"),
    )


def record_from_plain(plain: object, where: str = "record") -> FetchRecord:
    return FetchRecord(**_fields_of(FetchRecord, plain, where))


def snapshot_from_plain(plain: object, where: str = "snapshot") -> Snapshot:
    """A snapshot; one without "workers" (a frame that leaves the rows as they were) gets
    none, for the caller to put the rows it has back."""
    if isinstance(plain, dict) and "workers" not in plain:
        plain = {**plain, "workers": []}
    return Snapshot(**_fields_of(Snapshot, plain, where))


def text_from_plain(plain: object, where: str) -> str:
    return _value(str, plain, where)


def texts_from_plain(plain: object, where: str) -> tuple[str, ...]:
    return _value(tuple[str, ...], plain, where)


def count_from_plain(plain: object, where: str) -> int:
    return _value(int, plain, where)


T = TypeVar("T")


def _fields_of(cls: type[T], plain: object, where: str) -> dict[str, Any]:
    """The init fields of dataclass `cls` from `plain`, each checked and escaped; a
    missing field with a default takes it, unknown fields (a newer sender's) are left."""
    if not isinstance(plain, dict):
        raise BadMessage(f"{where} is not an object")
    hints = _hints(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        if f.name not in plain:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise BadMessage(f"{where}.{f.name} is missing")
            continue
        out[f.name] = _value(hints[f.name], plain[f.name], f"{where}.{f.name}")
    return out


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _value(hint: Any, value: object, where: str) -> Any:
    """`value` as a field of type `hint`: checked, strings escaped, lists made tuples,
    enums and nested dataclasses built."""
    if hint is str:
        if not isinstance(value, str):
            raise BadMessage(f"{where} is not a string")
        return printable(value)
    if hint is bool:
        if not isinstance(value, bool):
            raise BadMessage(f"{where} is not true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadMessage(f"{where} is not a whole number")
        return value
    if hint is float:
        # JSON lets NaN and Infinity through; a clock drawn from one would not format.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadMessage(f"{where} is not a number")
        if not math.isfinite(value):
            raise BadMessage(f"{where} is not a finite number")
        return float(value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except (ValueError, TypeError):
            raise BadMessage(f"{where} is not a known {hint.__name__}") from None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint(**_fields_of(hint, value, where))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return None
        (inner,) = [arg for arg in args if arg is not type(None)]
        return _value(inner, value, where)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if not isinstance(value, list | tuple):
            raise BadMessage(f"{where} is not a list")
        return tuple(_value(args[0], item, f"{where}[{i}]") for i, item in enumerate(value))
    raise TypeError(f"no check for a field of type {hint!r}")  # a new field type: add one
