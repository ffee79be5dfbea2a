"""The one gate for plain (JSON) data from another process: a monitor's frames, a Redis
entry, a recording's config. Each check is made once per type from its annotations, and
names where a value was wrong ("workers[3].since is not a number"); every string is
escaped with `printable`, as crawled text is, so no widget can draw a peer's escape
sequence.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable
from typing import Any

from ..observe.text import printable


class BadMessage(ValueError):
    """Plain data that is not what it should be; the text is for the user."""


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
class FieldsOf:
    """A dataclass's init fields as a dict, checked, not yet built into one."""

    cls: type


def decode(hint: Any, value: object, where: str) -> Any:
    try:
        return _decoder(hint)(value)
    except _Wrong as wrong:
        raise BadMessage(f"{where}{''.join(reversed(wrong.path))} {wrong.what}") from None


_DECODERS: dict[Any, Decode] = {}


def _decoder(hint: Any) -> Decode:
    found = _DECODERS.get(hint)
    if found is None:
        found = _DECODERS[hint] = _make_decoder(hint)
    return found


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
    if isinstance(hint, FieldsOf):
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
    if origin is tuple and args and Ellipsis not in args:
        items = [_decoder(arg) for arg in args]
        size = f"is not a list of {len(items)}"

        def decode_fixed(value: object) -> tuple[Any, ...]:
            if not isinstance(value, list | tuple) or len(value) != len(items):
                raise _Wrong(size)
            out = []
            for i, (check, each) in enumerate(zip(items, value, strict=True)):
                try:
                    out.append(check(each))
                except _Wrong as wrong:
                    wrong.path.append(f"[{i}]")
                    raise
            return tuple(out)

        return decode_fixed
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
