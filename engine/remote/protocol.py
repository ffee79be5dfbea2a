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
from collections.abc import Callable
from typing import Any

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

MAX_VIEW = 1000  # worker ids a viewer may say it shows


class BadMessage(ValueError):
    """A message that is not what the protocol says; the text is for the user."""


def config_to_plain(config: CrawlConfig) -> dict[str, Any]:
    plain = dataclasses.asdict(config)
    plain.pop("compiled_exclude", None)  # rebuilt from `exclude` on the other side
    return plain


def config_from_plain(plain: object, where: str = "config") -> CrawlConfig:
    """The config a monitor or a Redis entry sent; BadMessage if it is not one."""
    fields = _decode(_FieldsOf(CrawlConfig), plain, where)
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
        _decode(tuple[str, ...], urls, f"{where}.urls"),
        _decode(ChainEnd, end, f"{where}.end"),
        _decode(int | None, status, f"{where}.status"),
        _decode(bool, meets, f"{where}.meets"),
        _decode(int, hidden, f"{where}.hidden"),
    )


def record_from_plain(plain: object, where: str = "record") -> FetchRecord:
    return _decode(FetchRecord, plain, where)


def snapshot_from_plain(plain: object, where: str = "snapshot") -> Snapshot:
    """A snapshot; one without "workers" (a frame that leaves the rows as they were) gets
    none, for the caller to put the rows it has back."""
    if isinstance(plain, dict) and "workers" not in plain:
        plain = {**plain, "workers": []}
    return _decode(Snapshot, plain, where)


def text_from_plain(plain: object, where: str) -> str:
    return _decode(str, plain, where)


def texts_from_plain(plain: object, where: str) -> tuple[str, ...]:
    return _decode(tuple[str, ...], plain, where)


def count_from_plain(plain: object, where: str) -> int:
    return _decode(int, plain, where)


# ---- the checks, made once per type from its annotations ------------------------------
# A frame holds every worker's row 15 times a second: each type's check is built once
# (a closure per field) and names where a value was wrong only when one was.

Decode = Callable[[object], Any]


class _Wrong(Exception):
    """A value not of its field's type; `path` is filled in on the way out."""

    def __init__(self, what: str, step: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.path = [step] if step else []


@dataclasses.dataclass(frozen=True)
class _FieldsOf:
    """A dataclass's init fields as a dict, checked, not yet built into one."""

    cls: type


def _decode(hint: Any, value: object, where: str) -> Any:
    try:
        return _decoder(hint)(value)
    except _Wrong as wrong:
        raise BadMessage(f"{where}{''.join(reversed(wrong.path))} {wrong.what}") from None


_DECODERS: dict[Any, Decode] = {}


def _decoder(hint: Any) -> Decode:
    decode = _DECODERS.get(hint)
    if decode is None:
        decode = _DECODERS[hint] = _make_decoder(hint)
    return decode


def _text(value: object) -> str:
    if type(value) is not str:
        raise _Wrong("is not a string")
    return printable(value)  # the one escaping of a peer's text: no widget need do it


def _bool(value: object) -> bool:
    if type(value) is not bool:
        raise _Wrong("is not true or false")
    return value


# Bounds no real crawl comes near, inside which every figure a widget computes stays a
# number: sizes divided into floats, clocks subtracted and rounded (inf cannot be).
MOST_INT = 2**63
MOST_FLOAT = 1e15  # seconds: some thirty million years


def _int(value: object) -> int:
    if type(value) is not int:  # bool is a subclass of int, and not a count
        raise _Wrong("is not a whole number")
    if not -MOST_INT <= value <= MOST_INT:
        raise _Wrong("is out of range")
    return value


def _float(value: object) -> float:
    if type(value) is float:
        # JSON lets NaN and Infinity through; a clock drawn from one would not format.
        if not math.isfinite(value):
            raise _Wrong("is not a finite number")
    elif type(value) is int:
        value = float(value) if -MOST_INT <= value <= MOST_INT else math.inf
    else:
        raise _Wrong("is not a number")
    if not -MOST_FLOAT <= value <= MOST_FLOAT:
        raise _Wrong("is out of range")
    return value


_SIMPLE: dict[Any, Decode] = {str: _text, bool: _bool, int: _int, float: _float}


def _make_decoder(hint: Any) -> Decode:
    simple = _SIMPLE.get(hint)
    if simple is not None:
        return simple
    if isinstance(hint, _FieldsOf):
        return _fields_decoder(hint.cls)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        members = {m.value: m for m in hint}
        name = f"is not a known {hint.__name__}"

        def decode_enum(value: object) -> Any:
            try:
                return members[value]
            except (KeyError, TypeError):  # TypeError: a list or a dict is not hashable
                raise _Wrong(name) from None

        return decode_enum
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        fields, cls = _fields_decoder(hint), hint
        return lambda value: cls(**fields(value))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union) and type(None) in args:
        (inner_hint,) = [arg for arg in args if arg is not type(None)]
        inner = _decoder(inner_hint)
        return lambda value: None if value is None else inner(value)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _decoder(args[0])

        def decode_tuple(value: object) -> tuple[Any, ...]:
            if not isinstance(value, list | tuple):
                raise _Wrong("is not a list")
            out = []
            for i, each in enumerate(value):
                try:
                    out.append(item(each))
                except _Wrong as wrong:
                    wrong.path.append(f"[{i}]")
                    raise
            return tuple(out)

        return decode_tuple
    raise TypeError(f"no check for a field of type {hint!r}")  # a new field type: add one


def _fields_decoder(cls: type) -> Callable[[object], dict[str, Any]]:
    """The init fields of dataclass `cls`, each checked and escaped; a missing field with
    a default takes it, unknown fields (a newer sender's) are left out."""
    hints = typing.get_type_hints(cls)
    fields = [
        (f.name, _decoder(hints[f.name]),
         f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        for f in dataclasses.fields(cls)
        if f.init
    ]  # fmt: skip

    def decode_fields(value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _Wrong("is not an object")
        out: dict[str, Any] = {}
        for name, decode, required in fields:
            if name in value:
                try:
                    out[name] = decode(value[name])
                except _Wrong as wrong:
                    wrong.path.append(f".{name}")
                    raise
            elif required:
                raise _Wrong("is missing", f".{name}")
        return out

    return decode_fields
