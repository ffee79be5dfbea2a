"""The hosts panel's controls as they arrive from another process (a viewer of a monitor,
a cluster view through Redis): checked here, once for both, before the crawl acts.

An origin longer than any real one, a delay of hours, a limit in the millions or a value
of the wrong type is refused with a reason, never acted on; so is a host the crawl never
met, where the crawl can tell (`knows_host`): a control on a typo would answer "ok", act on
nothing and add a row for a host nobody crawls. A cluster's processes take a control the
others met (`ahead`): each blocks or slows the host before it meets it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Protocol

from ..observe.text import printable

MAX_ORIGIN = 300  # characters: scheme, a 253-character name and a port
MAX_HOST_DELAY = 600.0  # seconds between two requests to one host, at most
MAX_HOST_LIMIT = 1000  # requests in flight to one host, at most

HOST_CONTROLS = ("block_host", "unblock_host", "set_host_delay", "set_host_limit")


class HostSteering(Protocol):
    def block_host(self, origin: str) -> bool: ...

    def unblock_host(self, origin: str) -> bool: ...

    def set_host_delay(self, origin: str, seconds: float) -> None: ...

    def set_host_limit(self, origin: str, limit: int) -> None: ...


def host_control(
    controls: HostSteering, name: str, args: Mapping[str, object], ahead: bool = False
) -> Callable[[], object]:
    """The call that carries out control `name`; ValueError, in words, if it is not one
    or (unless `ahead`) its host is one the crawl never met."""
    origin = args.get("host")
    if not isinstance(origin, str) or not 0 < len(origin) <= MAX_ORIGIN:
        raise ValueError(f"host must be an origin of at most {MAX_ORIGIN} characters")
    knows_host: Callable[[str], bool] | None = getattr(controls, "knows_host", None)
    if not ahead and knows_host is not None and not knows_host(origin):
        raise ValueError(f"no host {printable(origin)} in this crawl")
    if name == "block_host":
        return lambda: controls.block_host(origin)
    if name == "unblock_host":
        return lambda: controls.unblock_host(origin)
    if name == "set_host_delay":
        seconds = args.get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise ValueError("seconds must be a number")
        if not (math.isfinite(seconds) and 0 <= seconds <= MAX_HOST_DELAY):
            raise ValueError(f"seconds must be from 0 to {MAX_HOST_DELAY:g}")
        return lambda: controls.set_host_delay(origin, float(seconds))
    if name == "set_host_limit":
        limit = args.get("limit")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ValueError("limit must be a whole number")
        if not 0 <= limit <= MAX_HOST_LIMIT:
            raise ValueError(f"limit must be from 0 to {MAX_HOST_LIMIT}")
        return lambda: controls.set_host_limit(origin, limit)
    raise ValueError(f"unknown host control {name[:40]!r}")
