"""What each line of a recording must be, checked before a replay trusts any of it.

A recording is a file a user hands us: it may be cut short, edited by hand, or not ours
at all. Every event is checked on load against the shapes the Recorder writes, so a bad
line is one clear message naming it, never a crash in the middle of a replay. Kinds this
version does not know (from a newer recorder) pass with a valid time and are ignored.
"""

from __future__ import annotations

import json
import math
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any, TypeGuard

from ..config import CrawlConfig
from ..exchange.config_json import config_from_plain
from ..exchange.plain import MOST_FLOAT, MOST_INT, BadMessage, decode
from ..lints.lint import Lint
from ..observe.snapshot import HostView, Phase, depths_problem, host_rows_problem
from ..observe.text import printable
from ..observe.workers import WorkerState
from ..records import FetchRecord
from ..redirects import ChainEnd
from ..timing.per_worker import Hold, Summary

COUNT_KEYS = ("unfinished", "seen", "done", "failed", "filtered", "queued", "held", "unfetched")


class BadEvent(ValueError):
    """What is wrong with one line, in words for the user (without the line number)."""


def parse_line(line: str) -> Any:
    """The JSON value of one line; BadEvent if it is not strict JSON."""
    try:
        return json.loads(line, parse_constant=_no_constant)
    except RecursionError:
        raise BadEvent("JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and _no_constant's refusal
        raise BadEvent(f"not a JSON line ({exc})") from None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def check_start(event: Any) -> CrawlConfig:
    """The crawl's config from a start line; BadEvent if it is not a good one."""
    if not isinstance(event, dict) or event.get("kind") != "start":
        raise BadEvent("not a start line")
    wall = event.get("wall", 0.0)
    if not _is_duration(wall):  # seconds since the epoch
        raise BadEvent(f"'wall' is not a time: {_show(wall)}")
    config = event.get("config")
    if not isinstance(config, dict):
        raise BadEvent("'config' is missing or not an object")
    try:
        return config_from_plain(config)
    except BadMessage as exc:  # "config.roots[0] is not a string", "config: max_tasks must…"
        raise BadEvent(f"bad {exc}") from None


def check_event(event: Any, previous_t: float) -> float:
    """Check one event after the start line; its time, which may not go back."""
    if not isinstance(event, dict):
        raise BadEvent("not a crawlscope event (not a JSON object)")
    kind = event.get("kind")
    if not isinstance(kind, str):
        raise BadEvent("not a crawlscope event (no 'kind')")
    if kind == "start":
        raise BadEvent("a second start line")
    t = event.get("t")
    if not _is_duration(t):
        raise BadEvent(f"'t' is not a time in seconds: {_show(t)}")
    if t < previous_t:
        raise BadEvent(f"'t' goes back in time ({t} after {previous_t})")
    # The counts of any kind, one a newer recorder writes included: the replay applies them.
    _check_counts(event)
    checks = _CHECKS.get(kind)
    if checks is not None:
        checks(event)
    return float(t)


def _check_counts(event: dict[str, Any]) -> None:
    if "phase" in event and event["phase"] not in _PHASES:
        raise BadEvent(f"unknown phase {_show(event['phase'])}")
    for key in COUNT_KEYS:
        if key in event and not _is_count(event[key]):
            raise BadEvent(f"'{key}' is not a count: {_show(event[key])}")


def _check_state(event: dict[str, Any]) -> None:
    if not _is_count(event.get("worker")):
        raise BadEvent(f"a state event without a worker number: {_show(event.get('worker'))}")
    if event.get("state") not in _STATES:
        raise BadEvent(f"unknown worker state {_show(event.get('state'))}")
    _check_optional(event, "url", (str, type(None)))
    if "pages" in event and not _is_count(event["pages"]):
        raise BadEvent(f"'pages' is not a count: {_show(event['pages'])}")
    _check_optional(event, "paused", (bool,))
    _check_optional(event, "retiring", (bool,))
    if "timing" in event:
        timing = event["timing"]
        if not (
            isinstance(timing, list)
            and len(timing) == len(Summary._fields)
            and all(_is_duration(x) for x in timing)
        ):
            raise BadEvent(f"'timing' is not {len(Summary._fields)} durations: {_show(timing)}")


def _check_lint(event: dict[str, Any]) -> None:
    try:
        decode(Lint, event.get("lint"), "lint")
    except BadMessage as exc:
        raise BadEvent(f"a bad warning: {exc}") from None


# Holds a health event may carry: a recorder writes engine/loop_health.MAX_HOLDS.
MAX_HOLDS = 20


MAX_VERDICT = 400  # a verdict's line is some 100 characters, a host's name in it at most 80


def _check_health(event: dict[str, Any]) -> None:
    for key in ("lag_p50", "lag_p99"):
        if not _is_duration(event.get(key)):
            raise BadEvent(f"'{key}' is not a duration: {_show(event.get(key))}")
    verdict = event.get("verdict", "")
    if not isinstance(verdict, str) or len(verdict) > MAX_VERDICT:
        raise BadEvent(f"'verdict' is not a line of at most {MAX_VERDICT} characters")
    holds = event.get("holds")
    if not isinstance(holds, list) or len(holds) > MAX_HOLDS:
        raise BadEvent(f"'holds' is not a list of at most {MAX_HOLDS}")
    try:
        decode(tuple[Hold, ...], holds, "holds")
    except BadMessage as exc:
        raise BadEvent(f"a bad hold: {exc}") from None


def _check_fetch(event: dict[str, Any]) -> None:
    record = event.get("record")
    if not isinstance(record, dict):
        raise BadEvent("a fetch event without a record")
    missing = [name for name in _RECORD_REQUIRED if name not in record]
    if missing:
        raise BadEvent(f"a fetch record without {', '.join(missing)}")
    unknown = [printable(str(name), 40) for name in record if name not in _RECORD_HINTS]
    if unknown:
        raise BadEvent(f"a fetch record with unknown fields: {', '.join(unknown)}")
    for name, value in record.items():
        if not _fits(value, _RECORD_HINTS[name]):
            raise BadEvent(f"the fetch record's '{name}' is wrong: {_show(value)}")
    _check_optional(event, "budget_left", (bool,))
    if "target" in event and event["target"] not in _ENDS:
        raise BadEvent(f"unknown redirect target state {_show(event['target'])}")


def _check_optional(event: dict[str, Any], key: str, kinds: tuple[type, ...]) -> None:
    if key in event and type(event[key]) not in kinds:
        raise BadEvent(f"'{key}' is wrong: {_show(event[key])}")


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a field's type (int, float, str, bool, None, unions)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return any(_fits(value, arm) for arm in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return _is_number(value) and -MOST_FLOAT <= value <= MOST_FLOAT
    if hint is int:
        return type(value) is int and -MOST_INT <= value <= MOST_INT
    if hint in (bool, str):
        return type(value) is hint
    return True  # a type this check does not know: left to the replay


def _is_number(value: Any) -> TypeGuard[int | float]:
    # bool is an int to Python, not to a recording; and a huge exponent parses as inf.
    return type(value) in (int, float) and math.isfinite(value)


def _is_duration(value: Any) -> TypeGuard[int | float]:
    """Seconds, as the engine's clocks can measure them: not below 0, not past the
    plain data's bound (a figure drawn from it must stay a few characters)."""
    return _is_number(value) and 0 <= value <= MOST_FLOAT


def _is_count(value: Any) -> TypeGuard[int]:
    """A whole number from 0 to the plain data's bound, as a monitor's frames hold
    (engine/exchange/plain.py): 10**400 done would not divide into a rate."""
    return type(value) is int and 0 <= value <= MOST_INT


def _show(value: Any) -> str:
    """A value from the file, shown safely and briefly."""
    return printable(repr(value), 60)


_PHASES = frozenset(p.value for p in Phase)
_STATES = frozenset(s.value for s in WorkerState)
_ENDS = frozenset(e.value for e in ChainEnd)
_RECORD_HINTS: dict[str, Any] = typing.get_type_hints(FetchRecord)
_RECORD_REQUIRED = tuple(
    f.name for f in fields(FetchRecord) if f.default is MISSING and f.default_factory is MISSING
)


def host_rows(event: dict[str, Any]) -> tuple[HostView, ...]:
    """A "hosts" line's rows, checked (types, caps) and their text escaped."""
    try:
        rows: tuple[HostView, ...] = decode(tuple[HostView, ...], event.get("rows"), "rows")
    except BadMessage as exc:
        raise BadEvent(f"a hosts line with bad {exc}") from None
    problem = host_rows_problem(rows)
    if problem is not None:
        raise BadEvent(f"a hosts line with {problem}")
    count = event.get("count")
    if not _is_count(count) or count < len(rows):
        raise BadEvent(f"a hosts line's 'count' is wrong: {_show(count)}")
    depths_of(event)
    return rows


def depths_of(event: dict[str, Any]) -> tuple[int, ...]:
    """A "hosts" line's depth histogram (none in a line that has none)."""
    depths = event.get("depths", [])
    if not isinstance(depths, list) or not all(_is_count(n) for n in depths):
        raise BadEvent(f"a hosts line's 'depths' is not a list of counts: {_show(depths)}")
    problem = depths_problem(tuple(depths))
    if problem is not None:
        raise BadEvent(f"a hosts line with {problem}")
    return tuple(depths)


def _check_hosts(event: dict[str, Any]) -> None:
    host_rows(event)


MAX_URL_TEXT = 10_000  # a record's URL is cut well before (records.py)


def _check_left(event: dict[str, Any], what: str) -> None:
    """A URL's line that no record has: its url, depth and referrer."""
    url, referrer, depth = event.get("url"), event.get("referrer"), event.get("depth")
    if not isinstance(url, str) or len(url) > MAX_URL_TEXT:
        raise BadEvent(f"{what} line's 'url' is not a URL")
    if referrer is not None and (not isinstance(referrer, str) or len(referrer) > MAX_URL_TEXT):
        raise BadEvent(f"{what} line's 'referrer' is not a URL")
    if not _is_count(depth):
        raise BadEvent(f"{what} line's 'depth' is not a count: {_show(depth)}")


def _check_unfetched(event: dict[str, Any]) -> None:
    _check_left(event, "an unfetched")
    if event.get("why") not in ("max-depth", "max-pages"):
        raise BadEvent(f"an unfetched line's 'why' is unknown: {_show(event.get('why'))}")


def _check_filtered(event: dict[str, Any]) -> None:
    _check_left(event, "a filtered")
    reason = event.get("reason")
    if not isinstance(reason, str) or len(reason) > MAX_URL_TEXT:
        raise BadEvent("a filtered line's 'reason' is not a line of text")


_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "hosts": _check_hosts,
    "unfetched": _check_unfetched,
    "filtered": _check_filtered,
    "state": _check_state,
    "fetch": _check_fetch,
    "lint": _check_lint,
    "health": _check_health,
    "phase": lambda _event: None,
    "end": lambda _event: None,
}
